package mount

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/testenv"
	"github.com/fsguard/fsguard/internal/view/warm"
	"github.com/fsguard/fsguard/internal/view/watch"

	"golang.org/x/sys/unix"
)

// TestRemovedDirectoryNeverHandedBack: the watch reports a directory
// removed, and the kernel is told (FUSE_NOTIFY_DELETE), which marks its
// inode dead while anything holds it (here an open descriptor; a listing
// under way or a shell in it, in life): every lookup and listing in it
// fails with ENOENT, and the kernel revives no inode. The directory at the
// name now has the old one's inode number (ext4 gives a new directory the
// number just freed, and a checkout removes and makes directories; here
// it simply stays), so a lookup that hands the kernel the old node again,
// by the name and the number, puts the name on the dead inode for the hour
// an entry is cached: "readdirent d10: no such file or directory" in a
// checkout test under stress. Two ways to it:
//   - raced: a lookup found the node by its name before the removal took
//     the name away, and go-fuse files it under the name after Lookup
//     returns (done here by hand);
//   - generations: the name was removed twice, and the kernel forgot the
//     second generation but not the first; a lookup that found no node
//     for the number asked go-fuse for generation 0, and got the first.
func TestRemovedDirectoryNeverHandedBack(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Parallel()
	for _, name := range []string{"raced", "generations"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			testenv.Must(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
			testenv.Must(t, os.WriteFile(filepath.Join(root, "d", "f.txt"), []byte("text\n"), 0o644))
			s, mp := mountRoot(t, root, Config{})
			top := s.root.EmbeddedInode()
			real := s.v.guard.Load().Roots()[0].Real
			removed := func() { s.apply([]watch.Event{{Op: watch.Removed, Dir: real, Name: "d"}}) }
			lsD := func(when string) {
				t.Helper()
				out, err := exec.Command("ls", filepath.Join(mp, "d")).CombinedOutput()
				if err != nil || string(out) != "f.txt\n" {
					t.Fatalf("ls d %s: %v: %q, want f.txt", when, err, out)
				}
			}
			lsD("first")
			first := top.GetChild("d")
			held, err := os.Open(filepath.Join(mp, "d")) // keeps the first inode
			testenv.Must(t, err)
			defer held.Close()
			removed()
			switch name {
			case "raced":
				top.AddChild("d", first, true)
			case "generations":
				lsD("after the first removal")
				second := top.GetChild("d")
				if second == nil || second == first {
					t.Fatal("the name did not get a node of its own")
				}
				removed() // nothing holds the second: the kernel forgets it
				testenv.Eventually(t, "the second node forgotten", func() bool { return s.v.held(second.StableAttr().Ino) == nil })
			}
			lsD("after the removal")
		})
	}
}

// TestLookupRacingAWrite: a file is written while the kernel's LOOKUP of
// it is being answered, after its attributes were taken and before the
// reply is made. The watch's invalidation of the name waits until the
// kernel has taken the reply in, and a read can come first: the reply
// must not let the kernel keep the attributes taken before the write,
// neither for the hour an entry is cached nor for the jiffies a
// nanosecond's timeout is rounded up to. Seen once in
// TestLoadWithSymlinkSwaps: a file created empty and then written read
// as empty for 5 s. Here the write lands in the window every time: the
// LOOKUP waits in it until the watch applies the change.
func TestLookupRacingAWrite(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Parallel()
	root := t.TempDir()
	testenv.Must(t, os.WriteFile(filepath.Join(root, "x.txt"), nil, 0o644)) // created empty, as os.WriteFile does first
	s, mp := mountRoot(t, root, Config{})
	const content = "written while it was looked up\n"
	written := writeInLookup(t, s, root, content, false)
	// Read at once, in this process, both times: a reply the kernel may
	// cache for as little as a nanosecond still stands for the jiffy it
	// ends in and the next one (up to 8 ms at HZ=250), time enough for
	// both reads; a zero timeout stands for nothing.
	first, err := os.ReadFile(filepath.Join(mp, "x.txt"))
	testenv.Must(t, err)
	again, err := os.ReadFile(filepath.Join(mp, "x.txt"))
	testenv.Must(t, err)
	if !written() {
		t.Fatal("the LOOKUP of x.txt never came")
	}
	if string(first) != content || string(again) != content {
		t.Errorf("x.txt reads %q and then %q after it was written during its LOOKUP, want %q", first, again, content)
	}
}

// TestReloadDuringALookup: a reload that denies a file comes while the
// file's LOOKUP is being answered under the old policy, before the reply
// is made (decided) or after (answered: its timeouts set, the reload
// unseen). The tree has no node for the file yet for the reload's walk
// to find; the kernel must still not keep the name for the hour: the
// next stat after the reload asks the new policy. The reload waits for
// the reply to be filed (replies.settle), and without that wait the
// "answered" case fails; the "decided" one also has its zero timeouts.
// (The first stat may be refused too: the attributes it wants come from
// a GETATTR under the new policy.)
func TestReloadDuringALookup(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Parallel()
	for _, at := range []string{"decided", "answered"} {
		t.Run(at, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			testenv.Must(t, os.WriteFile(filepath.Join(root, "x.txt"), []byte("soon denied\n"), 0o644))
			s, mp := mountRoot(t, root, Config{})
			denying, err := parsePolicy([]byte("[[root]]\npath = \"" + root + "\"\n[deny]\npaths = [\"" + filepath.Join(root, "x.txt") + "\"]\n"))
			testenv.Must(t, err)
			reloaded := reloadInLookup(t, s, denying, at == "answered")
			_, first := os.Stat(filepath.Join(mp, "x.txt"))
			if !reloaded() {
				t.Fatal("the LOOKUP of x.txt never came")
			}
			if _, again := os.Stat(filepath.Join(mp, "x.txt")); again == nil {
				t.Errorf("stat x.txt after a reload denied it during its LOOKUP: found (the first: %v), want refused", first)
			}
		})
	}
}

// reloadInLookup has the first LOOKUP of x.txt, at the place answered
// names (see view.looked), start a reload to pol and go on once the
// reload is done or waits for this very LOOKUP (replies.settle).
// reloaded waits for the reload to end (a hang guard) and reports whether
// the LOOKUP came.
func reloadInLookup(t *testing.T, s *Server, pol *policy.Policy, answered bool) (reloaded func() bool) {
	t.Helper()
	var once atomic.Bool
	done := make(chan error, 1)
	hook := func(rel string, at bool) {
		if rel != "x.txt" || at != answered || !once.CompareAndSwap(false, true) {
			return
		}
		waiting := make(chan struct{})
		var closeOnce sync.Once
		settling := func() { closeOnce.Do(func() { close(waiting) }) }
		s.v.replies.settling.Store(&settling)
		go func() { done <- s.Reload(pol) }()
		select {
		case err := <-done:
			done <- err
		case <-waiting:
		}
	}
	s.v.looked.Store(&hook)
	t.Cleanup(func() { s.v.looked.Store(nil); s.v.replies.settling.Store(nil) })
	return func() bool {
		s.v.looked.Store(nil)
		if !once.Load() {
			return false
		}
		select {
		case err := <-done:
			testenv.Must(t, err)
		case <-time.After(time.Minute): // a hang guard
			t.Fatal("the reload did not end in a minute")
		}
		return true
	}
}

// TestReloadWithoutAWatch: a reload that leaves the mount without a
// watch (watch = "off" here; in life, one that could not be set again)
// leaves nothing to tell the kernel of changes, so its replies must be
// cached briefly, as on a mount that never had a watch: a file changed
// after the reload shows within the fallback timeout, not the hour.
func TestReloadWithoutAWatch(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Parallel()
	root := t.TempDir()
	file := filepath.Join(root, "x.txt")
	testenv.Must(t, os.WriteFile(file, []byte("one\n"), 0o644))
	s, mp := mountRoot(t, root, Config{})
	unwatched, err := parsePolicy([]byte("[[root]]\npath = \"" + root + "\"\n[mount]\nwatch = \"off\"\n"))
	testenv.Must(t, err)
	testenv.Must(t, s.Reload(unwatched))
	if s.v.watched() {
		t.Fatal("a watch after a reload to watch = \"off\"")
	}
	if got, err := os.ReadFile(filepath.Join(mp, "x.txt")); err != nil || string(got) != "one\n" {
		t.Fatalf("x.txt after the reload: %q, %v", got, err)
	}
	testenv.Must(t, os.WriteFile(file, []byte("two, longer\n"), 0o644))
	// The hang guard is far beyond the fallback timeout and far short of
	// the hour a watched mount lets the kernel cache.
	testenv.Within(t, testenv.HangGuard, "x.txt changed, on a mount a reload left without a watch", func() error {
		got, err := os.ReadFile(filepath.Join(mp, "x.txt"))
		if err == nil && string(got) == "two, longer\n" {
			return nil
		}
		return fmt.Errorf("x.txt reads %q (%v)", got, err)
	})
}

// TestChangeAfterALookupAnswered: the watch applies a change of a file
// whose LOOKUP has already decided its reply (with the hour's timeouts),
// before the kernel has taken the reply in: the node is not in the tree
// yet, or the kernel does not know its number yet, so telling the kernel
// of the file finds nothing. The kernel must still not keep the
// attributes taken before the change: what it is told of the name waits
// for the reply (the kernel holds the directory's lock while it takes a
// LOOKUP's reply in), and then drops it.
func TestChangeAfterALookupAnswered(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Parallel()
	root := t.TempDir()
	testenv.Must(t, os.WriteFile(filepath.Join(root, "x.txt"), nil, 0o644))
	s, mp := mountRoot(t, root, Config{})
	const content = "written after its LOOKUP was answered\n"
	written := writeInLookup(t, s, root, content, true)
	_, err := os.Stat(filepath.Join(mp, "x.txt"))
	testenv.Must(t, err)
	if !written() {
		t.Fatal("the LOOKUP of x.txt never came")
	}
	// The change is told to the kernel at once or once the reply is in;
	// either way the file reads whole soon after, not after the hour.
	testenv.Within(t, testenv.HangGuard, "x.txt, written while its LOOKUP's reply was on its way, read whole", func() error {
		got, err := os.ReadFile(filepath.Join(mp, "x.txt"))
		if err == nil && string(got) == content {
			return nil
		}
		return fmt.Errorf("x.txt reads %q (%v), want %q", got, err, content)
	})
}

// writeInLookup has the first LOOKUP of x.txt write content to it, at
// the place answered names (see view.looked), and wait there until the
// watch applies the change; written reports whether it did, once the
// hook is taken away.
func writeInLookup(t *testing.T, s *Server, root, content string, answered bool) (written func() bool) {
	t.Helper()
	var once atomic.Bool
	hook := func(rel string, at bool) {
		if rel != "x.txt" || at != answered || !once.CompareAndSwap(false, true) {
			return
		}
		before := s.v.changes.Load()
		testenv.Must(t, os.WriteFile(filepath.Join(root, "x.txt"), []byte(content), 0o644))
		for deadline := time.Now().Add(10 * time.Second); s.v.changes.Load() == before; { // a hang guard
			if time.Now().After(deadline) {
				t.Error("the watch applied no change in 10 s")
				return
			}
			time.Sleep(time.Millisecond) // a poll interval
		}
	}
	s.v.looked.Store(&hook)
	t.Cleanup(func() { s.v.looked.Store(nil) })
	return func() bool {
		s.v.looked.Store(nil)
		return once.Load()
	}
}

// TestRepliesCachedForTheirTimeouts: the timeouts are set in each reply
// (a zero one must reach the kernel as zero, see node.lookup), so every
// reply that may be cached must carry them: stats of a path the kernel
// was just told of reach the daemon no more. Through the roots' top
// directory (two roots), with the attributes a LOOKUP brought (the stat
// that looked a name up asks for no GETATTR after it), and with those a
// GETATTR brought after a change the watch reports (applied here by hand:
// the file's attributes are dropped, its name stays).
func TestRepliesCachedForTheirTimeouts(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Parallel()
	text, file := "", ""
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(t.TempDir(), name)
		testenv.Must(t, os.MkdirAll(filepath.Join(dir, "d"), 0o755))
		file = filepath.Join(dir, "d", "f.txt")
		testenv.Must(t, os.WriteFile(file, []byte("text\n"), 0o644))
		text += "[[root]]\npath = \"" + dir + "\"\n"
	}
	pol, err := parsePolicy([]byte(text))
	testenv.Must(t, err)
	mp := filepath.Join(t.TempDir(), "mnt")
	testenv.Must(t, os.Mkdir(mp, 0o755))
	var lookups, getattrs atomic.Int64
	s, err := Mount(Config{Policy: pol, MountPoint: mp, Latency: func(op string, _ time.Duration) {
		switch op {
		case "lookup":
			lookups.Add(1)
		case "getattr":
			getattrs.Add(1)
		}
	}})
	testenv.Must(t, err)
	defer s.Unmount()
	paths := []string{mp, filepath.Join(mp, "b"), filepath.Join(mp, "b", "d"), filepath.Join(mp, "b", "d", "f.txt")}
	stats := func(rounds int) (int64, int64) {
		t.Helper()
		l, g := lookups.Load(), getattrs.Load()
		for range rounds {
			for _, p := range paths {
				_, err := os.Stat(p)
				testenv.Must(t, err)
			}
		}
		return lookups.Load() - l, getattrs.Load() - g
	}
	if l, g := stats(1); l != 3 || g > 1 {
		t.Errorf("the first stats: %d lookups and %d getattrs, want 3 and at most 1 (the mount's root)", l, g)
	}
	if l, g := stats(5); l+g != 0 {
		t.Errorf("stats again: %d lookups and %d getattrs reached the daemon, want none", l, g)
	}
	real, err := filepath.EvalSymlinks(filepath.Dir(file))
	testenv.Must(t, err)
	s.apply([]watch.Event{{Op: watch.Changed, Dir: real, Name: "f.txt"}})
	if l, g := stats(1); l != 0 || g != 1 {
		t.Errorf("after a change of f.txt: %d lookups and %d getattrs, want 0 and 1", l, g)
	}
	if l, g := stats(5); l+g != 0 {
		t.Errorf("stats after the change was asked about: %d lookups and %d getattrs reached the daemon, want none", l, g)
	}
}

// TestPushAfterAMoveIntoDenied is the attacker's race around a followed
// rename (see Server.follow): a listing read a small file and queued its
// content for a push; before the push, the file's directory was renamed
// into a denied subtree, and the node with it. The push must not leave
// those bytes in the kernel for a reader holding the file mapped: the
// version at the node's name is still the one admitted, but the name is
// another path now.
func TestPushAfterAMoveIntoDenied(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Parallel()
	root := t.TempDir()
	const text = "admitted at d/sub/x.txt, ordinary text\n"
	testenv.Must(t, os.MkdirAll(filepath.Join(root, "d", "sub"), 0o755))
	testenv.Must(t, os.WriteFile(filepath.Join(root, "d", "sub", "x.txt"), []byte(text), 0o644))
	testenv.Must(t, os.Mkdir(filepath.Join(root, "e"), 0o755))
	mp := filepath.Join(t.TempDir(), "mnt")
	testenv.Must(t, os.Mkdir(mp, 0o755))
	pol, err := parsePolicy([]byte("[[root]]\npath = \"" + root + "\"\n[deny]\npaths = [\"" + filepath.Join(root, "e", "d") + "\"]\n"))
	testenv.Must(t, err)
	s, err := Mount(Config{Policy: pol, MountPoint: mp})
	testenv.Must(t, err)
	t.Cleanup(func() { s.Unmount() })
	if !s.v.warm.On() {
		t.Skip("no watch here, or the warming engine is off: nothing is pushed")
	}
	for _, d := range []string{"e", "d/sub"} { // the kernel holds e, and the file
		if _, err := os.ReadDir(filepath.Join(mp, d)); err != nil {
			t.Fatal(err)
		}
	}
	// Held open, to be mapped: a fault reads the page cache without the
	// attribute check a read(2) may make first (which would refuse on
	// its own).
	h, err := os.Open(filepath.Join(mp, "d", "sub", "x.txt"))
	testenv.Must(t, err)
	defer h.Close()
	in := s.root.EmbeddedInode().GetChild("d").GetChild("sub").GetChild("x.txt")
	n, ok := nodeOf(in)
	if !ok {
		t.Fatal("the kernel does not hold x.txt after the listing")
	}
	var st unix.Stat_t
	testenv.Must(t, unix.Stat(filepath.Join(root, "d", "sub", "x.txt"), &st))
	// The rename's events are the test's own, those of a watch that pairs
	// a rename (fanotify's FAN_RENAME). The real watch stops first: on
	// inotify it reports a removal and an addition, whose removal, applied
	// before the move below, left the node nowhere (2 runs in 60 under
	// load). The mount still counts as watched: only events stop.
	s.closeWatcher()
	testenv.Must(t, os.Rename(filepath.Join(root, "d"), filepath.Join(root, "e", "d")))
	e := filepath.Join(root, "e")
	s.apply([]watch.Event{
		{Op: watch.Moved, Dir: e, Name: "d", FromDir: root, FromName: "d"},
		{Op: watch.Removed, Dir: root, Name: "d"},
		{Op: watch.Added, Dir: e, Name: "d"},
	})
	if rel, _, ok := n.where(); !ok || rel != "e/d/sub/x.txt" {
		t.Fatalf("x.txt's node is at %q (%v) after the rename, want e/d/sub/x.txt", rel, ok)
	}
	s.v.push(ref{in}, fileid.Of(&st), []byte(text), nil, false)           // as the engine pushes a listing's kept content
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), mapReadEnv+"=1")
	child.ExtraFiles = []*os.File{h}
	out, err := child.Output()
	if err != nil {
		t.Fatalf("the mapping child: %v", err)
	}
	if strings.Contains(string(out), text) {
		t.Fatalf("x.txt, moved into a denied subtree, reads %q through a mapping of a descriptor held open", out)
	}
}

// mapReadEnv, set to "1", makes this test binary map its descriptor 3 (a
// file of a mount a test serves), print what its first page holds (or
// nothing, if reading it faults: a page the kernel could not fill), and
// exit. It is a child of its own: a fault in the serving process could
// stop it for good, a garbage collection waiting for the faulting thread,
// which waits for a reply only the stopped process would make.
const mapReadEnv = "FSGUARD_TEST_MAPREAD"

// TestMain runs the test binary as one of the children the tests start
// (a lister, see warm.ListerMain; a mapping child), or runs the tests.
func TestMain(m *testing.M) {
	if status, ok := warm.ListerMain(); ok {
		os.Exit(status)
	}
	switch {
	case os.Getenv(mapReadEnv) == "1":
		os.Exit(mapRead())
	case os.Getenv(mapAllEnv) == "1":
		os.Exit(mapAll())
	}
	os.Exit(m.Run())
}

func mapRead() int {
	mem, err := unix.Mmap(3, 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	debug.SetPanicOnFault(true)
	defer func() { recover() }() // a fault: nothing printed
	os.Stdout.WriteString(strings.TrimRight(string(mem), "\x00"))
	return 0
}
