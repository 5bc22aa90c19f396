package mount

import (
	"context"
	"io"
	"syscall"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/fsguard/fsguard/internal/view/warm"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The gate is the one way bytes of a file reach the kernel: the reply to a
// READ (node.Read, handle.Read), a passthrough open (handle.PassthroughFd)
// and a push into the page cache (view.push, the warming engine's one way
// in: a listing's kept content, a prefetch, a refill, the push of a changed
// file). Nothing else in the package, and nothing in the engine
// (internal/view/warm, which imports no FUSE package), hands the kernel a
// file's bytes; TestOneGate holds both to it. Every way through it stands
// on a version admitted for the node's place under the guard in force: a
// READ admits the version it serves (or uses a descriptor admitted for that
// very version, see fds), a push admits afresh what it stores and checks it
// is still that version, with one link, at the same place under the same
// guard, after the store.
//
// A version with masks (sniff.Mask: a credential in ordinary text) reaches
// the kernel masked, at every offset and through every way: it is never
// spliced from its descriptor, never handed to passthrough, and each reply
// and push is masked at its file offset before it leaves the gate. The
// masks keep every length, so sizes and offsets stay true, and the page
// cache holds only masked bytes: mmap and a later read see them too.

// served is an admitted version and the masks it is served with.
type served struct {
	id    fileid.Identity
	masks []sniff.Mask
}

// passthrough reports whether a handle of version s may be read by the
// kernel from the backing file directly (daemon open mode): never one with
// masks, whose raw bytes the kernel would read.
func (v *view) passthrough(s served) bool {
	return len(s.masks) == 0 && s.id.Size >= v.policy().Mount.PassthroughMinBytes
}

// Read serves a READ. With a handle (daemon open mode) it reads the handle;
// without one (kernel open mode) it admits the file afresh, so no byte
// reaches the page cache that the current policy would not show, and none
// unmasked that it masks.
func (n *node) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n.v.saw(ctx)
	defer n.v.timed("read", time.Now())
	if h, ok := fh.(*handle); ok {
		return h.Read(ctx, dest, off)
	}
	if c := n.v.open.Load(); c != nil && !n.index {
		g, _ := n.v.root(n.root)
		if h := c.get(n, g); h != nil {
			n.v.warm.ReadIn(ref{&n.Inode})
			n.v.warm.ReadOf(ref{&n.Inode}, h.id, off, len(dest))
			n.tell(h.id)
			return reply(h.f, h.masks, dest, off, func() { c.release(h) })
		}
		f, res, errno := n.admit(ctx)
		if errno != 0 {
			// An answer without bytes (refused, gone, replaced) counts
			// as another version: no push may serve an older one now.
			n.tell(fileid.Identity{})
			return nil, errno
		}
		n.tell(f.Identity())
		// A walker reading a file of the directory reads its neighbours
		// next: theirs are pushed while it reads this one.
		n.v.warm.ReadIn(ref{&n.Inode})
		if f.Stat.Nlink != 1 {
			// Another name may be denied, or become so: decided afresh.
			defer f.Close()
			return reply(f, res.Masks, dest, off, nil)
		}
		n.v.warm.ReadOf(ref{&n.Inode}, f.Identity(), off, len(dest))
		h := c.put(n, g, f, res.Masks)
		return reply(h.f, h.masks, dest, off, func() { c.release(h) })
	}
	f, res, errno := n.admit(ctx)
	if errno != 0 {
		return nil, errno
	}
	defer f.Close()
	if n.index {
		if g, p, errno := n.resolve(); errno == 0 {
			if data := n.v.gitIndex(g, p, f); data != nil {
				return fuse.ReadResultData(sliceAt(data, off, len(dest))), 0
			}
		}
	}
	return reply(f, res.Masks, dest, off, nil)
}

func (h *handle) Read(_ context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if h.synth != nil {
		return fuse.ReadResultData(sliceAt(h.synth, off, len(dest))), 0
	}
	h.mu.Lock()
	s := h.admitted
	h.mu.Unlock()
	if h.recheck != nil {
		var st unix.Stat_t
		if err := unix.Fstat(int(h.f.Fd()), &st); err != nil {
			return nil, fs.ToErrno(err)
		}
		h.mu.Lock()
		if now := fileid.Of(&st); now != h.admitted.id {
			res, errno := h.recheck(&st)
			if errno != 0 {
				h.mu.Unlock()
				return nil, errno
			}
			h.admitted = served{now, res.Masks}
		}
		s = h.admitted
		h.mu.Unlock()
	}
	return reply(h.f, s.masks, dest, off, nil)
}

// PassthroughFd hands the kernel the backing descriptor of a handle the
// gate let through (see view.passthrough).
func (h *handle) PassthroughFd() (int, bool) { return int(h.f.Fd()), h.passthrough }

// replyFile is what a READ is answered from: an admitted descriptor.
type replyFile interface {
	Fd() uintptr
	ReadAt(b []byte, off int64) (int, error)
}

// reply answers a READ of len(dest) bytes at off from f, an admitted
// descriptor of a version served with masks; done (nil: none) runs once
// the reply is made, and ends the READ's use of f. A large READ of a
// version without masks is spliced from f (one copy: see spliceMin); any
// other is read into dest and masked there.
func reply(f replyFile, masks []sniff.Mask, dest []byte, off int64, done func()) (fuse.ReadResult, syscall.Errno) {
	if len(masks) == 0 && len(dest) >= spliceMin {
		return &splicedRead{fd: int(f.Fd()), off: off, size: len(dest), done: done}, 0
	}
	if done != nil {
		defer done()
	}
	m, err := f.ReadAt(dest, off)
	if err != nil && err != io.EOF {
		return nil, fs.ToErrno(err)
	}
	sniff.ApplyMasks(masks, dest[:m], off)
	return fuse.ReadResultData(dest[:m]), 0
}

// push stores the whole content of version id of the file r stands for in
// the kernel's page cache: data, when the caller holds it (a listing's
// admission read it), else read now into buf (warm.MaxPush+1 bytes). It is
// the warming engine's one way into the kernel (warm.Target.Push), and
// takes its nodes as the engine's handles; a git index, served rewritten,
// is never pushed. The version is admitted afresh first, at the node's
// place now and under the guard in force (an open; the verdict itself is
// remembered per version): nothing is stored unless the file there is still
// version id, with one link (another name may be denied), admitted, and it
// is stored masked by its verdict's masks. After the store the file must
// still be that version, the guard the same, and no node moved meanwhile
// (see Server.follow: the node's name may lead into a denied place now);
// otherwise what was stored is dropped again ("changed"). wait: see store.
// It returns the bytes stored and a result to count ("pushed", "unknown":
// the kernel did not know the inode in time, or the store failed,
// "changed"; "" for a push given up unstored).
//
// Never call it from a request's handler: the kernel may hold the page lock
// of the very file a READ in flight fills, and the store would wait on it
// for ever.
func (v *view) push(r warm.Node, id fileid.Identity, data, buf []byte, wait bool) (int, string) {
	rf, ok := r.(ref)
	if !ok {
		return 0, ""
	}
	in := rf.in
	n, ok := nodeOf(in)
	if !ok || n.index || n.v != v {
		return 0, ""
	}
	changes := v.changes.Load()
	g, p, errno := n.resolve()
	if errno != 0 {
		return 0, ""
	}
	f, err := g.OpenIn(p)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	if f.Identity() != id || f.Stat.Nlink != 1 {
		return 0, "" // another version than the one offered, or links: on demand
	}
	res, err := v.admit.Decide(g, f)
	if err != nil {
		return 0, ""
	}
	if data == nil {
		m, err := io.ReadFull(io.NewSectionReader(f, 0, int64(len(buf))), buf)
		if err != io.ErrUnexpectedEOF && err != io.EOF || int64(m) != f.Stat.Size {
			return 0, ""
		}
		data = buf[:m]
	} else if int64(len(data)) != id.Size {
		return 0, ""
	}
	if len(res.Masks) > 0 {
		// Masked in a copy: data may be the caller's (a test's).
		b := append(buf[:0:0], data...)
		sniff.ApplyMasks(res.Masks, b, 0)
		data = b
	}
	n.tell(id) // before the store: a READ after it must not be older
	if errno := v.store(in, data, wait); errno != 0 {
		return 0, "unknown"
	}
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || fileid.Of(&st) != id || v.guard.Load() != g || v.moved.Load() > changes {
		in.NotifyContent(0, 0) // not this version, or not here, any more
		return 0, "changed"
	}
	return len(data), "pushed"
}

// maxWaitKnown bounds a push's wait for the kernel to know an inode.
const maxWaitKnown = 2 * time.Second

// store writes data into the kernel's cache of in; only push calls it. The
// READDIRPLUS reply naming the inode may not be in the kernel yet
// (ENOENT): with wait, it waits for it, longer on a busy machine (where
// the reply can lag far behind the push), never more than maxWaitKnown;
// without, it returns ENOENT at once. Any other failure is a push given
// up.
func (v *view) store(in *fs.Inode, data []byte, wait bool) syscall.Errno {
	for delay, waited := 100*time.Microsecond, time.Duration(0); ; delay = min(2*delay, 50*time.Millisecond) {
		errno := in.WriteCache(0, data)
		if errno == 0 || errno == syscall.ENOENT && !wait {
			return errno
		}
		if errno != syscall.ENOENT || waited >= maxWaitKnown {
			return errno
		}
		time.Sleep(delay)
		waited += delay
	}
}
