package mount

import (
	"testing"
	"time"
)

// TestSettleWaitsOnlyForEarlierReplies: a reload waits for the replies
// begun before it, not for those begun while it waits (a mount under
// constant load has some in flight at every moment), and not past its
// bound for one that never ends.
func TestSettleWaitsOnlyForEarlierReplies(t *testing.T) {
	t.Parallel()
	var r replies
	early := r.begin()
	waiting := make(chan struct{})
	settling := func() { close(waiting) }
	r.settling.Store(&settling)
	settled := make(chan bool)
	go func() { settled <- r.settle(time.Minute) }() // a hang guard
	select {
	case <-waiting:
	case ok := <-settled:
		t.Fatalf("settle returned (%v) at once, with a reply begun before it in flight", ok)
	}
	late := r.begin() // begun while settle waits: not waited for
	select {
	case <-settled:
		t.Fatal("settle returned while a reply begun before it was in flight")
	default:
	}
	r.end(early)
	if !<-settled {
		t.Fatal("settle gave up, with only a reply begun after it in flight")
	}
	if !r.any() {
		t.Error("the later reply is not counted")
	}
	r.settling.Store(nil)
	// A second reload waits for the reply begun during the first, up to
	// its bound.
	if r.settle(10 * time.Millisecond) {
		t.Error("a second settle did not wait for the reply still in flight")
	}
	r.end(late)
	if r.any() || !r.settle(time.Minute) {
		t.Error("with no reply in flight: counted, or settle waited")
	}
}
