package mount

import (
	"sync"
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// openless makes the kernel stop sending OPENDIR and RELEASEDIR. Its
// OPENDIR answers ENOSYS once; the kernel then opens every directory of
// the mount without asking (FUSE_NO_OPENDIR_SUPPORT, Linux 5.1) and keeps
// each listing it reads in its cache (FOPEN_CACHE_DIR | FOPEN_KEEP_CACHE
// is its default for such opens) until the directory's mtime moves or the
// watch invalidates it. A warm walker then costs the daemon nothing per
// directory; with an OPENDIR and a RELEASEDIR each, a warm walker would
// pay two round trips per directory that a native walk does not.
//
// Nothing is decided at OPENDIR: the kernel checks the caller's rights to
// open the directory itself (default_permissions), before and after, and
// the listing is decided when it is read, as it was.
//
// go-fuse's node bridge serves READDIR only through a handle its OpenDir
// made, and the listing's state (the entries, the content kept for pushes,
// the request that made it) lives in that handle. So openless opens one
// itself when a READDIR comes for a directory it holds none for, keeps it
// while the listing is read, and releases it at the reply that ends the
// listing. A kept handle is only a cache of the listing: dropping it early
// costs the next READDIR a fresh listing positioned by offset, never a
// wrong answer.
type openless struct {
	fuse.RawFileSystem

	// on: the kernel said at INIT that it opens directories without
	// OPENDIR (FUSE_NO_OPENDIR_SUPPORT). An older one would fail every
	// opendir(3) on ENOSYS; it gets the bridge's OPENDIR, and its READDIRs
	// carry that handle.
	on atomic.Bool

	mu    sync.Mutex
	dirs  map[uint64]*dirRead // by node ID
	clock uint64              // orders dirs by last use, for eviction
}

// dirRead is the handle openless holds for one directory's listing.
type dirRead struct {
	mu   sync.Mutex // held while a request uses fh
	fh   uint64     // 0: none open
	used uint64
}

// maxDirReads bounds the listings held open: a reader that stops before
// the end (a killed walker) leaves one behind, with the content it kept
// for pushes, until the directory is listed again, forgotten or evicted.
const maxDirReads = 64

func newOpenless(fs fuse.RawFileSystem) *openless {
	return &openless{RawFileSystem: fs, dirs: map[uint64]*dirRead{}}
}

func (o *openless) Init(s *fuse.Server) {
	o.on.Store(s.KernelSettings().Flags64()&fuse.CAP_NO_OPENDIR_SUPPORT != 0)
	o.RawFileSystem.Init(s)
}

func (o *openless) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if !o.on.Load() {
		return o.RawFileSystem.OpenDir(cancel, in, out)
	}
	return fuse.ENOSYS
}

func (o *openless) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return o.read(cancel, in, out, o.RawFileSystem.ReadDir)
}

func (o *openless) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return o.read(cancel, in, out, o.RawFileSystem.ReadDirPlus)
}

// read serves one READDIR(PLUS) through the directory's held handle, and
// opens one if none is held or the reader starts over (offset 0: a fresh
// listing for each new reader, as OPENDIR gave). Two readers of one
// directory at once share the handle, one request at a time; the bridge
// positions it at each request's offset.
func (o *openless) read(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList,
	list func(<-chan struct{}, *fuse.ReadIn, *fuse.DirEntryList) fuse.Status) fuse.Status {
	if in.Fh != 0 {
		return list(cancel, in, out) // the kernel opened the directory: its handle
	}
	d := o.dir(in.NodeId)
	defer d.mu.Unlock()
	if d.fh != 0 && in.Offset == 0 {
		o.release(in.NodeId, d)
	}
	if d.fh == 0 {
		var opened fuse.OpenOut
		st := o.RawFileSystem.OpenDir(cancel, &fuse.OpenIn{InHeader: in.InHeader, Flags: unix.O_RDONLY | unix.O_DIRECTORY}, &opened)
		if st != fuse.OK {
			o.drop(in.NodeId, d)
			return st
		}
		d.fh = opened.Fh
	}
	req := *in
	req.Fh = d.fh
	st := list(cancel, &req, out)
	if st != fuse.OK || out.Offset == in.Offset {
		// The end of the listing (or a failure): the kernel has the
		// listing, and the handle's release hands on its last pushes.
		o.release(in.NodeId, d)
		o.drop(in.NodeId, d)
	}
	return st
}

// dir returns the node's dirRead, locked, making one if none is held. A
// dirRead dropped while this request waited for it is not used: a handle
// opened through it would be held by nothing.
func (o *openless) dir(node uint64) *dirRead {
	for {
		o.mu.Lock()
		o.clock++
		d := o.dirs[node]
		if d == nil {
			if len(o.dirs) >= maxDirReads {
				o.evictLocked()
			}
			d = &dirRead{}
			o.dirs[node] = d
		}
		d.used = o.clock
		o.mu.Unlock()
		d.mu.Lock()
		o.mu.Lock()
		current := o.dirs[node] == d
		o.mu.Unlock()
		if current {
			return d
		}
		d.mu.Unlock()
	}
}

// evictLocked releases the least recently used listing that no request is
// reading now.
func (o *openless) evictLocked() {
	var oldest *dirRead
	var node uint64
	for n, d := range o.dirs {
		if oldest == nil || d.used < oldest.used {
			oldest, node = d, n
		}
	}
	if oldest == nil || !oldest.mu.TryLock() {
		return // in use: the map grows by one for now
	}
	o.release(node, oldest)
	delete(o.dirs, node)
	oldest.mu.Unlock()
}

// drop forgets d as the node's listing (it holds no handle by now).
func (o *openless) drop(node uint64, d *dirRead) {
	o.mu.Lock()
	if o.dirs[node] == d {
		delete(o.dirs, node)
	}
	o.mu.Unlock()
}

// release closes d's handle; d.mu is held.
func (o *openless) release(node uint64, d *dirRead) {
	if d.fh == 0 {
		return
	}
	o.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: fuse.InHeader{NodeId: node}, Fh: d.fh})
	d.fh = 0
}

// Forget releases the node's held listing first: the bridge drops a node
// the kernel has forgotten, handles and all, and a later release of one of
// them would name a node it no longer knows.
func (o *openless) Forget(node, nlookup uint64) {
	o.mu.Lock()
	d := o.dirs[node]
	delete(o.dirs, node)
	o.mu.Unlock()
	if d != nil {
		d.mu.Lock()
		o.release(node, d)
		d.mu.Unlock()
	}
	o.RawFileSystem.Forget(node, nlookup)
}
