package mount

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/testenv"
	"github.com/fsguard/fsguard/internal/view/warm"
)

// TestReclaimedPagesPushedAgain reclaims, as an idle machine does, the
// pages of a directory's files while the kernel keeps their names and the
// directory's listing. A READ of one of them must have the others pushed
// again, so that reading them next sends no READ; and the refill must
// never put back a version that is gone. The attacker's part: one file is
// rewritten (same size, other text) in the backing tree after the reclaim
// and before the READ that starts the refill, and another is made a
// private key; the mount must serve the new text, and no key.
func TestReclaimedPagesPushedAgain(t *testing.T) {
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	const files = 8
	text := func(i int, v string) string { return fmt.Sprintf("file %d, version %s: ordinary text\n", i, v) }
	quietDir(t, dir, func() {
		for i := range files {
			testenv.Must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(text(i, "one")), 0o644))
		}
	})
	cfg, reads := countReads()
	cfg.RefillAfter = func() time.Duration { return 0 } // a READ of pages given any time ago is one of lost pages
	s, mp := mountRoot(t, root, cfg)
	path := func(i int) string { return filepath.Join(mp, "d", fmt.Sprintf("f%d.txt", i)) }
	readAll := func() {
		t.Helper()
		for i := range files {
			if _, err := os.ReadFile(path(i)); err != nil {
				t.Fatal(err)
			}
		}
	}

	lsBy(t, filepath.Join(mp, "d"))
	readAll()
	d := s.root.EmbeddedInode().GetChild("d")
	held := func() bool {
		for i := range files {
			c := d.GetChild(fmt.Sprintf("f%d.txt", i))
			if c == nil {
				return false
			}
			if n, _ := nodeOf(c); n == nil || n.held.Load() == nil {
				return false
			}
		}
		return true
	}
	testenv.Eventually(t, "every file's bytes given whole", held)

	// Reclaim: the files' pages go, their names and the listing stay. (A
	// file the mount hides by then, the key below, has no pages to lose.)
	reclaim := func() {
		t.Helper()
		for i := range files {
			dropPages(t, path(i))
		}
	}
	reclaim()
	// The READ that finds f0's pages gone pushes the others again.
	before := reads.Load()
	if got, err := os.ReadFile(path(0)); err != nil || string(got) != text(0, "one") {
		t.Fatalf("f0 after reclaim: %q, %v", got, err)
	}
	if n := reads.Load() - before; n != 1 {
		t.Fatalf("reading f0 after reclaim sent %d READs, want 1", n)
	}
	testenv.Eventually(t, "pushed again", held)
	before = reads.Load()
	readAll()
	if n := reads.Load() - before; n != 0 {
		t.Errorf("reading the other files after the refill sent %d READs, want none", n)
	}

	// The attacker holds f7 open, then makes it a private key and f6 other
	// text of the same size, in place. The refill may have taken their
	// marks before the watch applied the changes: it then offers the old
	// versions. Neither may be pushed: not the old bytes, not the key.
	open7, err := os.Open(path(7))
	testenv.Must(t, err)
	defer open7.Close()
	marks := map[int]*warm.Held{}
	for _, i := range []int{6, 7} {
		n, _ := nodeOf(d.GetChild(fmt.Sprintf("f%d.txt", i)))
		marks[i] = n.held.Load()
	}
	testenv.Must(t, os.WriteFile(filepath.Join(dir, "f6.txt"), []byte(text(6, "two")), 0o644))
	testenv.Must(t, os.WriteFile(filepath.Join(dir, "f7.txt"), []byte(testKey), 0o644))
	testenv.Eventually(t, "the watch applied both", func() bool {
		got, err := os.ReadFile(path(6))
		_, err7 := os.ReadFile(path(7))
		return err == nil && string(got) == text(6, "two") && err7 != nil
	})
	reclaim()
	for i, h := range marks {
		n, _ := nodeOf(d.GetChild(fmt.Sprintf("f%d.txt", i)))
		n.held.Store(h) // as the refill saw them, before the watch
	}
	if _, err := os.ReadFile(path(0)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the engine idle", s.v.warm.Idle)
	if got, err := os.ReadFile(path(6)); err != nil || string(got) != text(6, "two") {
		t.Errorf("f6 after a refill offered its old version: %q, %v", got, err)
	}
	buf := make([]byte, 4096)
	if n, err := open7.ReadAt(buf, 0); strings.Contains(string(buf[:n]), "PRIVATE KEY") || string(buf[:n]) == text(7, "one") {
		t.Errorf("f7, now a key, read through a descriptor opened before: %q, %v; want a refusal", buf[:n], err)
	}
}

// TestReclaimedTreePushedAhead reclaims the pages of a whole tree, names
// and listings kept. Once a READ has found pages gone in a second
// directory, a walker is crossing the tree: the rest of it must be pushed
// again without waiting for a READ in each directory, subdirectories of
// directories the walker has not reached included. The attacker's part:
// in a directory the walker has not reached, one file is made a private
// key in place and another other text of the same size, after their
// marks were taken as a round would have taken them before the watch
// applied the changes; the mount must serve the new text and no key.
func TestReclaimedTreePushedAhead(t *testing.T) {
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	dirs := []string{"a", "a/b", "a/b/c", "z", "z/y"}
	const files = 4
	rt := newReclaimTree(t, dirs, files)
	root, reads, text, path, node, held, roundOver, setGap := rt.root, rt.reads, rt.text, rt.path, rt.node, rt.held, rt.roundOver, rt.setGap
	reclaim := func() {
		t.Helper()
		for _, d := range dirs {
			for i := range files {
				dropPages(t, path(d, i))
			}
		}
	}
	reclaim()
	// The walker reads in a, then in z: two READs, and the round.
	for _, d := range []string{"a", "z"} {
		before := reads.Load()
		if got, err := os.ReadFile(path(d, 0)); err != nil || string(got) != text(d, 0, "one") {
			t.Fatalf("%s/f0 after reclaim: %q, %v", d, got, err)
		}
		if n := reads.Load() - before; n != 1 {
			t.Fatalf("reading %s/f0 after reclaim sent %d READs, want 1", d, n)
		}
	}
	testenv.Eventually(t, "held, and the round over", func() bool { return held() && roundOver() })
	before := reads.Load()
	for _, d := range dirs {
		for i := range files {
			if got, err := os.ReadFile(path(d, i)); err != nil || string(got) != text(d, i, "one") {
				t.Fatalf("%s/f%d after the refill: %q, %v", d, i, got, err)
			}
		}
	}
	if n := reads.Load() - before; n != 0 {
		t.Errorf("reading the tree after the round sent %d READs, want none (a/b, a/b/c and z/y are pushed ahead)", n)
	}

	open3, err := os.Open(path("a/b/c", 3))
	testenv.Must(t, err)
	defer open3.Close()
	marks := map[int]*warm.Held{2: node("a/b/c", 2).held.Load(), 3: node("a/b/c", 3).held.Load()}
	testenv.Must(t, os.WriteFile(filepath.Join(root, "a/b/c/f2.txt"), []byte(text("a/b/c", 2, "two")), 0o644))
	testenv.Must(t, os.WriteFile(filepath.Join(root, "a/b/c/f3.txt"), []byte(testKey), 0o644))
	testenv.Eventually(t, "the watch applied both", func() bool {
		got, err := os.ReadFile(path("a/b/c", 2))
		_, err3 := os.ReadFile(path("a/b/c", 3))
		return err == nil && string(got) == text("a/b/c", 2, "two") && err3 != nil
	})
	reclaim()
	for i, h := range marks {
		node("a/b/c", i).held.Store(h) // as a round saw them, before the watch
	}
	for _, d := range []string{"a", "z"} {
		if _, err := os.ReadFile(path(d, 1)); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the round over", roundOver)
	if got, err := os.ReadFile(path("a/b/c", 2)); err != nil || string(got) != text("a/b/c", 2, "two") {
		t.Errorf("a/b/c/f2 after a round offered its old version: %q, %v", got, err)
	}
	buf := make([]byte, 4096)
	if n, err := open3.ReadAt(buf, 0); strings.Contains(string(buf[:n]), "PRIVATE KEY") || string(buf[:n]) == text("a/b/c", 3, "one") {
		t.Errorf("a/b/c/f3, now a key, read through a descriptor opened before: %q, %v; want a refusal", buf[:n], err)
	}

	// The agent drops the pages itself and reads in two directories again,
	// within the gap after the last round: no round (a cheap request must
	// not have the daemon read the whole tree again and again).
	setGap(time.Hour)
	testenv.Eventually(t, "a/b's first file held, and the round over", func() bool { n := node("a/b", 0); return n != nil && n.held.Load() != nil && roundOver() })
	reclaim()
	for _, d := range []string{"a", "z"} {
		if _, err := os.ReadFile(path(d, 2)); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the round over", roundOver)
	before = reads.Load()
	if _, err := os.ReadFile(path("a/b", 0)); err != nil {
		t.Fatal(err)
	}
	if reads.Load() == before {
		t.Errorf("a round started within the gap after the last: a/b/f0 was pushed again")
	}
}

// reclaimTree is a tree of text files in dirs, mounted, listed and read
// once, so that the kernel was given every file whole; a READ of pages
// given any time ago is one of lost pages, and rounds may follow each
// other at once.
type reclaimTree struct {
	s       *Server
	root    string // the backing tree
	mp      string
	dirs    []string
	files   int
	reads   *atomic.Int64
	results sync.Map // prefetch result → *atomic.Int64
	gap     atomic.Int64
}

func newReclaimTree(t *testing.T, dirs []string, files int) *reclaimTree {
	rt := &reclaimTree{root: t.TempDir(), dirs: dirs, files: files}
	for _, d := range dirs {
		quietDir(t, filepath.Join(rt.root, d), func() {
			for i := range files {
				testenv.Must(t, os.WriteFile(filepath.Join(rt.root, d, fmt.Sprintf("f%d.txt", i)), []byte(rt.text(d, i, "one")), 0o644))
			}
		})
	}
	cfg, reads := countReads()
	cfg.Prefetched = func(result string) {
		n, _ := rt.results.LoadOrStore(result, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}
	cfg.RefillAfter = func() time.Duration { return 0 }
	cfg.RoundGap = func() time.Duration { return time.Duration(rt.gap.Load()) }
	rt.reads = reads
	rt.s, rt.mp = mountRoot(t, rt.root, cfg)
	for _, d := range dirs {
		lsBy(t, filepath.Join(rt.mp, d))
		for i := range files {
			if _, err := os.ReadFile(rt.path(d, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	testenv.Eventually(t, "every file held", rt.held)
	return rt
}

func (rt *reclaimTree) text(d string, i int, v string) string {
	return fmt.Sprintf("%s file %d, version %s: ordinary text\n", d, i, v)
}

// path is the file's path through the mount.
func (rt *reclaimTree) path(d string, i int) string {
	return filepath.Join(rt.mp, d, fmt.Sprintf("f%d.txt", i))
}

func (rt *reclaimTree) node(d string, i int) *node {
	in := rt.s.root.EmbeddedInode()
	for _, name := range strings.Split(d, "/") {
		if in = in.GetChild(name); in == nil {
			return nil
		}
	}
	n, _ := nodeOf(in.GetChild(fmt.Sprintf("f%d.txt", i)))
	return n
}

// held reports whether the kernel was given every file whole.
func (rt *reclaimTree) held() bool {
	for _, d := range rt.dirs {
		for i := range rt.files {
			if n := rt.node(d, i); n == nil || n.held.Load() == nil {
				return false
			}
		}
	}
	return true
}

func (rt *reclaimTree) roundOver() bool { return rt.s.v.warm.Idle() }

func (rt *reclaimTree) setGap(gap time.Duration) { rt.gap.Store(int64(gap)) }

func (rt *reclaimTree) count(result string) int64 {
	if n, ok := rt.results.Load(result); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// TestRoundPushesOnlyWhatWentAway: an idle takes some of the mount's
// pages and leaves the rest. A round must push again the files whose
// pages went, so that the walker reads them with no READ, and leave the
// files the kernel still holds whole: pushing those reads each from the
// backing tree (from disk, when its pages went there) for nothing. In
// the directories the walker has not reached, f0 and f1 lose their pages
// (f1 only its last page: not whole), f2 and f3 keep them.
func TestRoundPushesOnlyWhatWentAway(t *testing.T) {
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	dirs := []string{"a", "a/b", "z", "z/y"}
	const files = 4
	rt := newReclaimTree(t, dirs, files)
	big := strings.Repeat("a longer line of ordinary text\n", 300) // three pages
	for _, d := range dirs {
		testenv.Must(t, os.WriteFile(filepath.Join(rt.root, d, "f1.txt"), []byte(big), 0o644))
	}
	testenv.Eventually(t, "f1's pages dropped by the watch, given whole when read again", func() bool {
		for _, d := range dirs {
			if got, err := os.ReadFile(rt.path(d, 1)); err != nil || string(got) != big {
				return false
			}
		}
		return rt.held() && rt.s.v.warm.Idle()
	})
	marks := map[string]*warm.Held{}
	for _, d := range []string{"a/b", "z/y"} {
		dropPages(t, rt.path(d, 0))
		f, err := os.Open(rt.path(d, 1))
		testenv.Must(t, err)
		testenv.Must(t, unix.Fadvise(int(f.Fd()), 2*4096, 0, unix.FADV_DONTNEED))
		f.Close()
		for _, i := range []int{2, 3} {
			marks[fmt.Sprintf("%s/f%d", d, i)] = rt.node(d, i).held.Load()
		}
	}
	for _, d := range []string{"a", "z"} { // the walker reads in a, then in z: the round
		dropPages(t, rt.path(d, 0))
		if _, err := os.ReadFile(rt.path(d, 0)); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the round the READ in z started, over", rt.roundOver)
	if n := rt.count("held"); n < 4 { // and a/f0, z/f0 if their READs were in first
		t.Errorf("the round found %d files held whole, want f2 and f3 of a/b and z/y among them", n)
	}
	for k, h := range marks {
		d, f, _ := strings.Cut(k, "/f")
		i := int(f[0] - '0')
		if got := rt.node(d, i).held.Load(); got != h {
			t.Errorf("%s, held whole by the kernel, was pushed again by the round", k)
		}
	}
	before := rt.reads.Load()
	for _, d := range []string{"a/b", "z/y"} {
		for i := range files {
			want := rt.text(d, i, "one")
			if i == 1 {
				want = big
			}
			if got, err := os.ReadFile(rt.path(d, i)); err != nil || string(got) != want {
				t.Fatalf("%s/f%d after the round: %q, %v", d, i, got, err)
			}
		}
	}
	if n := rt.reads.Load() - before; n != 0 {
		t.Errorf("reading a/b and z/y after the round sent %d READs, want none (f0 and f1 pushed again)", n)
	}
}

// TestListedAgainSkipsWhatWasJustGiven: a directory listed again reads
// its files for pushes (their pages are most likely gone with the
// listing), except the versions a refill gave the kernel a moment ago (a
// round may reach a directory before the walker lists it again): those
// are neither read nor pushed again. A version a refill gave long ago is,
// and so is one given a moment ago by anything else (a push after its
// first listing, a READ): the reclaim that took the listing may have
// come since.
func TestListedAgainSkipsWhatWasJustGiven(t *testing.T) {
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	const files = 6
	quietDir(t, dir, func() {
		for i := range files {
			testenv.Must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644))
		}
	})
	s, mp := mountRoot(t, root, Config{RefillAfter: func() time.Duration { return time.Hour }}) // every push below is lately
	lsBy(t, filepath.Join(mp, "d"))
	for i := range files {
		if _, err := os.ReadFile(filepath.Join(mp, "d", fmt.Sprintf("f%d.txt", i))); err != nil {
			t.Fatal(err)
		}
	}
	d := s.root.EmbeddedInode().GetChild("d")
	marks := func() []*warm.Held {
		var m []*warm.Held
		for i := range files {
			c := d.GetChild(fmt.Sprintf("f%d.txt", i))
			if c == nil {
				return nil
			}
			n, _ := nodeOf(c)
			m = append(m, n.held.Load())
		}
		return m
	}
	testenv.Eventually(t, "every file marked, no push in flight", func() bool {
		m := marks()
		return m != nil && !slices.Contains(m, nil) && s.v.warm.Idle() // no push in flight to mark again
	})
	// f0-f3 as a round leaves them; f4 as its first push or READ left it
	// (no refill); f5 given by a round long ago.
	mark := func(i int, refill bool, age time.Duration) {
		n, _ := nodeOf(d.GetChild(fmt.Sprintf("f%d.txt", i)))
		h := *n.held.Load()
		h.Refill, h.At = refill, h.At.Add(-age)
		n.held.Store(&h)
	}
	for i := range 4 {
		mark(i, true, 0)
	}
	mark(5, true, 2*time.Hour)
	before := marks()
	again := func(i int) bool { m := marks(); return m[i] != nil && m[i] != before[i] }

	// A new name: the watch drops the listing, and the next is made again
	// (with the directory dated back: a listing of one that changed a
	// moment ago keeps nothing).
	testenv.Must(t, os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new\n"), 0o644))
	long := time.Now().Add(-time.Hour)
	testenv.Must(t, os.Chtimes(dir, long, long))
	testenv.Eventually(t, "new.txt listed, the prefetch drained, f4 and f5 pushed again", func() bool {
		out, err := exec.Command("ls", filepath.Join(mp, "d")).CombinedOutput()
		return err == nil && strings.Contains(string(out), "new.txt") &&
			s.v.warm.Idle() && again(4) && again(5)
	})
	for i := range 4 {
		if again(i) {
			t.Errorf("f%d, given by a refill a moment before, was read and pushed again by the listing made again", i)
		}
	}
}

// testKey is a private key as ssh-keygen writes one (its body cut short:
// recognition reads the layout).
const testKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"

// dropPages drops the kernel's cached pages of the file at path, as
// reclaim does, if it can be opened (a file the mount hides by then has
// none to lose).
func dropPages(t *testing.T, path string) {
	t.Helper()
	if f, err := os.Open(path); err == nil {
		testenv.Must(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
		f.Close()
	}
}

// countReads is a Config that counts the READs the mount serves.
func countReads() (Config, *atomic.Int64) {
	reads := new(atomic.Int64)
	return Config{Latency: func(op string, _ time.Duration) {
		if op == "read" {
			reads.Add(1)
		}
	}}, reads
}
