package mount

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fsguard/fsguard/policy"
)

// TestWalkFindsTheRepos: the warm walk hands the git history check the
// working trees of the view, so the check does not walk the tree again:
// the root's own, nested ones, none inside node_modules (as the check's
// own walk), none inside a .git directory, none whose .git is a file (a worktree's link) and none the
// view hides; in a mount of several roots, each root's own too. Without a walk it says it saw nothing, and the check walks.
func TestWalkFindsTheRepos(t *testing.T) {
	needFUSE(t)
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	for _, d := range []string{".git", "a/b/.git", "a/b/c/.git", "node_modules/x/.git", "a/b/.git/modules/m/.git", "secret/r/.git", "w"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(root, "w", ".git"), []byte("gitdir: ../.git/worktrees/w\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "a", "b", "main.go"), []byte("package main\n"), 0o644))
	// A second root, for a mount of several: its own tree and a nested one.
	other := filepath.Join(base, "other")
	must(t, os.MkdirAll(filepath.Join(other, ".git"), 0o755))
	must(t, os.MkdirAll(filepath.Join(other, "x", ".git"), 0o755))
	reposOf := func(warm bool, more ...string) ([]string, bool) {
		mp := filepath.Join(t.TempDir(), "mnt")
		must(t, os.Mkdir(mp, 0o755))
		text := "[[root]]\npath = \"" + root + "\"\n"
		for _, r := range more {
			text += "[[root]]\npath = \"" + r + "\"\n"
		}
		text += "[deny]\npaths = [\"" + filepath.Join(root, "secret") + "\"]\n[mount]\nwarm = " + map[bool]string{true: "true", false: "false"}[warm] + "\n"
		pol, err := policy.Parse([]byte(text))
		must(t, err)
		s, err := Mount(Config{Policy: pol, MountPoint: mp})
		must(t, err)
		defer s.Unmount()
		if warm && !s.v.watched() {
			t.Skip("no watch here: no warm walk")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()
		found, ok := s.Repos(ctx)
		if ctx.Err() != nil {
			t.Fatal("Repos did not return")
		}
		var rels []string
		for _, r := range found {
			rels = append(rels, filepath.Base(r.Root.Path)+":"+r.Rel)
		}
		slices.Sort(rels)
		return rels, ok
	}
	if got, ok := reposOf(true); !ok || !slices.Equal(got, []string{"root:.", "root:a/b", "root:a/b/c"}) {
		t.Errorf("after the walk: %q (whole %v), want [root:. root:a/b root:a/b/c]", got, ok)
	}
	want := []string{"other:.", "other:x", "root:.", "root:a/b", "root:a/b/c"}
	if got, ok := reposOf(true, other); !ok || !slices.Equal(got, want) {
		t.Errorf("two roots, after the walk: %q (whole %v), want %q", got, ok, want)
	}
	if got, ok := reposOf(false); ok || len(got) != 0 {
		t.Errorf("without a walk: %q (whole %v), want nothing and not whole", got, ok)
	}
}
