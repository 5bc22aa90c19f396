package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestHardLinksJudgedLikeAnyFile: under the default policy, through a real
// mount, a file whose other names lie outside the roots is judged like any
// file and shown when it passes: `git clone /local/path` (whose objects are
// hard links to the source's) works with git log and git status, as do a
// worktree of it and a submodule cloned from a local path, and a
// pnpm-shaped node_modules (hard links into a store outside the roots)
// lists and reads. A hard link to a denied .env under the roots stays
// hidden; one to a private key outside the roots is refused by its content;
// one to a 0600 file outside the roots is refused to a second user by the
// file's own mode, as under its other name.
func TestHardLinksJudgedLikeAnyFile(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t)
	gitEnv := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_AUTHOR_NAME=d", "GIT_AUTHOR_EMAIL=d@x", "GIT_COMMITTER_NAME=d", "GIT_COMMITTER_EMAIL=d@x")
	git := func(dir string, args ...string) (string, error) {
		t.Helper()
		ctx := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "safe.directory=*"}, args...)...)
		ctx.Dir = dir
		ctx.Env = gitEnv
		out, err := ctx.CombinedOutput()
		return string(out), err
	}
	mustGit := func(dir string, args ...string) string {
		t.Helper()
		out, err := git(dir, args...)
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return out
	}
	// A repository outside the roots, cloned locally into them.
	src := filepath.Join(f.outside, "src")
	mustGit(f.outside, "init", "-q", "src")
	for _, msg := range []string{"first", "second", "third"} {
		writeFile(t, filepath.Join(src, "file.txt"), msg+"\n", 0o644)
		mustGit(src, "add", "file.txt")
		mustGit(src, "commit", "-q", "-m", msg)
	}
	mustGit(src, "gc", "-q")
	mustGit(f.root, "clone", "-q", src, "clone")
	// A worktree of the clone, and a submodule cloned from a local path
	// (its objects hard links too).
	mustGit(filepath.Join(f.root, "clone"), "worktree", "add", "-q", "../clone-wt")
	mustGit(filepath.Join(f.root, "clone"), "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
	mustGit(filepath.Join(f.root, "clone"), "commit", "-q", "-m", "sub")
	linked := 0
	filepath.Walk(filepath.Join(f.root, "clone", ".git", "objects"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Sys().(*syscall.Stat_t).Nlink > 1 {
			linked++
		}
		return nil
	})
	if linked == 0 {
		t.Fatal("the local clone made no hard links: the test shows nothing")
	}
	// pnpm: node_modules/.pnpm/<pkg>/node_modules/<pkg>/ holds hard links
	// into a content-addressed store outside the roots.
	store := filepath.Join(f.outside, "pnpm-store", "v3", "files", "ab")
	const index = "module.exports = (s, n) => s.padStart(n);\n"
	writeFile(t, filepath.Join(store, "cdef-index.js"), index, 0o644)
	writeFile(t, filepath.Join(store, "cdef-package.json"), `{"name":"left-pad","version":"1.3.0"}`+"\n", 0o644)
	pkg := filepath.Join(f.root, "web", "node_modules", ".pnpm", "left-pad@1.3.0", "node_modules", "left-pad")
	os.MkdirAll(pkg, 0o755)
	for name, from := range map[string]string{"index.js": "cdef-index.js", "package.json": "cdef-package.json"} {
		if err := os.Link(filepath.Join(store, from), filepath.Join(pkg, name)); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(".pnpm/left-pad@1.3.0/node_modules/left-pad", filepath.Join(f.root, "web", "node_modules", "left-pad"))
	// Links the view must not show.
	os.MkdirAll(filepath.Join(f.root, "links"), 0o755)
	writeFile(t, filepath.Join(f.outside, "id_key"), "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"+canary+"\n-----END OPENSSH PRIVATE KEY-----\n", 0o644)
	writeFile(t, filepath.Join(f.outside, "private.txt"), canary+"\n", 0o600)
	for link, target := range map[string]string{
		"links/env-notes.txt": filepath.Join(f.root, ".env"),
		"links/key.txt":       filepath.Join(f.outside, "id_key"),
		"links/private.txt":   filepath.Join(f.outside, "private.txt"),
	} {
		if err := os.Link(target, filepath.Join(f.root, link)); err != nil {
			t.Fatal(err)
		}
	}
	startMount(t, f.mp, "--allow-other", "--policy", f.policy)

	clone := filepath.Join(f.mp, "clone")
	if out, err := git(clone, "log", "--oneline"); err != nil || !strings.Contains(out, "third") || !strings.Contains(out, "first") {
		t.Errorf("git log through the mount on a local clone: %v\n%s", err, out)
	}
	if out, err := git(clone, "status", "--porcelain"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("git status through the mount on a local clone: %v\n%s", err, out)
	}
	if out, err := git(clone, "show", "HEAD~3:file.txt"); err != nil || out != "first\n" {
		t.Errorf("git show through the mount: %v\n%s", err, out)
	}
	if out, err := git(filepath.Join(f.mp, "clone-wt"), "status", "--porcelain"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("git status through the mount in a worktree: %v\n%s", err, out)
	}
	if out, err := git(filepath.Join(f.mp, "clone", "sub"), "log", "--oneline"); err != nil || !strings.Contains(out, "third") {
		t.Errorf("git log through the mount in a submodule: %v\n%s", err, out)
	}
	if got, err := run(t, 30*time.Second, "cat", filepath.Join(f.mp, "web", "node_modules", "left-pad", "index.js")); err != nil || got != index {
		t.Errorf("a pnpm package's file through the mount: %q %v", got, err)
	}
	if ls := strings.Fields(mustRun(t, "ls", filepath.Join(f.mp, "web", "node_modules", ".pnpm", "left-pad@1.3.0", "node_modules", "left-pad"))); strings.Join(ls, " ") != "index.js package.json" {
		t.Errorf("ls of a pnpm package: %q", ls)
	}
	// Root reads the 0600 file under its other name too: its own rights.
	if got, err := run(t, 30*time.Second, "cat", filepath.Join(f.mp, "links", "private.txt")); err != nil || got != canary+"\n" {
		t.Errorf("root's read of a 0600 file of its own through a hard link: %q %v", got, err)
	}
	ls := strings.Fields(mustRun(t, "ls", "-a", filepath.Join(f.mp, "links")))
	for _, hidden := range []string{"env-notes.txt", "key.txt"} {
		for _, name := range ls {
			if name == hidden {
				t.Errorf("ls links shows %s: %q", hidden, ls)
			}
		}
		if out, _ := run(t, 10*time.Second, "cat", filepath.Join(f.mp, "links", hidden)); strings.Contains(out, canary) {
			t.Errorf("cat links/%s served the other name's bytes", hidden)
		}
	}
	// A second user may not read the 0600 file under this name either.
	cmd := testenv.As(exec.Command("cat", filepath.Join(f.mp, "links", "private.txt")), agentUID, agentGID)
	if out, err := cmd.CombinedOutput(); err == nil || strings.Contains(string(out), canary) {
		t.Errorf("a second user read a 0600 file through a hard link: %v %q", err, out)
	}
}
