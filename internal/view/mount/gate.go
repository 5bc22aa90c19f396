package mount

import (
	"context"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"
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

// passthrough reports whether a handle of f, admitted as version s, may
// be read by the kernel from the backing file directly (daemon open mode):
// the kernel then reads bytes nobody checks, so only a version that cannot
// change under it (FS_IMMUTABLE_FL), unless the policy trades that check
// away ([mount] passthrough_unchecked); and never one with masks, whose
// raw bytes the kernel would read.
func (v *view) passthrough(f *roots.File, s served) bool {
	m := v.policy().Mount
	if len(s.masks) > 0 || s.id.Size < m.PassthroughMinBytes {
		return false
	}
	if m.PassthroughUnchecked {
		return true
	}
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	return err == nil && flags&fsImmutable != 0
}

// fsImmutable is FS_IMMUTABLE_FL (linux/fs.h): no write, through any
// descriptor or mapping, until root with CAP_LINUX_IMMUTABLE clears it.
const fsImmutable = 0x00000010

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
	who := fuseCaller(ctx)
	if errno := n.v.recordable(who, roots.Path{}); errno != 0 {
		return nil, errno // a refusal of no name: not a denial, never audited
	}
	if c := n.v.open.Load(); c != nil && !n.index {
		g, _ := n.v.root(n.root)
		if h := c.get(n, g); h != nil {
			n.v.warm.ReadIn(ref{&n.Inode})
			n.v.warm.ReadOf(ref{&n.Inode}, h.id, off, len(dest))
			n.tell(h.id)
			r, _, fresh, errno := n.v.reply(reading{g: g, f: h.f, s: served{h.id, h.masks}, who: who, n: n}, dest, off)
			if fresh {
				c.drop(n) // decided afresh: the next READ admits anew
			}
			c.release(h)
			return r, errno
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
			r, _, _, errno := n.v.reply(reading{g: g, f: f, s: served{f.Identity(), res.Masks}, who: who, n: n}, dest, off)
			return r, errno
		}
		n.v.warm.ReadOf(ref{&n.Inode}, f.Identity(), off, len(dest))
		h := c.put(n, g, f, res.Masks)
		r, _, fresh, errno := n.v.reply(reading{g: g, f: h.f, s: served{h.id, h.masks}, who: who, n: n}, dest, off)
		if fresh {
			c.drop(n)
		}
		c.release(h)
		return r, errno
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
	g := n.v.guard.Load()
	r, _, _, errno := n.v.reply(reading{g: g, f: f, s: served{f.Identity(), res.Masks}, who: who, n: n}, dest, off)
	return r, errno
}

func (h *handle) Read(_ context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if h.synth != nil {
		return fuse.ReadResultData(sliceAt(h.synth, off, len(dest))), 0
	}
	h.mu.Lock()
	s := h.admitted
	h.mu.Unlock()
	g := h.v.guard.Load()
	r, now, fresh, errno := h.v.reply(reading{g: g, f: h.f, s: s, who: h.who, decide: h.recheck}, dest, off)
	if fresh {
		h.mu.Lock()
		h.admitted = now
		h.mu.Unlock()
	}
	return r, errno
}

// PassthroughFd hands the kernel the backing descriptor of a handle the
// gate let through (see view.passthrough).
func (h *handle) PassthroughFd() (int, bool) { return int(h.f.Fd()), h.passthrough }

// reading is one READ's source: f, admitted as version s under guard g,
// read for who. decide (nil: decide f at its version now, under g)
// decides the file afresh when f is another version after a read, or its
// verdict was found wrong.
type reading struct {
	g      *roots.Guard
	f      *roots.File
	s      served
	who    *fuse.Caller
	decide func(st *unix.Stat_t) (sniff.Result, syscall.Errno)
	// n is the node read (nil: none); a version of it found refused is
	// taken out of the view (see hide).
	n *node
}

// maxRechecks bounds the fresh decisions one READ makes because the bytes
// it read held what the verdict in hand did not see: a file changing under
// every check is refused (ChangedChecking), never served unchecked.
const maxRechecks = 3

// reply answers a READ of len(dest) bytes at off from r. The bytes served
// are the bytes checked: each is read once, with margins around it, in
// one read, in whole blocks (see readWindow); f's identity is taken after
// that read, and a version other than the one admitted is decided afresh
// before anything is served; then the bytes read are checked against the
// verdict in hand (admit.Check: the hashes of the bytes it was made on).
// Bytes it was not made on (a store through a shared mapping moves no
// ctime, so the version looked the same) make the verdict forgotten and
// the file decided and read again; a
// refusal fails the READ with the refusal's errno, and none of the bytes
// read is served. Nothing is spliced: spliced pages can change after any
// check. It returns the version that served (fresh: decided here, not the
// one r came with).
func (v *view) reply(r reading, dest []byte, off int64) (fuse.ReadResult, served, bool, syscall.Errno) {
	bp := windows.Get().(*[]byte)
	defer windows.Put(bp)
	s, fresh := r.s, false
	for try := 0; ; try++ {
		w, st, err := readWindow(r.f, bp, len(dest), off, s.id.Size)
		if err != nil {
			return nil, s, fresh, fs.ToErrno(err)
		}
		if now := fileid.Of(&st); now != s.id {
			res, errno := v.decideAt(r, &st)
			if errno != 0 {
				return nil, s, fresh, errno
			}
			blocks := admit.SameBlocks(now.Size, s.id.Size)
			s, fresh = served{now, res.Masks}, true
			if !blocks && try < maxRechecks {
				continue // the window was read in another version's blocks
			}
		}
		if v.admit.Check(r.g, r.f, s.id, s.masks, w) {
			n := copy(dest, w.Bytes[w.From-w.Base:w.To-w.Base])
			sniff.ApplyMasks(s.masks, dest[:n], off)
			return fuse.ReadResultData(dest[:n]), s, fresh, 0
		}
		// The verdict did not see these bytes: forgotten, and the file
		// decided afresh at the next read.
		v.admit.Forget(r.g, s.id)
		if try == maxRechecks {
			p := r.f.Path()
			return nil, s, fresh, v.refuse(r.who, p, refusal.Of(refusal.ChangedChecking, refusal.OpRead, p.Shown, refusal.Facts{}))
		}
		s.id = fileid.Identity{}
	}
}

// decideAt decides r's file at its version st (an fstat of r.f).
func (v *view) decideAt(r reading, st *unix.Stat_t) (sniff.Result, syscall.Errno) {
	if r.decide != nil {
		return r.decide(st)
	}
	now := *r.f
	now.Stat = *st
	res, err := v.admit.Decide(r.g, &now)
	if err != nil {
		if denied(err) && r.n != nil {
			v.hide(r.n)
		}
		return res, v.refuse(r.who, now.Path(), err)
	}
	return res, 0
}

// windows holds the buffers READs read their windows into.
var windows = sync.Pool{New: func() any { return new([]byte) }}

// readWindow reads, in one read of f into *bp (grown as needed), the n
// bytes at off and the margins around them that a check needs
// (sniff.Margins, for the file's code units), in the whole blocks of a
// version of size bytes (admit.Reach), then takes f's stat. The window's
// range is what of [off, off+n) the file holds.
func readWindow(f *roots.File, bp *[]byte, n int, off, size int64) (admit.Window, unix.Stat_t, error) {
	var st unix.Stat_t
	var hb [4]byte
	var head []byte
	unit := 1
	back, ahead := sniff.Margins(1)
	if lo, _ := admit.Reach(size, off, n, back, ahead); lo > 0 {
		// The code units are the file's, announced at its start.
		k, err := r0(f, hb[:])
		if err != nil {
			return admit.Window{}, st, err
		}
		head = hb[:k]
		unit, _ = sniff.Units(head)
	}
	for {
		back, ahead := sniff.Margins(unit)
		base, hi := admit.Reach(size, off, n, back, ahead)
		want := int(hi - base)
		if cap(*bp) < want {
			*bp = make([]byte, want)
		}
		m, err := f.ReadAt((*bp)[:want], base)
		if err != nil && err != io.EOF {
			return admit.Window{}, st, err
		}
		win := (*bp)[:m]
		if base == 0 {
			head = win[:min(4, m)]
			if u, _ := sniff.Units(head); u > unit {
				unit = u // wider units need wider margins: read again
				continue
			}
		}
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return admit.Window{}, st, err
		}
		from := min(off, base+int64(m))
		return admit.Window{Bytes: win, Base: base, AtEOF: m < want, Head: head, From: from, To: min(off+int64(n), base+int64(m))}, st, nil
	}
}

// r0 reads the start of f into b.
func r0(f *roots.File, b []byte) (int, error) {
	k, err := f.ReadAt(b, 0)
	if err == io.EOF {
		err = nil
	}
	return k, err
}

// push stores the whole content of version id of the file r stands for in
// the kernel's page cache: data, when the caller holds it (a listing's
// admission read it, and checked it), else read now into buf
// (warm.MaxPush+1 bytes) and checked as a READ's bytes are (see reply). It is
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
	if errno != 0 || v.recordable(nil, p) != 0 {
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
		if denied(err) {
			v.hide(n) // listed by name, refused by content: out of the view
		}
		return 0, ""
	}
	if data == nil {
		m, err := io.ReadFull(io.NewSectionReader(f, 0, int64(len(buf))), buf)
		if err != io.ErrUnexpectedEOF && err != io.EOF || int64(m) != f.Stat.Size {
			return 0, ""
		}
		data = buf[:m]
		// Read now, not the bytes the verdict was made from: checked as a
		// READ's are (a store through a shared mapping moves no ctime).
		if !v.admit.Check(g, f, id, res.Masks, admit.Window{Bytes: data, AtEOF: true, Head: data[:min(4, m)], To: int64(m)}) {
			v.admit.Forget(g, id)
			return 0, ""
		}
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
