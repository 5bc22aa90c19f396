package session

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/service/edit"
)

// gitIn runs real git in dir, with no user or system configuration.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
}

// gitShapes makes, with real git under root, a git directory of every
// shape whose name says nothing, and returns the git directories (relative
// to root) an agent must not write into.
func gitShapes(t *testing.T, root string) []string {
	t.Helper()
	mk := func(rel string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A work tree whose git directory is elsewhere, under another name.
	gitIn(t, root, "init", "-q", "--separate-git-dir="+filepath.Join(root, "sepgit"), "sepwork")
	os.WriteFile(filepath.Join(root, "sepwork", "main.go"), []byte("package main\n"), 0o644)
	gitIn(t, filepath.Join(root, "sepwork"), "add", "main.go")
	gitIn(t, filepath.Join(root, "sepwork"), "commit", "-q", "-m", "one")
	// A .git that is a symbolic link to the real git directory.
	gitIn(t, root, "init", "-q", "linked")
	if err := os.Rename(filepath.Join(root, "linked", ".git"), filepath.Join(root, "linkgit")); err != nil {
		t.Fatal(err)
	}
	os.Symlink("../linkgit", filepath.Join(root, "linked", ".git"))
	// Bare repositories, one named like one and one not.
	gitIn(t, root, "init", "-q", "--bare", "origin.git")
	gitIn(t, root, "init", "-q", "--bare", "plain")
	// A common directory without HEAD, as a commondir file may name one.
	gitIn(t, root, "init", "-q", "--bare", "headless")
	os.Remove(filepath.Join(root, "headless", "HEAD"))
	// Google repo's project store.
	mk(".repo/projects")
	gitIn(t, filepath.Join(root, ".repo", "projects"), "init", "-q", "--bare", "x.git")
	// Worktrees: their git directory is the common one's worktrees/X
	// (HEAD and commondir, no objects/ or refs/ of its own).
	gitIn(t, filepath.Join(root, "sepwork"), "worktree", "add", "-q", filepath.Join(root, "wt"))
	// A worktree's git directory moved out of the common one: HEAD and
	// commondir alone make it one, and git uses it.
	gitIn(t, filepath.Join(root, "sepwork"), "worktree", "add", "-q", filepath.Join(root, "wt2"))
	if err := os.Rename(filepath.Join(root, "sepgit", "worktrees", "wt2"), filepath.Join(root, "loosewt")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "loosewt", "commondir"), []byte(filepath.Join(root, "sepgit")+"\n"), 0o644)
	os.WriteFile(filepath.Join(root, "wt2", ".git"), []byte("gitdir: "+filepath.Join(root, "loosewt")+"\n"), 0o644)
	gitIn(t, filepath.Join(root, "wt2"), "status", "--short")
	// A submodule: its git directory is the superproject's modules/X.
	gitIn(t, filepath.Join(root, "sepwork"), "submodule", "add", "-q", filepath.Join(root, "sepwork"), "sub")
	return []string{"sepgit", "linkgit", "linked/.git", "origin.git", "plain", "headless", ".repo/projects/x.git", "sepgit/worktrees/wt", "loosewt", "sepgit/modules/sub"}
}

// TestGitDirsByNature: a git directory is write-denied whole by what it is
// — HEAD with objects/ and refs/, or a worktree's HEAD and commondir —
// whatever it is called and however it is reached, even with the policy's
// write deny list empty: config, a hook, a new file in it, and a relative
// path through a symbolic link are refused by write, edit and check alike,
// a repository made after the service started too. Ordinary files beside
// and in the work trees stay writable, and a directory that merely holds
// a file named HEAD is no git directory.
func TestGitDirsByNature(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, names := range []bool{true, false} {
		t.Run(map[bool]string{true: "deny_globs", false: "no write deny list"}[names], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if !names {
				e.svc.Guard.Policy().Write.DenyGlobs = nil
			}
			gitDirs := gitShapes(t, e.root)
			// Made after the service started: recognised at write time.
			gitIn(t, e.root, "init", "-q", "--bare", "late")
			gitDirs = append(gitDirs, "late")
			os.Mkdir(filepath.Join(e.root, "cwd"), 0o755)
			os.Symlink("plain", filepath.Join(e.root, "alias"))
			os.Symlink("../sepgit/config", filepath.Join(e.root, "cwd", "cfg"))

			refused := func(what string, err error) {
				t.Helper()
				var r *refusal.Error
				if refusal.CodeOf(err) != refusal.WriteDenied {
					t.Errorf("%s: %v, want FS_WRITE_DENIED", what, err)
				} else if !names && (!strings.Contains(err.Error(), "git directory") || !asRefusal(err, &r) || r.Reason != refusal.GitDir) {
					t.Errorf("%s: %v, want the reason %q naming the git directory", what, err, refusal.GitDir)
				}
			}
			const evil = "[core]\n\tfsmonitor = touch /tmp/fsguard-pwned\n"
			for _, d := range gitDirs {
				for _, name := range []string{"config", "hooks/pre-commit", "info/attributes", "brand-new-file"} {
					rel := filepath.Join(d, name)
					if _, err := os.Stat(filepath.Join(e.root, filepath.Dir(rel))); err != nil {
						continue // a worktree's git directory has no hooks/
					}
					_, err := e.svc.Write(rel, e.root, "s1", strings.NewReader(evil))
					refused("write "+rel, err)
					_, err = e.svc.Check(rel, e.root, "s1")
					refused("check "+rel, err)
				}
				if _, err := os.Stat(filepath.Join(e.root, d, "config")); err == nil {
					e.read(filepath.Join(d, "config"), 1, 0) // read: so only the git directory refuses
					_, err := e.svc.Edit(filepath.Join(d, "config"), e.root, "s1", edit.Edit{Old: "[core]", New: evil})
					refused("edit "+d+"/config", err)
				}
			}
			// Relative paths through symbolic links, from another directory.
			for _, name := range []string{"../alias/config", "../alias/hooks/post-checkout", "cfg", "../linked/.git/config"} {
				_, err := e.svc.Write(name, filepath.Join(e.root, "cwd"), "s1", strings.NewReader(evil))
				refused("write "+name+" from cwd/", err)
			}
			// Nothing of git's changed or appeared.
			for _, d := range gitDirs {
				if b, err := os.ReadFile(filepath.Join(e.root, d, "config")); err == nil && strings.Contains(string(b), "fsmonitor") {
					t.Errorf("%s/config was written: %q", d, b)
				}
				for _, name := range []string{"hooks/pre-commit", "brand-new-file", "info/attributes"} {
					if _, err := os.Lstat(filepath.Join(e.root, d, name)); err == nil {
						t.Errorf("%s/%s was created", d, name)
					}
				}
			}

			// A write that would make a directory a git directory: HEAD
			// beside commondir, refs beside objects/.
			os.MkdirAll(filepath.Join(e.root, "almost", "objects"), 0o755)
			os.MkdirAll(filepath.Join(e.root, "almostwt"), 0o755)
			os.WriteFile(filepath.Join(e.root, "almostwt", "commondir"), []byte("../sepgit\n"), 0o644)
			var err error
			for _, name := range []string{"almost/refs", "almostwt/HEAD"} {
				_, err := e.svc.Write(name, e.root, "s1", strings.NewReader("ref: refs/heads/main\n"))
				refused("write "+name, err)
			}
			// A commondir file is never written, even where HEAD is not
			// (yet): two writes at once, HEAD and commondir, would each
			// find the other missing.
			os.MkdirAll(filepath.Join(e.root, "fresh"), 0o755)
			_, err = e.svc.Write("fresh/commondir", e.root, "s1", strings.NewReader("../sepgit\n"))
			refused("write fresh/commondir", err)
			// A .git file points git at a git directory: never written.
			_, err = e.svc.Write("cwd/.git", e.root, "s1", strings.NewReader("gitdir: ../plain\n"))
			refused("write cwd/.git", err)

			// Ordinary files stay writable: beside the repositories, in
			// the work trees, and beside a lone HEAD.
			os.MkdirAll(filepath.Join(e.root, "notgit"), 0o755)
			os.WriteFile(filepath.Join(e.root, "notgit", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
			for _, rel := range []string{"beside.txt", "sepwork/new.go", "wt/new.go", "wt2/new.go", "linked/new.go", "sepwork/sub/new.go", "notgit/x.txt", ".repo/manifest.xml", "almost/x.txt"} {
				if _, err := e.svc.Write(rel, e.root, "s1", strings.NewReader("ok\n")); err != nil {
					t.Errorf("write %s: %v", rel, err)
				}
			}
			e.read("sepwork/main.go", 1, 0)
			if _, err := e.svc.Write("sepwork/main.go", e.root, "s1", strings.NewReader("package main // ok\n")); err != nil {
				t.Errorf("write sepwork/main.go: %v", err)
			}
			e.read("notgit/HEAD", 1, 0)
			if _, err := e.svc.Write("notgit/HEAD", e.root, "s1", strings.NewReader("ok\n")); err != nil {
				t.Errorf("write notgit/HEAD: %v", err)
			}
		})
	}
}

func asRefusal(err error, r **refusal.Error) bool { return errors.As(err, r) }
