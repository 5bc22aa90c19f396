package mount

import (
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// negatives remembers the names the kernel caches as absent ("negative
// entries", kept for negative_timeout, an hour by default), so that a full
// invalidation — a policy reload, a root that moved, a watch that lost
// events — can make the kernel forget them too: there is no FUSE message
// that drops every name under a directory, only one per name. A name
// beyond the bound is answered absent without being cached, so nothing
// the kernel holds is ever out of the daemon's reach.
type negatives struct {
	mu    sync.Mutex
	names map[*fs.Inode]map[string]struct{}
	n     int
}

// maxNegatives bounds the remembered names (a few MiB at most).
const maxNegatives = 1 << 16

// note records that the kernel will cache name as absent under dir, or,
// when the bound is reached, tells the kernel not to cache it (out).
func (ng *negatives) note(dir *fs.Inode, name string, out *fuse.EntryOut) {
	ng.mu.Lock()
	defer ng.mu.Unlock()
	if ng.names == nil {
		ng.names = map[*fs.Inode]map[string]struct{}{}
	}
	set := ng.names[dir]
	if _, ok := set[name]; ok {
		return
	}
	if ng.n >= maxNegatives {
		// A set timeout makes go-fuse send ENOENT itself, which the
		// kernel does not cache.
		out.SetEntryTimeout(time.Nanosecond)
		return
	}
	if set == nil {
		set = map[string]struct{}{}
		ng.names[dir] = set
	}
	set[name] = struct{}{}
	ng.n++
}

// forgetDir drops what was remembered under a directory the kernel
// forgot: its names went with it.
func (ng *negatives) forgetDir(dir *fs.Inode) {
	ng.mu.Lock()
	defer ng.mu.Unlock()
	ng.n -= len(ng.names[dir])
	delete(ng.names, dir)
}

// flush makes the kernel forget every remembered absent name.
func (ng *negatives) flush() {
	ng.mu.Lock()
	names := ng.names
	ng.names, ng.n = nil, 0
	ng.mu.Unlock()
	for dir, set := range names {
		for name := range set {
			dir.NotifyEntry(name)
		}
	}
}
