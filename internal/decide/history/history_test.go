package history

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/fsguard/fsguard/internal/testenv"
)

// TestReposStayInTheRoot: the walk for working trees finds them under the
// directories it is given, skips node_modules and .git, and never leaves
// the root: not through a symbolic link met on the way, nor through one
// that a directory it was handed has become (the warm walk listed it as a
// directory; it was swapped for a link before the check got to it), nor
// through a link its parent has become.
func TestReposStayInTheRoot(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	testenv.WriteTree(t, base, map[string]string{"root/.git/": "", "root/a/b/.git/": "", "root/node_modules/m/.git/": "", "root/c/.git/": "", "outside/.git/": "", "outside/d/.git/": ""})
	testenv.Symlinks(t, base, map[string]string{"root/out": outside, "root/swapped": outside, "root/a/rel": "../../outside"})
	r := &roots.Root{Path: root, Real: root}
	found := func(from ...string) []string {
		var starts []Repo
		for _, f := range from {
			starts = append(starts, Repo{r, f})
		}
		got, err := repos(context.Background(), starts, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var rels []string
		for _, g := range got {
			rels = append(rels, g.Rel)
		}
		slices.Sort(rels)
		return rels
	}
	if got, want := found("."), []string{".", "a/b", "c"}; !slices.Equal(got, want) {
		t.Errorf("from the root: %q, want %q", got, want)
	}
	if got, want := found("a", "c"), []string{"a/b", "c"}; !slices.Equal(got, want) {
		t.Errorf("from a and c: %q, want %q", got, want)
	}
	if got := found("swapped", "a/rel", "out/d"); len(got) != 0 {
		t.Errorf("from directories that became links out of the root: %q, want none", got)
	}
}

// leakyRepo makes a git repository at dir whose history holds a private
// key that its tree no longer does.
func leakyRepo(t *testing.T, dir string) {
	t.Helper()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q")
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"
	if err := os.WriteFile(filepath.Join(dir, "id"), []byte(key), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "id")
	git("commit", "-qm", "oops")
	git("rm", "-q", "id")
	git("commit", "-qm", "gone")
}

// TestScanStaysInTheRoot: a repository the walk found and that was
// swapped for a link to another, outside the root, before the check got
// to it, is not checked: its history is not the view's, and git would
// have run there with that repository's owner's rights.
func TestScanStaysInTheRoot(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	leakyRepo(t, filepath.Join(root, "inside"))
	leakyRepo(t, outside)
	if err := os.Symlink(outside, filepath.Join(root, "swapped")); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte("[[root]]\npath = \"" + root + "\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := roots.New(pol)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r := g.Roots()[0]
	reps, err := Scan(context.Background(), g, Options{Repos: func(context.Context) ([]Repo, []Repo, bool) {
		return []Repo{{r, "inside"}, {r, "swapped"}}, nil, true
	}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rep := range reps {
		got = append(got, rep.Repo)
	}
	if !slices.Equal(got, []string{"inside"}) {
		t.Errorf("repositories reported: %q, want only [inside] (swapped leads outside the root)", got)
	}
}

// TestCredentialsInHistoryAreReported: the view masks a credential in a
// file, but git objects are served as they are; a blob that holds one (in
// the current commit or an older one) is reported with its family, and
// only when the policy masks credentials.
func TestCredentialsInHistoryAreReported(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q")
	var tok string
	for _, s := range sniff.SampleCredentials(1) {
		if s.Family == "github-pat" {
			tok = s.Value
		}
	}
	testenv.WriteTree(t, root, map[string]string{"config.go": "package x\n\nconst token = \"" + tok + "\"\n", "main.go": "package x\n"})
	git("add", ".")
	git("commit", "-qm", "one")
	for _, masks := range []bool{true, false} {
		pol, err := policy.Parse([]byte(fmt.Sprintf("[[root]]\npath = %q\n[secrets]\nmask = %v\n", root, masks)))
		testenv.Must(t, err)
		g, err := roots.New(pol)
		testenv.Must(t, err)
		reps, err := Scan(context.Background(), g, Options{Credentials: CredentialsUnder(pol)})
		g.Close()
		testenv.Must(t, err)
		var got []Finding
		for _, r := range reps {
			got = append(got, r.Findings...)
		}
		if masks && (len(got) != 1 || got[0].Path != "config.go" || got[0].Why != "credential (github-pat)" || got[0].Commit == "") {
			t.Errorf("masking on: findings %+v, want config.go's github-pat", got)
		}
		if !masks && len(got) != 0 {
			t.Errorf("masking off: findings %+v, want none", got)
		}
	}
}

// gitIn runs git in dir for a test, with an identity and no user config.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

const testKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"

// TestIndexAndUnreachableAreReported: what git serves through the mount
// but no commit of a ref holds is reported: a staged .env never committed
// (git show :.env), a staged key, a blob left dangling by git add then git
// reset (git cat-file -p OID), and a commit no ref reaches any more (a
// deleted branch: git show OID), by its denied paths and its key.
func TestIndexAndUnreachableAreReported(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	gitIn(t, root, "init", "-q")
	testenv.WriteTree(t, root, map[string]string{"README.md": "# hi\n"})
	gitIn(t, root, "add", "README.md")
	gitIn(t, root, "commit", "-qm", "one")
	// A commit on a branch deleted since: no ref reaches it.
	gitIn(t, root, "checkout", "-qb", "gone")
	testenv.WriteTree(t, root, map[string]string{".env.production": "DB_PASSWORD=hunter2\n", "old/notes.txt": "old\n" + testKey})
	gitIn(t, root, "add", ".env.production", "old/notes.txt")
	gitIn(t, root, "commit", "-qm", "oops")
	lost := gitIn(t, root, "rev-parse", "HEAD")
	gitIn(t, root, "checkout", "-q", "main")
	gitIn(t, root, "branch", "-qD", "gone")
	os.RemoveAll(filepath.Join(root, "old"))
	os.Remove(filepath.Join(root, ".env.production"))
	// A dangling blob holding a key.
	testenv.WriteTree(t, root, map[string]string{"scratch.txt": "scratch\n" + testKey})
	gitIn(t, root, "add", "scratch.txt")
	dangling := gitIn(t, root, "rev-parse", ":scratch.txt")
	gitIn(t, root, "reset", "-q")
	os.Remove(filepath.Join(root, "scratch.txt"))
	// Staged, never committed.
	testenv.WriteTree(t, root, map[string]string{".env": "API=1\n", "deploy/key.txt": testKey})
	gitIn(t, root, "add", ".env", "deploy/key.txt")

	pol, err := policy.Parse([]byte(fmt.Sprintf("[[root]]\npath = %q\n", root)))
	testenv.Must(t, err)
	g, err := roots.New(pol)
	testenv.Must(t, err)
	defer g.Close()
	reps, err := Scan(context.Background(), g, Options{})
	testenv.Must(t, err)
	if len(reps) != 1 {
		t.Fatalf("reports: %+v, want one", reps)
	}
	var got []string
	for _, f := range reps[0].Findings {
		got = append(got, f.String())
	}
	want := []string{
		"staged .env (denied path)",
		"staged deploy/key.txt (private key)",
		fmt.Sprintf("unreachable blob %.12s holding a private key", dangling),
		"unreachable .env.production (denied path, object ",
		"unreachable old/notes.txt (private key, object ",
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("no finding %q among %q", w, got)
		}
	}
	if sum := reps[0].Summary(); !strings.Contains(sum, "staged .env (denied path)") || !strings.Contains(sum, "unreachable blob "+dangling[:12]) {
		t.Errorf("summary: %s", sum)
	}
	if reps[0].Incomplete {
		t.Error("the scan says it is not whole")
	}
	_ = lost
}

// TestScanRunsNothingTheRepositorySays: the repository's configuration is
// the agent's to write; the scan's git commands run none of the commands
// it names (fsmonitor, run by every command that reads the index; gpg on
// a signed commit with log.showSignature; hooks; external diff; a pager),
// and replace refs do not hide an object's bytes from it.
func TestScanRunsNothingTheRepositorySays(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := t.TempDir()
	root, pwned := filepath.Join(base, "root"), filepath.Join(base, "pwned")
	os.Mkdir(root, 0o755)
	os.Mkdir(pwned, 0o777)
	gitIn(t, root, "init", "-q")
	testenv.WriteTree(t, root, map[string]string{"a.txt": "a\n", "id.txt": testKey})
	gitIn(t, root, "add", "a.txt", "id.txt")
	gitIn(t, root, "commit", "-qm", "one")
	// A signed-looking commit: git log --show-signature runs gpg.program on it.
	raw := gitIn(t, root, "cat-file", "commit", "HEAD")
	hdr, msg, _ := strings.Cut(raw, "\n\n")
	signed := hdr + "\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n =abcd\n -----END PGP SIGNATURE-----\n\n" + msg + "\n"
	hash := exec.Command("git", "-C", root, "hash-object", "-t", "commit", "-w", "--stdin")
	hash.Stdin = strings.NewReader(signed)
	out, err := hash.Output()
	testenv.Must(t, err)
	gitIn(t, root, "update-ref", "refs/heads/signed", strings.TrimSpace(string(out)))
	// The key's blob replaced by an innocent one.
	innocent := exec.Command("git", "-C", root, "hash-object", "-w", "--stdin")
	innocent.Stdin = strings.NewReader("nothing here\n")
	io, err := innocent.Output()
	testenv.Must(t, err)
	gitIn(t, root, "replace", gitIn(t, root, "rev-parse", "HEAD:id.txt"), strings.TrimSpace(string(io)))
	run := func(name string) string {
		p := filepath.Join(pwned, name)
		return fmt.Sprintf("sh -c 'touch %s' #", p)
	}
	for k, v := range map[string]string{
		"core.fsmonitor":            run("fsmonitor"),
		"log.showSignature":         "true",
		"gpg.program":               filepath.Join(pwned, "gpg.sh"),
		"core.hooksPath":            pwned,
		"diff.external":             run("diff"),
		"core.pager":                run("pager"),
		"core.alternateRefsCommand": run("altrefs"),
	} {
		gitIn(t, root, "config", k, v)
	}
	os.WriteFile(filepath.Join(pwned, "gpg.sh"), []byte("#!/bin/sh\ntouch "+filepath.Join(pwned, "gpg")+"\n"), 0o755)
	for _, h := range []string{"post-index-change", "reference-transaction", "post-checkout"} {
		os.WriteFile(filepath.Join(pwned, h), []byte("#!/bin/sh\ntouch "+filepath.Join(pwned, "hook-"+h)+"\n"), 0o755)
	}
	pol, err := policy.Parse([]byte(fmt.Sprintf("[[root]]\npath = %q\n", root)))
	testenv.Must(t, err)
	g, err := roots.New(pol)
	testenv.Must(t, err)
	defer g.Close()
	reps, err := Scan(context.Background(), g, Options{})
	testenv.Must(t, err)
	ents, _ := os.ReadDir(pwned)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sh") && !strings.HasPrefix(e.Name(), "post-") && e.Name() != "reference-transaction" {
			t.Errorf("the scan ran what the repository's configuration names: %s", e.Name())
		}
	}
	var got []string
	for _, r := range reps {
		for _, f := range r.Findings {
			got = append(got, f.String())
		}
	}
	if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "id.txt (private key") }) {
		t.Errorf("a replace ref hid the key's blob from the scan: findings %q", got)
	}
}

// TestUnscannableRepoDoesNotSilenceOthers: the scan runs git as a
// repository's owner, and the agent owns its repositories: one it makes
// unreachable to git (inside a directory of its own with mode 0) must be
// reported as not scanned, and every other repository still scanned.
func TestUnscannableRepoDoesNotSilenceOthers(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, "the scan runs git as a second user")
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	testenv.Must(t, os.Chmod(root, 0o755))
	// "a/inner" comes first in the walk: its owner (uid 1001) cannot get
	// past "a", mode 0.
	inner := filepath.Join(root, "a", "inner")
	testenv.Must(t, os.MkdirAll(inner, 0o755))
	gitIn(t, inner, "init", "-q")
	testenv.WriteTree(t, inner, map[string]string{".env": "API=1\n"})
	gitIn(t, inner, "add", ".env")
	testenv.Must(t, filepath.WalkDir(filepath.Join(root, "a"), func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 1001, 1001)
	}))
	testenv.Must(t, os.Chmod(filepath.Join(root, "a"), 0))
	b := filepath.Join(root, "b")
	testenv.Must(t, os.MkdirAll(b, 0o755))
	gitIn(t, b, "init", "-q")
	testenv.WriteTree(t, b, map[string]string{".env": "API=1\n"})
	gitIn(t, b, "add", ".env")

	pol, err := policy.Parse([]byte(fmt.Sprintf("[[root]]\npath = %q\n", root)))
	testenv.Must(t, err)
	g, err := roots.New(pol)
	testenv.Must(t, err)
	defer g.Close()
	reps, err := Scan(context.Background(), g, Options{})
	if err != nil {
		t.Fatalf("the scan stopped: %v", err)
	}
	found := map[string]Report{}
	for _, r := range reps {
		found[r.Repo] = r
	}
	if r, ok := found["b"]; !ok || len(r.Findings) == 0 || r.Findings[0].String() != "staged .env (denied path)" {
		t.Errorf("b's staged .env not reported: %+v", reps)
	}
	if r, ok := found["a/inner"]; !ok || !r.Incomplete || r.Failed == "" || !strings.Contains(r.Summary(), "could not scan") {
		t.Errorf("a/inner not reported as not scanned: %+v", reps)
	}
}
