package opens

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/testenv"
)

// start records opens on the filesystem holding dir, or skips where
// fanotify filesystem marks are not allowed (not root).
func start(t *testing.T, dir string, cfg Config) *Recorder {
	t.Helper()
	r, err := Start(dir, cfg)
	if err != nil {
		if os.Geteuid() == 0 {
			t.Fatalf("fanotify as root: %v", err)
		}
		t.Skipf("fanotify unavailable: %v", err)
	}
	return r
}

// collector gathers what a Recorder hands on.
type collector struct {
	mu   sync.Mutex
	acc  []Access
	lost Lost
}

func (c *collector) emit(a []Access, l Lost) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acc = append(c.acc, a...)
	c.lost.Overflows += l.Overflows
	c.lost.Dropped += l.Dropped
}

// TestPendingFullIsCounted: opens beyond the pending bound are counted as
// dropped, never dropped silently; those within it are named.
func TestPendingFullIsCounted(t *testing.T) {
	t.Parallel()
	dir, args := manyFiles(t, 100)
	c := &collector{}
	// A long interval: nothing is handed on before Close.
	r := start(t, dir, Config{Interval: time.Hour, MaxPending: 10, Emit: c.emit})
	cmd := exec.Command("cat", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cat: %v %s", err, out)
	}
	r.Close()
	mine := 0
	for _, a := range c.acc {
		if a.Pid == uint32(cmd.Process.Pid) {
			mine++
		}
	}
	// Other processes on the same filesystem may take pending slots too;
	// either way each of cat's 100 opens is recorded or counted.
	if mine > 10 || c.lost.Dropped == 0 || int64(mine)+c.lost.Dropped < 100 {
		t.Fatalf("%d of cat's opens recorded, %d dropped (bound 10)", mine, c.lost.Dropped)
	}
}

// TestNamesAndAggregates: a live process is named, and its repeated opens
// of one version are one Access.
func TestNamesAndAggregates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &collector{}
	r := start(t, dir, Config{Interval: time.Hour, Emit: c.emit})
	// sh opens the file three times, then waits on its stdin so that it
	// is alive whenever the recorder names it.
	cmd := exec.Command("sh", "-c", fmt.Sprintf("cat %s %s %s >/dev/null; exec 3<%s; read x", p, p, p, p))
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var got []Access
	testenv.Eventually(t, "sh's open recorded", func() bool {
		r.Flush()
		c.mu.Lock()
		defer c.mu.Unlock()
		got = got[:0]
		for _, a := range c.acc {
			if a.Pid == uint32(cmd.Process.Pid) && a.Path == p {
				got = append(got, a)
			}
		}
		return len(got) > 0
	})
	if len(got) != 1 || got[0].Process.Name != "sh" || got[0].Path != p || got[0].Opens != 1 || got[0].Process.Uid != uint32(os.Getuid()) {
		t.Fatalf("sh's opens: %+v", got)
	}
	in.Close()
	cmd.Wait()
	r.Close()
	// cat may exit before it is named (on a loaded machine it often
	// does): its opens are the ones of p by neither sh nor this process.
	var cats int64
	for _, a := range c.acc {
		if a.Path == p && a.Pid != uint32(cmd.Process.Pid) && a.Pid != uint32(os.Getpid()) {
			cats += a.Opens
		}
	}
	if cats < 1 || cats > 3 {
		t.Fatalf("cat's three opens counted %d times", cats)
	}
}

// TestOwnOpensLeftOut: the opens of a process Own names (the daemon's
// helper child) are not recorded; another process's opens of the same
// file, made after them, are.
func TestOwnOpensLeftOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var helper atomic.Uint32
	c := &collector{}
	r := start(t, dir, Config{Interval: time.Hour, Emit: c.emit, Own: func(pid uint32) bool { return pid == helper.Load() }})
	defer r.Close()
	// Each opens the file once told to, says so, and stays alive to be
	// named.
	opener := func(before func(pid int)) *exec.Cmd {
		cmd := exec.Command("sh", "-c", fmt.Sprintf("read x; exec 3<%s; echo opened; read y", p))
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { in.Close(); cmd.Wait() })
		before(cmd.Process.Pid)
		io.WriteString(in, "go\n")
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "opened\n" {
			t.Fatalf("sh: %q, %v", line, err)
		}
		return cmd
	}
	own := opener(func(pid int) { helper.Store(uint32(pid)) })
	other := opener(func(int) {})
	var mine int
	testenv.Eventually(t, "the other process's open recorded", func() bool {
		r.Flush()
		c.mu.Lock()
		defer c.mu.Unlock()
		var theirs int
		for _, a := range c.acc {
			switch {
			case a.Pid == uint32(own.Process.Pid) && a.Path == p:
				mine++
			case a.Pid == uint32(other.Process.Pid) && a.Path == p:
				theirs++
			}
		}
		return mine > 0 || theirs > 0
	})
	if mine > 0 {
		t.Fatalf("the helper's open was recorded")
	}
}

// TestBatchWaitsForAPause: while opens keep arriving the batch is held,
// and handed on at MaxDelay even so; it goes at once when the opens
// paused, when it is half the pending bound, or when opens were lost.
func TestBatchWaitsForAPause(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const maxDelay = 200 * time.Millisecond
	// The mark covers the whole filesystem of dir, so other processes'
	// opens land in the batch too. A burst of them can overflow the
	// kernel's queue while the reader waits for a core (the suite under
	// load), and a batch with lost opens goes at once, as it should: such
	// a try shows nothing about the delay, and another is made.
	for try := 1; ; try++ {
		waited, lost := firstBatch(t, dir, p, maxDelay)
		if lost.Any() && try < 5 {
			continue
		}
		if waited < maxDelay {
			t.Errorf("the batch went %v after the open, while opens had not paused (lost: %+v); want MaxDelay (%v) or later", waited, lost, maxDelay)
		}
		break
	}

	// What holds a batch, one condition at a time, on a recorder that
	// reads nothing.
	held := func(change func(*Recorder)) bool {
		h := &Recorder{cfg: Config{Pause: time.Hour, MaxDelay: time.Hour, MaxPending: 1 << 16},
			pending: map[key]*Access{{ino: 1}: {}}, since: time.Now(), last: time.Now()}
		change(h)
		return h.deferred()
	}
	if !held(func(*Recorder) {}) {
		t.Error("a fresh batch while opens arrive is not held")
	}
	if held(func(h *Recorder) { h.cfg.Pause = time.Nanosecond }) {
		t.Error("a batch after a pause in the opens is held")
	}
	if held(func(h *Recorder) { h.cfg.MaxDelay = time.Nanosecond }) {
		t.Error("a batch older than MaxDelay is held")
	}
	if held(func(h *Recorder) { h.cfg.MaxPending = 2 }) {
		t.Error("a batch of half the pending bound is held")
	}
	if held(func(h *Recorder) { h.lost.Overflows = 1 }) {
		t.Error("a batch with lost opens is held")
	}
}

// TestTickHandsOnOnlyADueBatch: the tick that finds nothing to wait for
// (an empty batch never waits) names what is held before it hands the
// batch on, and the reader may have taken a command's first opens off the
// queue meanwhile: those wait for the command's pause like the rest, so
// the batch is looked at again once named. (In a full run under load,
// TestBatchWaitsForAPause saw its open handed on 28 ms after the start,
// MaxDelay being 200 ms: most likely the tick found the batch empty while
// the reader named cat, and named cat's open for it after its 10 ms
// settle.) A flush hands on what there is, due or not.
func TestTickHandsOnOnlyADueBatch(t *testing.T) {
	t.Parallel()
	fresh := func(c *collector) *Recorder {
		now := time.Now()
		return &Recorder{cfg: Config{Pause: time.Hour, MaxDelay: time.Hour, MaxPending: 1 << 16, Emit: c.emit},
			pending: map[key]*Access{{ino: 1}: {Ino: 1, Opens: 1}}, since: now, last: now}
	}
	c := &collector{}
	fresh(c).handOn(true)
	if len(c.acc) != 0 {
		t.Errorf("a batch whose opens came just now was handed on by the tick: %+v", c.acc)
	}
	r := fresh(c)
	r.last = time.Now().Add(-2 * time.Hour) // a pause since
	r.handOn(true)
	if len(c.acc) != 1 {
		t.Errorf("a batch after a pause in the opens was not handed on: %+v", c.acc)
	}
	fresh(c).handOn(false)
	if len(c.acc) != 2 {
		t.Errorf("a flush did not hand on a batch still waiting for a pause: %+v", c.acc)
	}
}

// firstBatch starts a recorder of dir's filesystem whose opens never
// pause for long enough (Pause is an hour), opens p, and returns how long
// after the start the batch holding that open was handed on, and what
// that batch said was lost.
func firstBatch(t *testing.T, dir, p string, maxDelay time.Duration) (time.Duration, Lost) {
	t.Helper()
	var mu sync.Mutex
	var emitted time.Time
	var lost Lost
	// Started after t0, so no open pending in it is older than t0.
	t0 := time.Now()
	r := start(t, dir, Config{Interval: time.Millisecond, Pause: time.Hour, MaxDelay: maxDelay, Emit: func(a []Access, l Lost) {
		mu.Lock()
		defer mu.Unlock()
		for _, x := range a {
			if x.Path == p && emitted.IsZero() {
				emitted, lost = time.Now(), l
			}
		}
	}})
	defer r.Close()
	if out, err := exec.Command("cat", p).CombinedOutput(); err != nil {
		t.Fatalf("cat: %v %s", err, out)
	}
	testenv.Eventually(t, "the batch handed on", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !emitted.IsZero()
	})
	mu.Lock()
	defer mu.Unlock()
	return emitted.Sub(t0), lost
}

// heldIn lists the descriptors in the reader's table that lead into
// dir, as "fd -> path". (Other tests' recorders see the same opens.)
func heldIn(t *testing.T, r *Recorder, dir string) []string {
	t.Helper()
	tdir := fmt.Sprintf("/proc/self/task/%d/fd", r.tid)
	fds, err := os.ReadDir(tdir)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, fd := range fds {
		if l, err := os.Readlink(tdir + "/" + fd.Name()); err == nil && strings.HasPrefix(l, dir+"/") {
			found = append(found, fd.Name()+" -> "+l)
		}
	}
	return found
}

// waitHeld polls (under a hang guard) until the reader holds at least n
// opens of files in dir.
func waitHeld(t *testing.T, r *Recorder, dir string, n int) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("the reader holding %d opens in %s", n, dir), func() bool {
		return len(heldIn(t, r, dir)) >= n
	})
}

// manyFiles writes n small files into a new directory.
func manyFiles(t *testing.T, n int) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	return dir, filesIn(t, dir, n)
}

// filesIn makes n small files in dir and returns their paths.
func filesIn(t *testing.T, dir string, n int) []string {
	t.Helper()
	var paths []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("f%03d", i))
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// TestHeldOpensAreNotTheDaemons: the descriptors of opens held until the
// pause are in the reader's own table. None is a number in the daemon's
// (where another part of it could be handed it, or run out of them), and
// the reader's table keeps no copy of the daemon's files.
func TestHeldOpensAreNotTheDaemons(t *testing.T) {
	t.Parallel()
	dir, paths := manyFiles(t, 30)
	// A file of the daemon's, open when the recorder starts and closed
	// after: no copy of it may stay open in the reader's table.
	mine, err := os.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{}
	r := start(t, dir, Config{Interval: time.Hour, Pause: time.Hour, MaxDelay: time.Hour, Emit: c.emit})
	defer r.Close()
	mine.Close()
	cmd := exec.Command("cat", paths...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cat: %v %s", err, out)
	}
	waitHeld(t, r, dir, len(paths))
	self, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range self {
		if l, _ := os.Readlink("/proc/self/fd/" + fd.Name()); strings.HasPrefix(l, dir+"/") {
			t.Errorf("the daemon's table has %s -> %s while the recorder holds cat's opens", fd.Name(), l)
		}
	}
	r.Drain()
	if left := heldIn(t, r, dir); len(left) > 0 {
		t.Errorf("after Drain, still open: %v", left)
	}
	r.Flush()
	c.mu.Lock()
	defer c.mu.Unlock()
	got := map[string]bool{}
	for _, a := range c.acc {
		if a.Pid == uint32(cmd.Process.Pid) {
			got[a.Path] = true
		}
	}
	for _, p := range paths {
		if !got[p] {
			t.Errorf("cat's open of %s was not named (named: %d)", p, len(got))
		}
	}
}

// TestAChangeBeforeNamingIsSaid: an open named after its file changed
// says so, and names the version it found.
func TestAChangeBeforeNamingIsSaid(t *testing.T) {
	t.Parallel()
	dir, paths := manyFiles(t, 1)
	c := &collector{}
	r := start(t, dir, Config{Interval: time.Hour, Pause: time.Hour, MaxDelay: time.Hour, Emit: c.emit})
	defer r.Close()
	cmd := exec.Command("cat", paths[0])
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cat: %v %s", err, out)
	}
	waitHeld(t, r, dir, 1)
	if err := os.WriteFile(paths[0], []byte("longer now\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.acc {
		if a.Pid == uint32(cmd.Process.Pid) && a.Path == paths[0] {
			if !a.Changed || a.Size != int64(len("longer now\n")) {
				t.Fatalf("an open named after its file changed: Changed %v, size %d", a.Changed, a.Size)
			}
			return
		}
	}
	t.Fatal("cat's open was not recorded")
}

// TestHeldAtTheBoundAreNamedAtOnce: at MaxHeld the reader names the
// oldest it holds without waiting for a pause, and only those: the rest
// wait for the pause. The files are on a filesystem of the test's own, so
// no other process's opens take the bound's room.
func TestHeldAtTheBoundAreNamedAtOnce(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, "mounting a tmpfs needs root")
	own := t.TempDir()
	if err := unix.Mount("tmpfs", own, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(own, unix.MNT_DETACH) })
	dir, paths := own, filesIn(t, own, 20)
	c := &collector{}
	r := start(t, dir, Config{Interval: time.Hour, Pause: time.Hour, MaxDelay: time.Hour, MaxHeld: 8, Emit: c.emit})
	defer r.Close()
	cmd := exec.Command("cat", paths...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cat: %v %s", err, out)
	}
	// At the bound, the oldest are named, down to 6 held; those left wait
	// for the pause (an hour here). At least 20 - 7 are named at once.
	named := map[string]bool{}
	testenv.Eventually(t, fmt.Sprintf("%d of cat's %d opens named without a flush, at a bound of 8 held", len(paths)-7, len(paths)), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		clear(named)
		for _, a := range r.pending {
			if a.Pid == uint32(cmd.Process.Pid) && strings.HasPrefix(a.Path, dir+"/") {
				named[a.Path] = true
			}
		}
		return len(named) >= len(paths)-7
	})
	for _, p := range paths[:len(paths)-7] {
		if !named[p] {
			t.Errorf("%s, among the oldest, not named at the bound", p)
		}
	}
	if left := heldIn(t, r, dir); len(left) < 6 || len(left) >= 8 {
		t.Errorf("%d held at a bound of 8, want 6 or 7 (named down to a quarter below it; the rest wait for the pause): %v", len(left), left)
	}
}

// onMain runs functions on the main thread (see TestMain).
var onMain = make(chan func())

func init() { runtime.LockOSThread() } // the main goroutine stays on the main thread

func TestMain(m *testing.M) {
	code := make(chan int)
	go func() { code <- m.Run() }()
	for {
		select {
		case f := <-onMain:
			f()
		case c := <-code:
			os.Exit(c)
		}
	}
}

// TestReaderNeverOnTheMainThread: started from the main thread, the
// reader's table is still another thread's. /proc/self is the main
// thread's, and the daemon names its descriptors through /proc/self/fd:
// when the reader took the main thread for its own table, the daemon's
// root descriptors vanished from /proc/self/fd and every lookup through
// the mount failed with ENOENT.
func TestReaderNeverOnTheMainThread(t *testing.T) {
	dir, paths := manyFiles(t, 1)
	mine, err := os.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	for range 5 {
		var r *Recorder
		done := make(chan struct{})
		onMain <- func() {
			defer close(done)
			if unix.Gettid() != os.Getpid() {
				return // the main goroutine left the main thread (see below)
			}
			// Unlocked, as the daemon's main goroutine is: the new
			// goroutine may then run on this thread while Start waits.
			// Locked again after, on whichever thread it then is.
			runtime.UnlockOSThread()
			defer runtime.LockOSThread()
			r = start(t, dir, Config{Interval: time.Hour, Emit: func([]Access, Lost) {}})
		}
		<-done
		if r == nil {
			continue
		}
		if r.tid == os.Getpid() {
			t.Error("the reader's table is the main thread's")
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", mine.Fd())); err != nil || l != paths[0] {
			t.Errorf("/proc/self/fd/%d: %q %v, want %s", mine.Fd(), l, err, paths[0])
		}
		r.Close()
	}
}

// TestSeenBeforeNamed: another process's opens are announced (Seen) as
// they come off the queue, long before they are named: the daemon's
// background work yields to a command whose opens ask it nothing.
func TestSeenBeforeNamed(t *testing.T) {
	t.Parallel()
	dir, paths := manyFiles(t, 5)
	c := &collector{}
	seen := make(chan struct{}, 1)
	r := start(t, dir, Config{Interval: time.Hour, Pause: time.Hour, MaxDelay: time.Hour, Emit: c.emit, Seen: func() {
		select {
		case seen <- struct{}{}:
		default:
		}
	}})
	defer r.Close()
	for len(seen) > 0 { // another process's opens before cat's
		<-seen
	}
	if out, err := exec.Command("cat", paths...).CombinedOutput(); err != nil {
		t.Fatalf("cat: %v %s", err, out)
	}
	select {
	case <-seen:
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("cat's opens were never announced")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.pending {
		if strings.HasPrefix(a.Path, dir+"/") {
			t.Fatalf("named before a pause (Pause is an hour): %+v", a)
		}
	}
}

// TestOverBound: at the bound the oldest are named down to a read's worth
// below it (682 opens), or a quarter of a smaller bound; with a bound of 0
// (no table of its own: hold nothing) all are, and never more than are
// held.
func TestOverBound(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ held, max, want int }{
		{8, 8, 2}, {20, 8, 14}, {15840, 15840, 682}, {18600, 18571, 711}, {2000, 2000, 500},
		{5, 0, 5}, {0, 0, 0}, {1, 1, 1},
	} {
		if got := overBound(c.held, c.max); got != c.want {
			t.Errorf("overBound(%d held, bound %d) = %d, want %d", c.held, c.max, got, c.want)
		}
	}
}

// TestHeldBoundLeavesRoomForNamedProcesses: with the default bound, the
// opens held, the processes named and one read's worth of both never pass
// the descriptor limit, and the processes are counted as they are named
// rather than reserved at their maximum: a limit of 20,000 holds a first
// grep -r's 18,000 opens (the old reserve of 4,096 processes held 13,110).
func TestHeldBoundLeavesRoomForNamedProcesses(t *testing.T) {
	t.Parallel()
	const limit = 20000
	r := &Recorder{room: fdRoom(limit), cfg: Config{MaxHeld: min(1<<15, fdRoom(limit))}, procs: newProcs()}
	for _, named := range []int{0, 1, 3000, maxProcs} {
		r.procs.m = map[uint32]*proc{}
		for pid := range named {
			r.procs.m[uint32(pid+1)] = &proc{}
		}
		b := r.heldBound()
		if used := b + named + 2*readBuf/metaLen + 64; used > limit {
			t.Errorf("%d processes named: bound %d, and with one read %d descriptors, past the limit of %d", named, b, used, limit)
		}
		if named <= 3 && b < 18000 {
			t.Errorf("%d processes named: bound %d, want room for a grep -r's 18,000 opens", named, b)
		}
	}
	r.cfg.MaxHeld = 0 // no table of its own: nothing held
	if b := r.heldBound(); b != 0 {
		t.Errorf("without a table of its own, bound %d, want 0", b)
	}
}
