package mount

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/testenv"
	"github.com/fsguard/fsguard/internal/view/warm"
)

// TestWalkFindsTheRepos: the warm walk hands on (Walked) the directories
// of the view that hold a .git directory, so the git history check does
// not walk the tree again: the root's own, nested ones (the daemon leaves
// out those the check does not look in: see daemon.lookedIn), none whose
// .git is a file (a worktree's link) and none the view hides; in a mount
// of several roots, each root's own too. Without a walk it says it saw
// nothing, and the check walks. A walk stopped by its byte budget hands on
// the directories it did not list: each tree is then either met or under
// one of them, never both.
func TestWalkFindsTheRepos(t *testing.T) {
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	for _, d := range []string{".git", "a/b/.git", "a/b/c/.git", "node_modules/x/.git", "a/b/.git/modules/m/.git", "secret/r/.git", "w"} {
		testenv.Must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	testenv.Must(t, os.WriteFile(filepath.Join(root, "w", ".git"), []byte("gitdir: ../.git/worktrees/w\n"), 0o644))
	testenv.Must(t, os.WriteFile(filepath.Join(root, "a", "b", "main.go"), []byte("package main\n"), 0o644))
	// A second root, for a mount of several: its own tree and a nested one.
	other := filepath.Join(base, "other")
	testenv.Must(t, os.MkdirAll(filepath.Join(other, ".git"), 0o755))
	testenv.Must(t, os.MkdirAll(filepath.Join(other, "x", ".git"), 0o755))
	testenv.Must(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("pushed by the first listing\n"), 0o644))
	reposOf := func(warmOn bool, budget string, more ...string) (found, unlisted []string, ok bool) {
		mp := filepath.Join(t.TempDir(), "mnt")
		testenv.Must(t, os.Mkdir(mp, 0o755))
		text := "[[root]]\npath = \"" + root + "\"\n"
		for _, r := range more {
			text += "[[root]]\npath = \"" + r + "\"\n"
		}
		text += "[deny]\npaths = [\"" + filepath.Join(root, "secret") + "\"]\n[mount]\nwarm = " + map[bool]string{true: "true", false: "false"}[warmOn] + "\n" + budget
		pol, err := parsePolicy([]byte(text))
		testenv.Must(t, err)
		s, err := Mount(Config{Policy: pol, MountPoint: mp})
		testenv.Must(t, err)
		defer s.Unmount()
		if warmOn && !s.v.watched() {
			t.Skip("no watch here: no warm walk")
		}
		s.Warming().Walk()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()
		f, u, ok := s.Warming().Walked(ctx)
		if ctx.Err() != nil {
			t.Fatal("Walked did not return")
		}
		names := func(rs []warm.Dir) []string {
			var rels []string
			for _, r := range rs {
				rels = append(rels, filepath.Base(r.Root.Path)+":"+r.Rel)
			}
			slices.Sort(rels)
			return rels
		}
		return names(f), names(u), ok
	}
	trees := []string{"root:.", "root:a/b", "root:a/b/.git/modules/m", "root:a/b/c", "root:node_modules/x"}
	if got, u, ok := reposOf(true, ""); !ok || !slices.Equal(got, trees) || len(u) != 0 {
		t.Errorf("after the walk: %q (ok %v, unlisted %q), want %q and none unlisted", got, ok, u, trees)
	}
	want := append([]string{"other:.", "other:x"}, trees...)
	if got, u, ok := reposOf(true, "", other); !ok || !slices.Equal(got, want) || len(u) != 0 {
		t.Errorf("two roots, after the walk: %q (ok %v, unlisted %q), want %q", got, ok, u, want)
	}
	if got, u, ok := reposOf(false, ""); ok || len(got) != 0 || len(u) != 0 {
		t.Errorf("without a walk: %q %q (ok %v), want nothing and not ok", got, u, ok)
	}
	// A budget of nothing: the walk lists nothing, and says so.
	if got, u, ok := reposOf(true, "warm_max_bytes = 0\n"); !ok || len(got) != 0 || !slices.Equal(u, []string{"root:."}) {
		t.Errorf("a walk of no budget: met %q, unlisted %q (ok %v), want none met, [root:.] unlisted", got, u, ok)
	}
	if got, u, ok := reposOf(true, "warm_max_bytes = 0\n", other); ok {
		t.Errorf("two roots, a walk of no budget: met %q, unlisted %q (ok %v), want not ok (the check walks every root)", got, u, ok)
	}
}

// TestBackingOfMountDirs: the directories of the mount the warm walk
// names (those it met holding a .git, those its budget left unlisted) are
// named by the view as a root and a path beneath it.
func TestBackingOfMountDirs(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Parallel()
	root := t.TempDir()
	mp := filepath.Join(t.TempDir(), "mnt")
	testenv.Must(t, os.Mkdir(mp, 0o755))
	pol, err := parsePolicy([]byte("[[root]]\npath = \"" + root + "\"\n"))
	testenv.Must(t, err)
	s, err := Mount(Config{Policy: pol, MountPoint: mp})
	testenv.Must(t, err)
	defer s.Unmount()
	var rels []string
	ok := true
	for _, d := range []string{mp, filepath.Join(mp, "a/b"), filepath.Join(mp, "node_modules"), filepath.Join(mp, "x/.git"), filepath.Join(mp, "x/node_modules/y"), filepath.Join(mp, "w")} {
		r, in := (target{s.v, s}).Backing(d)
		ok = ok && in
		if r.Root.Real != root {
			t.Errorf("%+v: not the root's", r)
		}
		rels = append(rels, r.Rel)
	}
	if want := []string{".", "a/b", "node_modules", "x/.git", "x/node_modules/y", "w"}; !ok || !slices.Equal(rels, want) {
		t.Errorf("unlisted %q (ok %v), want %q", rels, ok, want)
	}
}

// TestWalkMakesTheIndexViewWhenItMeetsGit: the warm walk makes a
// repository's index view as soon as it has listed the repository's .git
// (the kernel then holds the index), not once the whole tree is walked:
// a git status in the first seconds after mounting finds it made, and
// every tracked file decided. The tree has directories below the
// repository's top, which a walk lists after .git (it goes breadth
// first), so the view must come before the walk's end.
func TestWalkMakesTheIndexViewWhenItMeetsGit(t *testing.T) {
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	root := t.TempDir()
	for _, f := range []string{"a.go", "b/c.go", "b/d/e.go", "b/d/f/g.go"} {
		testenv.Must(t, os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755))
		testenv.Must(t, os.WriteFile(filepath.Join(root, f), []byte("package x\n"), 0o644))
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}} {
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	// A .git written a moment ago is a directory still changing, whose
	// listing hands the kernel no entries (see listing.Lookup): dated an
	// hour back, as a repository between two git commands is.
	old := time.Now().Add(-time.Hour)
	testenv.Must(t, os.Chtimes(filepath.Join(root, ".git"), old, old))
	var mu sync.Mutex
	var events []string
	done := make(chan struct{})
	var once sync.Once // a later walk (after reclaim) says done again
	mp := filepath.Join(t.TempDir(), "mnt")
	testenv.Must(t, os.Mkdir(mp, 0o755))
	pol, err := parsePolicy([]byte("[[root]]\npath = \"" + root + "\"\n[mount]\nwarm = true\n"))
	testenv.Must(t, err)
	s, err := Mount(Config{Policy: pol, MountPoint: mp, Event: func(name string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, name)
		if name == "warm_walk_done" {
			once.Do(func() { close(done) })
		}
	}})
	testenv.Must(t, err)
	t.Cleanup(func() { s.Unmount() })
	if !s.v.watched() {
		t.Skip("no watch here: no warm walk")
	}
	s.Warming().Walk()
	select {
	case <-done:
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("the warm walk did not end")
	}
	mu.Lock()
	defer mu.Unlock()
	if i := slices.Index(events, "index_warmed"); i < 0 || i > slices.Index(events, "warm_walk_done") {
		t.Fatalf("events %q: want the index view made (index_warmed) before the walk's end", events)
	}
}
