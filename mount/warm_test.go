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
// own walk), none whose .git is a file (a worktree's link) and none the
// view hides. Without a walk it says it saw nothing, and the check walks.
func TestWalkFindsTheRepos(t *testing.T) {
	needFUSE(t)
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	for _, d := range []string{".git", "a/b/.git", "a/b/c/.git", "node_modules/x/.git", "secret/r/.git", "w"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(root, "w", ".git"), []byte("gitdir: ../.git/worktrees/w\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "a", "b", "main.go"), []byte("package main\n"), 0o644))
	reposOf := func(warm bool) ([]string, bool) {
		mp := filepath.Join(t.TempDir(), "mnt")
		must(t, os.Mkdir(mp, 0o755))
		pol, err := policy.Parse([]byte("[[root]]\npath = \"" + root + "\"\n[deny]\npaths = [\"" + filepath.Join(root, "secret") + "\"]\n[mount]\nwarm = " + map[bool]string{true: "true", false: "false"}[warm] + "\n"))
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
			if r.Root.Real != root && r.Root.Path != root {
				t.Errorf("%s: in root %s", r.Rel, r.Root.Path)
			}
			rels = append(rels, r.Rel)
		}
		slices.Sort(rels)
		return rels, ok
	}
	if got, ok := reposOf(true); !ok || !slices.Equal(got, []string{".", "a/b", "a/b/c"}) {
		t.Errorf("after the walk: %q (whole %v), want [. a/b a/b/c]", got, ok)
	}
	if got, ok := reposOf(false); ok || len(got) != 0 {
		t.Errorf("without a walk: %q (whole %v), want nothing and not whole", got, ok)
	}
}
