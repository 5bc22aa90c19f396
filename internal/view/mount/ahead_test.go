package mount

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestListedAheadOnlyWhileCurrent: listing a directory lists its
// subdirectories ahead, and the walker's own listing of one uses that
// work only while it stands for the directory as it is. The attacker
// changes a subdirectory after it was listed ahead and before the walker
// lists it: a file rewritten in place (to other text of the same size, or
// to a private key), a file created, removed or renamed, a subdirectory's
// mode changed (the listing's stat of it answers its LOOKUP), the
// directory swapped for a link to one outside the root. Each must be
// caught (the list's own checks, even before the watch reports the change,
// are warm's TestListedAheadStaleAfterEachChange), and the walker must
// then see the directory as it is: no key listed or served, no old
// version read, no name missing or left over.
func TestListedAheadOnlyWhileCurrent(t *testing.T) {
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	root := t.TempDir()
	const key = testKey
	text := func(dir, name, v string) string { return dir + "/" + name + ", version " + v + " of ordinary text\n" }
	cases := []string{"untouched", "inplace", "keyed", "created", "removed", "renamed", "swapped"}
	old := time.Now().Add(-time.Hour)
	for _, c := range cases {
		dir := filepath.Join(root, "p", c)
		quietDir(t, dir, func() { // listed ahead, entries handed over
			for _, name := range []string{"a.txt", "b.txt", "c.txt"} {
				p := filepath.Join(dir, name)
				testenv.Must(t, os.WriteFile(p, []byte(text(c, name, "1")), 0o644))
				testenv.Must(t, os.Chtimes(p, old, old))
			}
		})
	}
	// A subdirectory, whose chmod moves its own ctime and not its parent's.
	dirmode := filepath.Join(root, "p", "dirmode")
	quietDir(t, dirmode, func() { testenv.Must(t, os.Mkdir(filepath.Join(dirmode, "s"), 0o755)) })
	results := &aheadResults{}
	s, mp := mountRoot(t, root, Config{ListedAhead: results.add})
	lsBy(t, filepath.Join(mp, "p"))
	for _, c := range append([]string{"dirmode"}, cases...) {
		madeAhead(t, s, "p/"+c)
	}

	// Nothing changed: the walker's listing is the one made ahead.
	checkDir(t, mp, root, "p/untouched")
	if got := results.get(); got["used"] != 1 {
		t.Errorf("the untouched directory's listing made ahead: %v, want used once", got)
	}

	dir := func(c string) string { return filepath.Join(root, "p", c) }
	rewrite := func(p, content string) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		testenv.Must(t, err)
		_, err = f.WriteString(content)
		testenv.Must(t, err)
		testenv.Must(t, f.Close())
	}
	rewrite(filepath.Join(dir("inplace"), "b.txt"), text("inplace", "b.txt", "2")) // same size, same inode
	rewrite(filepath.Join(dir("keyed"), "b.txt"), key)
	testenv.Must(t, os.WriteFile(filepath.Join(dir("created"), "d.txt"), []byte(text("created", "d.txt", "1")), 0o644))
	testenv.Must(t, os.Remove(filepath.Join(dir("removed"), "b.txt")))
	testenv.Must(t, os.Rename(filepath.Join(dir("renamed"), "b.txt"), filepath.Join(dir("renamed"), "e.txt")))
	// The directory itself swapped for a link to one outside the root.
	outside := t.TempDir()
	testenv.Must(t, os.WriteFile(filepath.Join(outside, "outside.txt"), []byte("not in the root\n"), 0o644))
	testenv.Must(t, os.Rename(dir("swapped"), dir("swapped")+".old"))
	testenv.Must(t, os.Symlink(outside, dir("swapped")))
	testenv.Must(t, os.Chmod(filepath.Join(dirmode, "s"), 0o700))
	for _, c := range cases[1 : len(cases)-1] {
		checkDir(t, mp, root, "p/"+c)
	}
	if fi, err := os.Lstat(filepath.Join(mp, "p", "dirmode", "s")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("p/dirmode/s, made 0700 after it was listed ahead: %v (%v)", fi.Mode(), err)
	}
	ents, _ := os.ReadDir(filepath.Join(mp, "p", "swapped")) // refused or empty, never the outside
	for _, e := range ents {
		if e.Name() != "a.txt" && e.Name() != "b.txt" && e.Name() != "c.txt" {
			t.Errorf("p/swapped, a link to a directory outside the root now, lists %q", e.Name())
		}
	}
}

// checkDir lists rel through the mount and reads every file listed: the
// names must be the backing directory's but the key, and each file's
// content as it is now.
func checkDir(t *testing.T, mp, root, rel string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(mp, rel))
	testenv.Must(t, err)
	var got, want []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	keys := map[string]bool{}
	backing, err := os.ReadDir(filepath.Join(root, rel))
	testenv.Must(t, err)
	for _, e := range backing {
		b, err := os.ReadFile(filepath.Join(root, rel, e.Name()))
		testenv.Must(t, err)
		if strings.Contains(string(b), "PRIVATE KEY") {
			keys[e.Name()] = true
		} else {
			want = append(want, e.Name())
		}
	}
	// A key may be listed by its name before its content is decided
	// (lazy.go); it is never served, and once its read was refused the
	// listing no longer holds it.
	shown := slices.DeleteFunc(slices.Clone(got), func(n string) bool { return keys[n] })
	if !slices.Equal(shown, want) {
		t.Errorf("%s lists %q, want %q (and keys at most)", rel, got, want)
	}
	for _, name := range got {
		b, err := os.ReadFile(filepath.Join(mp, rel, name))
		if keys[name] {
			if err == nil {
				t.Errorf("%s/%s, a key, was served: %q", rel, name, b)
			}
			continue
		}
		now, _ := os.ReadFile(filepath.Join(root, rel, name))
		if err != nil || string(b) != string(now) {
			t.Errorf("%s/%s reads %q (%v), want %q", rel, name, b, err, now)
		}
	}
	if len(shown) < len(got) {
		again, err := os.ReadDir(filepath.Join(mp, rel))
		testenv.Must(t, err)
		var names []string
		for _, e := range again {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s lists %q after its keys were refused, want %q", rel, names, want)
		}
	}
}

// TestListedAheadAgainOnlyAfterReclaim: a directory the kernel lists
// again because its cached listings were reclaimed (names and inodes
// stay) has its subdirectories listed ahead again, their files read for
// pushes as a second listing reads them; one listed again because the
// watch dropped its listing (an entry came) does not: the kernel still
// holds its subdirectories' listings, and the work would be wasted.
func TestListedAheadAgainOnlyAfterReclaim(t *testing.T) {
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	root := t.TempDir()
	quietDir(t, filepath.Join(root, "p"), func() {
		for _, d := range []string{"x", "y"} {
			dir := filepath.Join(root, "p", d)
			quietDir(t, dir, func() {
				testenv.Must(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("ordinary text in "+d+"\n"), 0o644))
			})
		}
	})
	results := &aheadResults{}
	s, mp := mountRoot(t, root, Config{ListedAhead: results.add})
	ls := func(rel string) { t.Helper(); lsBy(t, filepath.Join(mp, rel)) }
	rootName := s.v.guard.Load().Roots()[0].Name
	queued := func() []string {
		var out []string
		for rel, known := range s.v.warm.ListsAhead(rootName) {
			out = append(out, rel)
			if !known {
				t.Errorf("%s: listed before, and queued as never listed", rel)
			}
		}
		slices.Sort(out)
		return out
	}
	waitMade := func(rel string) { t.Helper(); madeAhead(t, s, rel) }
	ls("p")
	for _, d := range []string{"p/x", "p/y"} {
		waitMade(d)
		ls(d)
	}
	p := s.root.EmbeddedInode().GetChild("p")
	// Reclaim, as an idle machine's: the kernel's cached listings go.
	for _, in := range []*fs.Inode{p, p.GetChild("x"), p.GetChild("y")} {
		if errno := in.NotifyContent(0, 0); errno != 0 {
			t.Fatalf("dropping a cached listing: %v", errno)
		}
	}
	ls("p")
	if got := queued(); !slices.Equal(got, []string{"p/x", "p/y"}) {
		t.Fatalf("after reclaim, queued %q, want p/x and p/y", got)
	}
	waitMade("p/x")
	ls("p/x")
	if got := results.get(); got["used"] != 3 || got["unused"] != 0 {
		t.Errorf("listings made ahead: %v, want used 3 times (twice at first, once after reclaim)", got)
	}

	// The watch drops p's listing: listed again, nothing more is queued.
	testenv.Eventually(t, "the lists queued made", s.v.warm.Idle)
	before := s.v.warm.ListsAhead(rootName)
	testenv.Must(t, os.WriteFile(filepath.Join(root, "p", "new.txt"), []byte("new\n"), 0o644))
	testenv.Eventually(t, "new.txt listed", func() bool {
		out, _ := exec.Command("ls", filepath.Join(mp, "p")).Output()
		return strings.Contains(string(out), "new.txt")
	})
	for _, rel := range queued() {
		if _, ok := before[rel]; !ok {
			t.Errorf("after the watch dropped the listing, %s was queued", rel)
		}
	}
}

// aheadResults counts what became of the lists made ahead (see
// Config.ListedAhead).
type aheadResults struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *aheadResults) add(result string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[string]int{}
	}
	a.n[result]++
}

func (a *aheadResults) get() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.n)
}

// lsBy lists dir from another process: the daemon's own listings are the
// warm walk's, which queue nothing (the walk lists everything itself).
func lsBy(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("ls", dir).CombinedOutput(); err != nil {
		t.Fatalf("ls: %v: %s", err, out)
	}
}

// madeAhead waits for the list of rel queued to be made ahead.
func madeAhead(t *testing.T, s *Server, rel string) {
	t.Helper()
	if _, ok := s.v.warm.ListsAhead(s.v.guard.Load().Roots()[0].Name)[rel]; !ok {
		t.Fatalf("%s was not queued to be listed ahead", rel)
	}
	testenv.Eventually(t, rel+" listed ahead", s.v.warm.Idle)
}

// TestListedAheadNotTooBig: a subdirectory of more entries than a list
// made ahead holds is not listed ahead (see warm's TestListedAheadNotTooBig);
// the walker lists it itself, whole.
func TestListedAheadNotTooBig(t *testing.T) {
	const bigDir = 4096 // warm's maxAheadEntries
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	root := t.TempDir()
	big := filepath.Join(root, "p", "big")
	quietDir(t, filepath.Join(root, "p"), func() {
		quietDir(t, big, func() {
			for i := range bigDir + 1 {
				testenv.Must(t, os.WriteFile(filepath.Join(big, fmt.Sprintf("f%05d", i)), nil, 0o644))
			}
		})
	})
	results := &aheadResults{}
	s, mp := mountRoot(t, root, Config{ListedAhead: results.add})
	lsBy(t, filepath.Join(mp, "p"))
	madeAhead(t, s, "p/big")
	ents, err := os.ReadDir(filepath.Join(mp, "p", "big"))
	testenv.Must(t, err)
	if len(ents) != bigDir+1 {
		t.Errorf("the walker's own listing shows %d entries, want %d", len(ents), bigDir+1)
	}
	if got := results.get(); got["unused"] != 1 || got["used"] != 0 {
		t.Errorf("listings made ahead: %v, want one unused", got)
	}
}
