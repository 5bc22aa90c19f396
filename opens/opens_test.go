package opens

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
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
	dir := t.TempDir()
	var args []string
	for i := range 100 {
		p := filepath.Join(dir, fmt.Sprintf("f%03d", i))
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
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
	deadline := time.Now().Add(60 * time.Second)
	for {
		r.Flush()
		c.mu.Lock()
		var got []Access
		for _, a := range c.acc {
			if a.Pid == uint32(cmd.Process.Pid) && a.Path == p {
				got = append(got, a)
			}
		}
		c.mu.Unlock()
		if len(got) > 0 {
			if len(got) != 1 || got[0].Process.Name != "sh" || got[0].Path != p || got[0].Opens != 1 || got[0].Process.Uid != uint32(os.Getuid()) {
				t.Fatalf("sh's opens: %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sh's open never recorded")
		}
		time.Sleep(time.Millisecond) // a poll interval
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
	var mu sync.Mutex
	var emitted time.Time
	// Opens never pause for an hour: only MaxDelay lets the batch go.
	// Started after t0, so no open pending in it is older than t0.
	t0 := time.Now()
	r := start(t, dir, Config{Interval: time.Millisecond, Pause: time.Hour, MaxDelay: maxDelay, Emit: func(a []Access, _ Lost) {
		mu.Lock()
		defer mu.Unlock()
		for _, x := range a {
			if x.Path == p && emitted.IsZero() {
				emitted = time.Now()
			}
		}
	}})
	defer r.Close()
	if out, err := exec.Command("cat", p).CombinedOutput(); err != nil {
		t.Fatalf("cat: %v %s", err, out)
	}
	deadline := time.Now().Add(60 * time.Second) // a hang guard
	for {
		mu.Lock()
		at := emitted
		mu.Unlock()
		if !at.IsZero() {
			if waited := at.Sub(t0); waited < maxDelay {
				t.Errorf("the batch went %v after the open, while opens had not paused; want MaxDelay (%v) or later", waited, maxDelay)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch was never handed on")
		}
		time.Sleep(time.Millisecond) // a poll interval
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
