package mount

import (
	"container/list"
	"sync"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"

	"golang.org/x/sys/unix"
)

// fds keeps the admitted descriptor of recently read files, so that the
// READs after the first of one file version cost an fstat and a pread
// instead of a resolution, an open and an admission (a cold 1 GiB read
// is thousands of READs). A descriptor stands for exactly one version
// under one guard: a READ uses it only while an fstat of it shows the
// identity it was admitted with and at least one name (a file replaced by
// a rename has none left), and the guard is still the view's. The watch
// drops a node's descriptor when its name changes, a reload or a lost
// watch drops them all, and without a watch none is kept: nothing else
// could tell the cache that a name now means another file.
type fds struct {
	mu     sync.Mutex
	max    int
	lru    list.List // *heldFD, most recent first
	byNode map[*node]*heldFD
}

// heldFD is one kept descriptor; refs counts the READs using it, so an
// eviction never closes it under one.
type heldFD struct {
	n  *node
	f  *roots.File
	g  *roots.Guard
	id fileid.Identity
	// masks are the version's (see the gate): every reply from f is
	// masked by them.
	masks []sniff.Mask
	refs  int
	dead  bool
	elem  *list.Element
}

// maxFDs bounds the kept descriptors; under a lower descriptor limit the
// bound is what the limit leaves a cache (roots.DescriptorRoom), and when
// the table fills all the same the idle ones are closed (evictIdle) so
// that the open a READ needs succeeds.
const maxFDs = 1024

// keptFDs is the bound on kept descriptors under the daemon's current
// descriptor limit.
func keptFDs() int {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil {
		return maxFDs
	}
	return roots.DescriptorRoom(int(min(lim.Cur, 1<<30)), maxFDs)
}

// get returns n's kept descriptor if it still stands for the file's
// current version under guard g; the caller must release it.
func (c *fds) get(n *node, g *roots.Guard) *heldFD {
	c.mu.Lock()
	h := c.byNode[n]
	if h == nil || h.g != g {
		c.mu.Unlock()
		if h != nil {
			c.drop(n)
		}
		return nil
	}
	h.refs++
	c.lru.MoveToFront(h.elem)
	c.mu.Unlock()
	var st unix.Stat_t
	if unix.Fstat(int(h.f.Fd()), &st) != nil || fileid.Of(&st) != h.id || st.Nlink == 0 {
		c.drop(n)
		c.release(h)
		return nil
	}
	return h
}

// put keeps f, just admitted for n under g with masks, and returns it
// held once.
func (c *fds) put(n *node, g *roots.Guard, f *roots.File, masks []sniff.Mask) *heldFD {
	h := &heldFD{n: n, f: f, g: g, id: f.Identity(), masks: masks, refs: 1}
	c.mu.Lock()
	if c.byNode == nil {
		c.byNode = map[*node]*heldFD{}
	}
	if old := c.byNode[n]; old != nil {
		c.unlink(old)
	}
	h.elem = c.lru.PushFront(h)
	c.byNode[n] = h
	var evicted []*heldFD
	for c.lru.Len() > c.max {
		old := c.lru.Back().Value.(*heldFD)
		c.unlink(old)
		evicted = append(evicted, old)
	}
	c.mu.Unlock()
	for _, old := range evicted {
		c.closeIfIdle(old)
	}
	return h
}

// release ends one use of h.
func (c *fds) release(h *heldFD) {
	c.mu.Lock()
	h.refs--
	c.mu.Unlock()
	c.closeIfIdle(h)
}

// drop forgets n's descriptor (closed once no READ uses it).
func (c *fds) drop(n *node) {
	c.mu.Lock()
	h := c.byNode[n]
	if h != nil {
		c.unlink(h)
	}
	c.mu.Unlock()
	if h != nil {
		c.closeIfIdle(h)
	}
}

// clear forgets every descriptor.
func (c *fds) clear() {
	c.mu.Lock()
	var all []*heldFD
	for _, h := range c.byNode {
		c.unlink(h)
		all = append(all, h)
	}
	c.mu.Unlock()
	for _, h := range all {
		c.closeIfIdle(h)
	}
}

// unlink removes h from the cache; c.mu is held.
func (c *fds) unlink(h *heldFD) {
	if h.dead {
		return
	}
	h.dead = true
	c.lru.Remove(h.elem)
	delete(c.byNode, h.n)
}

func (c *fds) closeIfIdle(h *heldFD) {
	c.mu.Lock()
	idle := h.dead && h.refs == 0 && h.f != nil
	f := h.f
	if idle {
		h.f = nil
	}
	c.mu.Unlock()
	if idle {
		f.Close()
	}
}

// evictIdle forgets and closes every kept descriptor no READ uses now,
// and returns how many it closed: the descriptor table is full.
func (c *fds) evictIdle() int {
	c.mu.Lock()
	var idle []*heldFD
	for _, h := range c.byNode {
		if h.refs == 0 {
			c.unlink(h)
			idle = append(idle, h)
		}
	}
	c.mu.Unlock()
	for _, h := range idle {
		c.closeIfIdle(h)
	}
	return len(idle)
}
