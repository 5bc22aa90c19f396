package watch

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/mountinfo"
	"github.com/fsguard/fsguard/internal/testenv"

	"golang.org/x/sys/unix"
)

// collector gathers events and lets a test wait for one.
type collector struct{ ch chan Event }

func (c *collector) fn(evs []Event) {
	for _, e := range evs {
		c.ch <- e
	}
}

// await waits for events matching each of want, in any order (the
// kernel may merge an event into one still queued for the same entry,
// which puts it first), failing after a hang guard.
func (c *collector) await(t *testing.T, want ...Event) {
	t.Helper()
	deadline := time.After(testenv.HangGuard)
	for len(want) > 0 {
		select {
		case e := <-c.ch:
			if i := slices.Index(want, e); i >= 0 {
				want = slices.Delete(want, i, i+1)
			}
		case <-deadline:
			t.Fatalf("no event %+v", want)
		}
	}
}

// moved is the Moved event of an entry renamed from fromDir/from to
// dir/name.
func moved(dir, name, fromDir, from string) Event {
	return Event{Op: Moved, Dir: dir, Name: name, FromDir: fromDir, FromName: from}
}

func backends(t *testing.T) []string {
	out := []string{Inotify}
	w, err := Start([]string{t.TempDir()}, Fanotify, Options{}, func([]Event) {})
	if err == nil {
		w.Close()
		out = append(out, Fanotify)
	} else if os.Geteuid() == 0 && os.Getenv("FSGUARD_REQUIRE_FUSE") == "1" {
		t.Fatalf("fanotify unavailable as root in CI: %v", err)
	} else {
		t.Logf("fanotify unavailable here: %v", err)
	}
	return out
}

func TestEvents(t *testing.T) {
	t.Parallel()
	for _, backend := range backends(t) {
		t.Run(backend, func(t *testing.T) {
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			outside, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			testenv.Must(t, os.MkdirAll(filepath.Join(outside, "in", "sub"), 0o755))
			testenv.Must(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
			testenv.Must(t, os.WriteFile(filepath.Join(root, "a", "b", "f.txt"), []byte("1\n"), 0o644))
			c := &collector{ch: make(chan Event, 1024)}
			w, err := Start([]string{root}, backend, Options{}, c.fn)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if w.Backend() != backend {
				t.Fatalf("backend %q, want %q", w.Backend(), backend)
			}
			ab := filepath.Join(root, "a", "b")
			steps := []struct {
				name string
				do   func()
				want []Event
			}{
				{"modify", func() { appendTo(t, filepath.Join(ab, "f.txt")) }, []Event{{Op: Changed, Dir: ab, Name: "f.txt"}}},
				{"create", func() { testenv.Must(t, os.WriteFile(filepath.Join(ab, "new.txt"), nil, 0o644)) }, []Event{{Op: Added, Dir: ab, Name: "new.txt"}}},
				{"chmod", func() { testenv.Must(t, os.Chmod(filepath.Join(ab, "new.txt"), 0o600)) }, []Event{{Op: Changed, Dir: ab, Name: "new.txt"}}},
				// fanotify reports a rename as such (Moved), and as a
				// removal and an addition, as inotify does.
				{"rename", func() { testenv.Must(t, os.Rename(filepath.Join(ab, "new.txt"), filepath.Join(ab, "moved.txt"))) },
					[]Event{moved(ab, "moved.txt", ab, "new.txt"), {Op: Removed, Dir: ab, Name: "new.txt"}, {Op: Added, Dir: ab, Name: "moved.txt"}}},
				{"delete", func() { testenv.Must(t, os.Remove(filepath.Join(ab, "moved.txt"))) }, []Event{{Op: Removed, Dir: ab, Name: "moved.txt"}}},
				{"mkdir", func() { testenv.Must(t, os.Mkdir(filepath.Join(root, "d"), 0o755)) }, []Event{{Op: Added, Dir: root, Name: "d"}}},
				{"in a new dir", func() { testenv.Must(t, os.WriteFile(filepath.Join(root, "d", "x"), nil, 0o644)) }, []Event{{Op: Added, Dir: filepath.Join(root, "d"), Name: "x"}}},
				{"dir rename", func() { testenv.Must(t, os.Rename(filepath.Join(root, "a"), filepath.Join(root, "z"))) },
					[]Event{moved(root, "z", root, "a"), {Op: Removed, Dir: root, Name: "a"}, {Op: Added, Dir: root, Name: "z"}}},
				// After the move, events inside are named by the new path.
				{"in a moved dir", func() { appendTo(t, filepath.Join(root, "z", "b", "f.txt")) }, []Event{{Op: Changed, Dir: filepath.Join(root, "z", "b"), Name: "f.txt"}}},
				{"truncate", func() { testenv.Must(t, os.Truncate(filepath.Join(root, "z", "b", "f.txt"), 0)) }, []Event{{Op: Changed, Dir: filepath.Join(root, "z", "b"), Name: "f.txt"}}},
				{"rmdir", func() { testenv.Must(t, os.RemoveAll(filepath.Join(root, "d"))) }, []Event{{Op: Removed, Dir: root, Name: "d"}}},
				// A directory that comes from outside is watched beneath
				// too; a rename with one place outside is no Moved.
				{"dir moved in", func() { testenv.Must(t, os.Rename(filepath.Join(outside, "in"), filepath.Join(root, "in"))) }, []Event{{Op: Added, Dir: root, Name: "in"}}},
				{"in a dir moved in", func() { testenv.Must(t, os.WriteFile(filepath.Join(root, "in", "sub", "f"), nil, 0o644)) }, []Event{{Op: Added, Dir: filepath.Join(root, "in", "sub"), Name: "f"}}},
				{"dir moved out", func() { testenv.Must(t, os.Rename(filepath.Join(root, "in"), filepath.Join(outside, "gone"))) }, []Event{{Op: Removed, Dir: root, Name: "in"}}},
			}
			for _, s := range steps {
				s.do()
				want := slices.DeleteFunc(s.want, func(e Event) bool {
					return e.Op == Moved && backend == Inotify // see inotify.convert
				})
				c.await(t, want...)
			}
			// Changes outside the roots are not reported, in a directory
			// that was inside neither.
			testenv.Must(t, os.WriteFile(filepath.Join(outside, "o"), nil, 0o644))
			testenv.Must(t, os.WriteFile(filepath.Join(outside, "gone", "sub", "g"), nil, 0o644))
			testenv.Must(t, os.WriteFile(filepath.Join(root, "last"), nil, 0o644))
			for {
				e := <-c.ch
				if inside([]string{outside}, e.Dir) || e.Name == "o" || e.Name == "g" || e.Op == Moved && (e.Dir == root) != (e.FromDir == root) {
					t.Fatalf("event outside the roots: %+v", e)
				}
				if e.Name == "last" {
					break
				}
			}
		})
	}
}

// TestLossNamesAfresh: an attacker floods the kernel's queue while the
// watch is behind, then makes a directory and renames another; their
// events are dropped with the overflow. The loss is reported (Lost), and
// changes inside both directories are reported after it by their paths
// now: a watch that kept its names from before the loss would report
// nothing in the new directory, and the renamed one's by its old path.
func TestLossNamesAfresh(t *testing.T) {
	t.Parallel()
	for _, backend := range backends(t) {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			testenv.Must(t, os.MkdirAll(filepath.Join(root, "old", "sub"), 0o755))
			testenv.Must(t, os.Mkdir(filepath.Join(root, "flood"), 0o755))
			c := &collector{ch: make(chan Event, 1<<16)}
			first, release := make(chan struct{}), make(chan struct{})
			var once bool
			w, err := Start([]string{root}, backend, Options{}, func(evs []Event) {
				if !once { // the watch is behind until released
					once = true
					close(first)
					<-release
				}
				c.fn(evs)
			})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			testenv.Must(t, os.WriteFile(filepath.Join(root, "start"), nil, 0o644))
			<-first
			for i := range 20000 { // more than fs.inotify.max_queued_events, fanotify's 16384 too
				testenv.Must(t, os.WriteFile(filepath.Join(root, "flood", strconv.Itoa(i)), nil, 0o644))
			}
			testenv.Must(t, os.Mkdir(filepath.Join(root, "made"), 0o755))
			testenv.Must(t, os.Rename(filepath.Join(root, "old"), filepath.Join(root, "new")))
			close(release)
			c.await(t, Event{Op: Lost})
			testenv.Must(t, os.WriteFile(filepath.Join(root, "made", "x"), nil, 0o644))
			testenv.Must(t, os.WriteFile(filepath.Join(root, "new", "sub", "y"), nil, 0o644))
			c.await(t, Event{Op: Added, Dir: filepath.Join(root, "made"), Name: "x"}, Event{Op: Added, Dir: filepath.Join(root, "new", "sub"), Name: "y"})
		})
	}
}

func TestCloseStopsCallbacks(t *testing.T) {
	t.Parallel()
	for _, backend := range backends(t) {
		root := t.TempDir()
		calls := make(chan struct{}, 100)
		w, err := Start([]string{root}, backend, Options{}, func([]Event) { calls <- struct{}{} })
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatalf("%s: close: %v", backend, err)
		}
		testenv.Must(t, os.WriteFile(filepath.Join(root, "after"), nil, 0o644))
		// Close waited for the reader to end, so nothing can be delivered.
		select {
		case <-calls:
			t.Fatalf("%s: callback after Close", backend)
		default:
		}
	}
}

func TestUnknownBackend(t *testing.T) {
	t.Parallel()
	if _, err := Start([]string{t.TempDir()}, "kqueue", Options{}, func([]Event) {}); err == nil {
		t.Fatal("an unknown backend started")
	}
}

func appendTo(t *testing.T, p string) {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	testenv.Must(t, err)
	f.WriteString("more\n")
	f.Close()
}

// TestAutoPicksByFilesystem: "auto" takes fanotify only where every root is
// the top of a whole filesystem's mount; a directory on a shared
// filesystem gets inotify, whose cost does not grow with writes elsewhere.
func TestAutoPicksByFilesystem(t *testing.T) {
	t.Parallel()
	ents := []mountinfo.Entry{
		{MountPoint: "/", Root: "/"},
		{MountPoint: "/srv/data", Root: "/"},
		{MountPoint: "/srv/bound", Root: "/export/sub"},
		{MountPoint: "/srv/over", Root: "/"},
		{MountPoint: "/srv/over", Root: "/other"}, // mounted over: the last one is in use
	}
	for roots, want := range map[string]bool{
		"/srv/data":           true,
		"/srv/data /":         true,
		"/srv/data/project":   false,
		"/srv/bound":          false,
		"/srv/over":           false,
		"/srv/data /home/dev": false,
	} {
		if got := ownFilesystems(strings.Fields(roots), ents); got != want {
			t.Errorf("%s: %v, want %v", roots, got, want)
		}
	}
	// A temporary directory is a subtree of a shared filesystem.
	w, err := Start([]string{t.TempDir()}, Auto, Options{}, func([]Event) {})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Backend() != Inotify {
		t.Fatalf("auto chose %s for a directory on a shared filesystem", w.Backend())
	}
}

// TestUnwatchableDirectoryReportedAndRetried: a directory made while no
// inotify watch can be added (out of watches) is reported (Blind), tried
// again, and once watched reported (Sighted); changes in it are then seen.
func TestUnwatchableDirectoryReportedAndRetried(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var full atomic.Bool
	full.Store(true)
	c := &collector{ch: make(chan Event, 1024)}
	w, err := Start([]string{root}, Inotify, Options{failAdd: func(dir string) error {
		if dir != root && full.Load() {
			return unix.ENOSPC
		}
		return nil
	}}, c.fn)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dir := filepath.Join(root, "made-while-full")
	os.Mkdir(dir, 0o755)
	deadline := time.After(testenv.HangGuard)
	var blind Event
	for blind.Op != Blind {
		select {
		case blind = <-c.ch:
		case <-deadline:
			t.Fatal("no Blind event for a directory that could not be watched")
		}
	}
	if blind.Dir != dir || !strings.Contains(blind.Name, "out of watches") {
		t.Errorf("Blind event %+v", blind)
	}
	full.Store(false)
	c.await(t, Event{Op: Sighted})
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x"), 0o644)
	c.await(t, Event{Op: Added, Dir: dir, Name: "a.txt"})
}

// TestUnwatchableRootAtStartRetried: a root that cannot be watched when
// the watch starts (out of watches) does not fail the start: the watch
// starts blind (Watcher.Blind names the root), tries again, reports
// Sighted once it watches it, and sees changes from then on.
func TestUnwatchableRootAtStartRetried(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var full atomic.Bool
	full.Store(true)
	c := &collector{ch: make(chan Event, 1024)}
	w, err := Start([]string{root}, Inotify, Options{failAdd: func(dir string) error {
		if full.Load() {
			return unix.ENOSPC
		}
		return nil
	}}, c.fn)
	if err != nil {
		t.Fatalf("a root out of watches at start fails the start: %v", err)
	}
	defer w.Close()
	if b := w.Blind(); b == nil || b.Op != Blind || b.Dir != root || !strings.Contains(b.Name, "out of watches") {
		t.Fatalf("Blind() at start: %+v", b)
	}
	full.Store(false)
	c.await(t, Event{Op: Sighted})
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("x"), 0o644)
	c.await(t, Event{Op: Added, Dir: root, Name: "a.txt"})
}
