package mount

import (
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// replies counts the requests that hand the kernel names with their
// attributes (LOOKUP, READDIRPLUS) while they are answered: from before
// the node's Lookup decides until the bridge has filed the nodes in its
// tree, which it does after Lookup returns. Such a reply can carry a
// name decided before a change the watch applies, or under the policy a
// reload replaces, while the tree has no node for it that an
// invalidation could find:
//   - only while one is counted does apply invalidate names it finds no
//     node for; a request counted after apply looked finds the change
//     counted, so it decides afresh;
//   - a reload waits (settle) for the requests begun before it swapped
//     the policy, so that its walk of the tree finds their nodes.
//
// The counts are kept by epoch (its parity), so that settle waits only
// for requests begun before it, however many begin after.
type replies struct {
	epoch atomic.Uint64
	n     [2]atomic.Int64
	// settling, when set (tests only), runs when settle has to wait.
	settling atomic.Pointer[func()]
}

func (r *replies) begin() uint64 {
	e := r.epoch.Load()
	r.n[e&1].Add(1)
	return e
}

func (r *replies) end(e uint64) { r.n[e&1].Add(-1) }

// any reports whether a reply is being made now.
func (r *replies) any() bool { return r.n[0].Load()+r.n[1].Load() > 0 }

// settle waits until the requests counted before it have filed their
// nodes, up to bound (a request can block on a slow backing filesystem;
// a reload must not hang on it), and reports whether they did. A request
// that read the epoch before settle moved it but is counted only after
// settle looked reads the policy after the swap that preceded settle.
// One settle at a time (the reload's lock).
func (r *replies) settle(bound time.Duration) bool {
	n := &r.n[(r.epoch.Add(1)-1)&1]
	if n.Load() == 0 {
		return true
	}
	if f := r.settling.Load(); f != nil {
		(*f)()
	}
	deadline := time.Now().Add(bound)
	for wait := 50 * time.Microsecond; n.Load() != 0; wait = min(2*wait, 10*time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait) // a rare wait (a reload) of a request or two
	}
	return true
}

// replying is the raw file system counting its replies in r.
type replying struct {
	fuse.RawFileSystem
	r *replies
}

func (p replying) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	defer p.r.end(p.r.begin())
	return p.RawFileSystem.Lookup(cancel, h, name, out)
}

func (p replying) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer p.r.end(p.r.begin())
	return p.RawFileSystem.ReadDirPlus(cancel, in, out)
}
