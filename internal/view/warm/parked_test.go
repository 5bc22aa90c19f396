package warm

import (
	"iter"
	"sync/atomic"
	"testing"
)

// dirNode is a directory the kernel holds, as far as parking needs one.
type dirNode struct{ name string }

func (*dirNode) Held() *atomic.Pointer[Held]       { return nil }
func (*dirNode) Dir() Node                         { return nil }
func (*dirNode) Child(string) Node                 { return nil }
func (*dirNode) Children() iter.Seq2[string, Node] { return func(func(string, Node) bool) {} }
func (*dirNode) IsDir() bool                       { return true }
func (d *dirNode) Top() Node                       { return d }
func (d *dirNode) Path() (string, bool)            { return d.name, true }

// TestPushedAtOnceWhileTheAgentReads: an agent's first listings are
// parked until it is seen to read what it lists; then all but one in
// probeEvery are pushed at once, and the one parked is the probe: read
// before the next probe is parked, the agent still reads; not read (a
// find after a grep -r), every listing is parked again.
func TestPushedAtOnceWhileTheAgentReads(t *testing.T) {
	t.Parallel()
	var p parked
	dirs := make([]Node, 32)
	for i := range dirs {
		dirs[i] = &dirNode{}
	}
	next := 0 // the next directory parked
	// listings asks atOnce of n first listings, parks those it says no
	// to, and returns how many went at once.
	listings := func(n int) (atOnce int) {
		for range n {
			if p.atOnce() {
				atOnce++
				continue
			}
			p.park(dirs[next], []pushJob{{}}) // a push of no content, as of a file whose verdict was known
			next++
		}
		return atOnce
	}
	if n := listings(3); n != 0 {
		t.Fatalf("%d of 3 listings pushed at once before any read", n)
	}
	p.take(dirs[next-1]) // the agent reads in the directory parked last
	for round, read := range []bool{true, false} {
		if n := listings(probeEvery); n != probeEvery-1 {
			t.Fatalf("round %d: %d of %d listings at once; want all but the probe", round, n, probeEvery)
		}
		if read {
			p.take(dirs[next-1]) // the probe is read before the next is parked
		}
	}
	// The last probe was never read: the next one's parking says the
	// agent stopped reading, and each listing is parked from then on.
	if n := listings(probeEvery); n != probeEvery-1 {
		t.Fatalf("the probe after the unread one: %d of %d at once", n, probeEvery)
	}
	if n := listings(probeEvery); n != 0 {
		t.Fatalf("after a probe left unread: %d of %d listings at once; want every one parked", n, probeEvery)
	}
}
