package mount

import (
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// replying counts the requests that hand the kernel names with their
// attributes (LOOKUP, READDIRPLUS) while they are answered: from before
// the node's Lookup decides until the bridge has filed the nodes in its
// tree, which it does after Lookup returns. A change the watch applies
// to a name the tree has no node for can be on its way to the kernel in
// such a reply, decided before the change; only while one is counted
// does apply invalidate names it finds no node for. A request counted
// after apply looked finds the change counted, so it decides afresh.
type replying struct {
	fuse.RawFileSystem
	n *atomic.Int64
}

func (r replying) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	r.n.Add(1)
	defer r.n.Add(-1)
	return r.RawFileSystem.Lookup(cancel, h, name, out)
}

func (r replying) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	r.n.Add(1)
	defer r.n.Add(-1)
	return r.RawFileSystem.ReadDirPlus(cancel, in, out)
}
