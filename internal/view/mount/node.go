package mount

import (
	"context"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/fsguard/fsguard/internal/view/warm"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is one entry beneath a root: a directory, a regular file or an
// admitted symbolic link. It holds neither a descriptor nor a path: its
// path is where the kernel's tree of names puts it now (see where), so a
// rename in the backing tree, once the kernel looked the new name up,
// moves the node and everything below it, and every operation is decided
// afresh beneath the root's descriptor.
type node struct {
	fs.Inode
	v    *view
	root string // root name
	// base is the node of the root's top directory (itself for that one).
	base *node
	// top is the root's path as a caller in the mount names it: "/" for a
	// single-root mount, "/name" for one root of several. Set on base only.
	top string
	// key is the backing identity the node's inode number stands for.
	key idKey
	// index: the node is a repository's .git/index, served rewritten.
	index bool
	// listed: the directory was listed before (see admit.Keep.Known).
	listed atomic.Bool
	// dropped: the watch dropped the kernel's listing of the directory
	// since it was listed (see listing.load).
	dropped atomic.Bool
	// buried: the kernel was told the directory is deleted (see
	// view.bury); forgotten: the kernel forgot the node. Both under
	// view.idMu.
	buried, forgotten bool
	// told is the version of the file the kernel was last told of: its
	// attributes (LOOKUP, GETATTR), its bytes (READ, a push), or an error
	// (the zero identity); nil: none yet. See view.push.
	told atomic.Pointer[fileid.Identity]
	// held is the warming engine's mark: the version of the file whose
	// bytes the kernel was last given whole (a push, a READ), and when;
	// nil while a push of it is queued, or once a refill took it (see
	// warm.Engine.ReadOf).
	held atomic.Pointer[warm.Held]
}

// tell notes that the kernel is told of version id.
func (n *node) tell(id fileid.Identity) {
	if p := n.told.Load(); p == nil || *p != id {
		n.told.Store(&id)
	}
}

// toldOnly reports whether the kernel was never told of a version but id
// (or of none yet, and then notes id as told).
func (n *node) toldOnly(id fileid.Identity) bool {
	if n.told.CompareAndSwap(nil, &id) {
		return true
	}
	p := n.told.Load()
	return p != nil && *p == id
}

var (
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeGetattrer      = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeReadlinker     = (*node)(nil)
	_ fs.NodeStatfser       = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeSymlinker      = (*node)(nil)
	_ fs.NodeSetxattrer     = (*node)(nil)
	_ fs.NodeGetxattrer     = (*node)(nil)
	_ fs.NodeRemovexattrer  = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
	_ fs.NodeAllocater      = (*node)(nil)
	_ fs.NodeOnForgetter    = (*node)(nil)
)

func fuseCaller(ctx context.Context) *fuse.Caller {
	if c, ok := fuse.FromContext(ctx); ok {
		return c
	}
	return nil
}

// newBase makes the node of a root's top directory.
func newBase(v *view, root, top string) *node {
	n := &node{v: v, root: root, top: top}
	n.base = n
	return n
}

// where returns the node's path relative to its root ("." for the root)
// and as a caller in the mount names it. ok is false when no name leads
// to the node any more (its entry was removed from the backing tree while
// the kernel still holds it): such a node resolves nothing.
func (n *node) where() (rel, shown string, ok bool) {
	if n == n.base {
		return ".", n.top, true
	}
	segs, ok := namesDown(&n.base.Inode, &n.Inode)
	if !ok {
		return "", "", false
	}
	rel = strings.Join(segs, "/")
	return rel, path.Join(n.base.top, rel), true
}

// namesDown returns the names that lead from top down to in, by the
// kernel's tree of names; ok is false when none leads there any more.
func namesDown(top, in *fs.Inode) (segs []string, ok bool) {
	for p := in; p != top; {
		name, parent := p.Parent()
		if parent == nil {
			return nil, false
		}
		segs = append(segs, name)
		p = parent
	}
	slices.Reverse(segs)
	return segs, true
}

// statNow stats what the node's name in the kernel's tree (see where)
// leads to now (roots.Root.StatNow: one fstatat, a check of a version or
// an identity, never an admission), and returns the guard it resolved
// under. ok is false when no name leads to the node or nothing is there.
func (n *node) statNow(st *unix.Stat_t) (g *roots.Guard, ok bool) {
	g, p, errno := n.resolve()
	return g, errno == 0 && p.Root.StatNow(p.Rel, st) == nil
}

// is reports whether st is of the backing file k stands for.
func (k idKey) is(st *unix.Stat_t) bool { return st.Dev == k.dev && st.Ino == k.ino }

// stillNamed reports whether the node's name still leads to the backing
// file it stands for: a hard link's other name does, a name renamed away
// or removed does not. It decides which node a name gets, never what is
// admitted.
func (n *node) stillNamed() bool {
	var st unix.Stat_t
	_, ok := n.statNow(&st)
	return ok && n.key.is(&st)
}

// child returns the path of name in the directory dir.
func child(dir roots.Path, name string) roots.Path {
	return roots.Path{Root: dir.Root, Rel: childRel(dir.Rel, name), Shown: path.Join(dir.Shown, name)}
}

// childRel is child's first result alone, for the listing's hot loop.
func childRel(rel, name string) string {
	if rel == "." {
		return name
	}
	return rel + "/" + name
}

// resolve finds the guard and the path an operation on n works with.
func (n *node) resolve() (*roots.Guard, roots.Path, syscall.Errno) {
	g, r := n.v.root(n.root)
	if r == nil {
		return nil, roots.Path{}, syscall.ENOENT
	}
	rel, shown, ok := n.where()
	if !ok {
		return nil, roots.Path{}, syscall.ENOENT
	}
	return g, roots.Path{Root: r, Rel: rel, Shown: shown}, 0
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	in, _, errno := n.lookup(ctx, name, out, nil, nil)
	return in, errno
}

// place is a directory as a listing resolved it: under guard g, at dir.
type place struct {
	g   *roots.Guard
	dir roots.Path
}

// lookup is Lookup, also returning the entry's own stat. listed (nil:
// none) is the directory the listing being answered resolved, and st the
// name's stat as its admission took it: used under the same guard instead
// of resolving the name again, as is the directory's path (a READDIRPLUS
// looks up each of its names, and walking the directory's names up to the
// root for each was a fortieth of a first grep -r's daemon time).
func (n *node) lookup(ctx context.Context, name string, out *fuse.EntryOut, listed *place, st *unix.Stat_t) (*fs.Inode, *unix.Stat_t, syscall.Errno) {
	defer n.v.timed("lookup", time.Now())
	n.v.saw(ctx)
	changes := n.v.changes.Load()
	var g *roots.Guard
	var p roots.Path
	if listed != nil {
		if g, _ = n.v.root(n.root); g != listed.g {
			listed = nil
		}
	}
	if listed != nil {
		p = listed.dir
	} else {
		var errno syscall.Errno
		if g, p, errno = n.resolve(); errno != 0 {
			return nil, nil, errno
		}
	}
	p = child(p, name)
	rel := p.Rel
	if n.v.hidesMountPoint(p.Root, rel) {
		return nil, nil, syscall.ENOENT
	}
	var e roots.Entry
	var err error
	if listed != nil {
		e.Stat = *st // the guard's Entry of this name, a moment ago
		err = n.v.admit.VisibleByName(g, p, &e.Stat)
	} else {
		// As a listing decides it: by name and place, one resolution
		// for the stat (and the content of a file with other names).
		e, err = n.v.admit.EntryByName(g, p)
	}
	if err != nil {
		errno := n.v.refuse(fuseCaller(ctx), p, err)
		if errno == syscall.ENOENT {
			if n.v.watched() {
				n.v.absent.note(n.EmbeddedInode(), name, out)
			} else {
				// Nothing would say when the name appears: the kernel
				// keeps no negative entry (see negatives.note).
				out.SetEntryTimeout(time.Nanosecond)
			}
		}
		return nil, nil, errno
	}
	fillAttr(&out.Attr, &e.Stat)
	key := idKey{e.Stat.Dev, e.Stat.Ino, e.Stat.Mode & unix.S_IFMT}
	out.Attr.Ino = n.v.ino(key)
	c := &node{v: n.v, root: n.root, base: n.base, key: key}
	if _, ok := isIndex(rel); ok && e.Stat.Mode&unix.S_IFMT == unix.S_IFREG {
		c.index = true
		n.v.indexSize(g, p, &e.Stat, &out.Attr)
	}
	// go-fuse keeps the node it already has for these stable attributes,
	// if any, and drops c once Lookup returns: the one to remember is
	// the node kept.
	id := fs.StableAttr{Mode: key.typ, Ino: out.Attr.Ino}
	var had *fs.Inode
	renamed := false
	if ch := n.GetChild(name); ch != nil && ch.StableAttr().Ino == id.Ino {
		had, id = ch, ch.StableAttr()
	} else if held := n.v.held(id.Ino); held != nil {
		// A file or directory the kernel holds under another name. If
		// that name no longer leads to it, it was renamed and the watch
		// has not told the kernel yet, or it was removed and its number
		// is another's now (ext4 gives a new directory the number just
		// freed; a checkout removes and makes directories). Merged, the
		// old name's cached entry would open the file by its new name
		// (see where), so a name that failed once would work again, and a
		// directory would be the old one the kernel holds, whose name
		// leads nowhere: its listing failed with ENOENT. The new name
		// gets a node of its own (another generation, the same st_ino),
		// and the old one resolves nothing. If the old name still leads
		// to it, a file is a hard link: one node, as natively.
		switch {
		case !held.stillNamed():
			id.Gen, renamed = held.StableAttr().Gen+1, true
		case key.typ != unix.S_IFDIR:
			had, id = &held.Inode, held.StableAttr()
		}
	}
	if live := n.v.liveGen(id.Ino); id.Gen < live {
		// A directory the kernel was told is deleted: see view.bury.
		had, id.Gen, renamed = nil, live, true
	}
	ino := n.NewInode(ctx, c, id)
	if had != nil {
		ino = had
	}
	if kept, ok := ino.Operations().(*node); ok {
		n.v.remember(kept, renamed)
		if key.typ == unix.S_IFREG {
			kept.tell(fileid.Of(&e.Stat))
			if listed == nil && n.v.admit.Undecided(g, &e.Stat) { // a listing's are queued by it
				n.v.undecided(n.EmbeddedInode(), name, fileid.Of(&e.Stat))
			}
		}
	}
	if c.index {
		n.v.git.hold(ino, true)
	}
	if f := n.v.looked.Load(); f != nil {
		(*f)(rel, false)
	}
	if n.v.changes.Load() == changes {
		n.v.cacheEntry(out)
	}
	// Otherwise a change (or a reload) was counted while this name was
	// decided. Its invalidation of the name waits until the kernel has
	// taken this reply in (see apply and replies), and a read may use the
	// reply before it: the timeouts stay zero, so the kernel asks again
	// at the next use.
	// Not a nanosecond: the kernel rounds a timeout up to whole jiffies
	// and keeps an entry through the jiffy after, up to 8 ms at HZ=250,
	// time enough for a second cat.
	if f := n.v.looked.Load(); f != nil {
		(*f)(rel, true)
	}
	return ino, &e.Stat, 0
}

// OnForget runs when the kernel has forgotten the node: its inode number
// is released, so the number map holds only what the kernel holds.
func (n *node) OnForget() {
	n.v.absent.forgetDir(n.EmbeddedInode())
	if c := n.v.open.Load(); c != nil {
		c.drop(n)
	}
	n.v.drop(n)
	n.v.forget(n.key, n.StableAttr().Ino)
	n.v.warm.Forgot(ref{&n.Inode})
	if n.index {
		n.v.git.hold(n.EmbeddedInode(), false)
	}
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.v.saw(ctx)
	defer n.v.timed("getattr", time.Now())
	_, attr := n.v.timeouts()
	out.SetTimeout(attr) // read only with a success
	if h, ok := f.(*handle); ok {
		var st unix.Stat_t
		if err := roots.FstatShown(int(h.f.Fd()), false, &st); err != nil {
			return fs.ToErrno(err)
		}
		fillAttr(&out.Attr, &st)
		if h.synth != nil {
			out.Attr.Size = uint64(len(h.synth))
		}
		out.Attr.Ino = n.StableAttr().Ino
		return 0
	}
	g, p, errno := n.resolve()
	if errno != 0 {
		return errno
	}
	e, err := g.Entry(p.Root, p.Rel)
	if err != nil {
		n.tell(fileid.Identity{})
		return n.v.refuse(fuseCaller(ctx), p, err)
	}
	if e.Stat.Mode&unix.S_IFMT == unix.S_IFREG {
		n.tell(fileid.Of(&e.Stat))
	}
	fillAttr(&out.Attr, &e.Stat)
	if n.index {
		n.v.indexSize(g, p, &e.Stat, &out.Attr)
	}
	out.Attr.Ino = n.StableAttr().Ino
	return 0
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	defer n.v.timed("readlink", time.Now())
	g, p, errno := n.resolve()
	if errno != 0 {
		return nil, errno
	}
	e, err := g.Entry(p.Root, p.Rel)
	if err != nil {
		return nil, n.v.refuse(fuseCaller(ctx), p, err)
	}
	if e.Link == "" {
		return nil, syscall.EINVAL
	}
	return []byte(e.Link), 0
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.v.saw(ctx)
	defer n.v.timed("opendir", time.Now())
	if _, r := n.v.root(n.root); r == nil {
		return nil, 0, syscall.ENOENT
	}
	// Opened by openless when a READDIR comes (the kernel sends no
	// OPENDIR), so the listing is made at the first Readdirent.
	l := &listing{n: n, w: n.v.warm.Listing()}
	if c := fuseCaller(ctx); c != nil {
		// go-fuse reuses request memory once the request is answered.
		cc := *c
		l.caller = &cc
	}
	return l, 0, 0 // the kernel's flags for an open it made itself: see openless
}

// load lists the directory through the guard.
func (l *listing) load() syscall.Errno {
	defer l.n.v.timed("readdir", time.Now())
	n := l.n
	g, p, errno := n.resolve()
	if errno != 0 {
		return errno
	}
	r, rel := p.Root, p.Rel
	changes := n.v.changes.Load()
	var dir *unix.Stat_t
	if e, err := g.Entry(r, rel); err == nil {
		dir = &e.Stat
		l.busy = busy(&e.Stat)
	}
	var list []roots.DirEntry
	listedBefore := n.listed.Load()
	eng := n.v.warm
	if x := eng.TakeAhead(g, p, dir); x != nil && eng.On() && n.listed.CompareAndSwap(x.Known(), true) {
		// Made before this request, and nothing it stands for changed
		// since (see warm's ahead): as if made now.
		l.changes, list, l.again = x.Changes(), x.List(), x.Known()
		l.w = eng.UseAhead(x)
	} else {
		if x != nil {
			// Listed since it was queued, or before and it was not known
			// (see admit.Keep.Known); or no pushes now.
			eng.DropAhead(x)
		}
		l.changes = changes
		var err error
		if list, err = g.List(r, rel); err != nil {
			return n.v.refuse(l.caller, p, err)
		}
		var keep *admit.Keep
		if !l.busy && eng.On() {
			l.again = n.listed.Swap(true)
			keep = l.w.Keep(ref{&n.Inode}, l.again)
		}
		if !l.walk() && (keep == nil || !keep.Known) {
			// An agent's listing that pushes nothing at once decides its
			// files by name and place (see lazy.go); the warm walk's, and
			// one whose files go into the page cache now, read them.
			if keep == nil {
				keep = &admit.Keep{}
			}
			keep.ByName = true
		}
		list = n.v.admit.Shown(g, p, list, func(crel string) bool { return n.v.hidesMountPoint(r, crel) }, keep)
	}
	l.ents = make([]fuse.DirEntry, 0, len(list))
	l.at = place{g, p}
	var dirs []warm.AheadDir
	for _, e := range list {
		l.ents = append(l.ents, fuse.DirEntry{Name: e.Name, Mode: e.Mode, Ino: n.v.ino(idKey{r.Dev, e.Ino, e.Mode & unix.S_IFMT})})
		if e.Stat != nil {
			if l.seen == nil {
				l.seen = make(map[string]*unix.Stat_t)
			}
			l.seen[e.Name] = e.Stat
			if e.Mode == unix.S_IFREG && n.v.admit.Undecided(g, e.Stat) {
				n.v.undecided(&n.Inode, e.Name, fileid.Of(e.Stat))
			}
		}
		if e.Mode == unix.S_IFDIR {
			known, ch := false, n.GetChild(e.Name)
			if ch != nil {
				c, ok := nodeOf(ch)
				known = ok && c.listed.Load()
			}
			dirs = append(dirs, warm.AheadDir{Name: e.Name, Known: known, Node: refOf(ch)})
		}
	}
	// A directory listed again because the watch dropped its listing (an
	// entry came or went) has subdirectories whose listings the kernel
	// most likely still holds: listing them ahead would be wasted. One
	// listed again for no such reason lost it to reclaim, as they did.
	if dropped := n.dropped.Swap(false); len(dirs) > 0 && !l.walk() && (!listedBefore || !dropped) && eng.On() {
		eng.ListAhead(p, dirs)
	}
	l.loaded = true
	return 0
}

// Open, in "kernel" open mode, answers ENOSYS: the kernel then stops
// sending OPEN (and RELEASE) for the whole mount, and an open of a file
// whose pages are cached costs the daemon nothing. The policy is then
// enforced at READ, the only way bytes enter the kernel's cache. In
// "daemon" mode each open is checked here and large files are handed to
// the kernel for passthrough reads.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	defer n.v.timed("open", time.Now())
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND|syscall.O_CREAT) != 0 {
		return nil, 0, syscall.EROFS
	}
	if n.v.kernelOpen {
		return nil, 0, syscall.ENOSYS
	}
	f, res, errno := n.admit(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	h := &handle{f: f, admitted: served{f.Identity(), res.Masks}, v: n.v}
	h.passthrough = n.v.passthrough(f, h.admitted)
	var who *fuse.Caller
	if c := fuseCaller(ctx); c != nil {
		cc := *c // go-fuse reuses request memory once the request is answered
		who = &cc
	}
	h.who = who
	h.recheck = func(st *unix.Stat_t) (sniff.Result, syscall.Errno) {
		g, p, errno := n.resolve()
		if errno != 0 {
			return sniff.Result{}, errno
		}
		now := *h.f
		now.Stat = *st
		res, err := n.v.admit.Decide(g, &now)
		if err != nil {
			if denied(err) {
				n.v.hide(n)
			}
			return sniff.Result{}, n.v.refuse(who, p, err)
		}
		return res, 0
	}
	if n.index {
		if g, p, errno := n.resolve(); errno == 0 {
			if h.synth = n.v.gitIndex(g, p, f); h.synth != nil {
				h.passthrough = false // the kernel must read the rewritten bytes
			}
		}
	}
	// Keep the page cache across opens: with auto_inval_data the kernel
	// still drops it when it sees the file's mtime or size move.
	return h, fuse.FOPEN_KEEP_CACHE, 0
}

// admit opens the node's file through the guard and refuses a content
// class that the policy refuses.
func (n *node) admit(ctx context.Context) (*roots.File, sniff.Result, syscall.Errno) {
	g, p, errno := n.resolve()
	if errno != 0 {
		return nil, sniff.Result{}, errno
	}
	if errno := n.v.recordable(fuseCaller(ctx), p); errno != 0 {
		return nil, sniff.Result{}, errno
	}
	f, err := g.OpenIn(p)
	if err == nil && n.key.ino != 0 && (f.Stat.Ino != n.key.ino || uint64(f.Stat.Dev) != n.key.dev) {
		// The name now names another file (replaced by a rename): this
		// node's pages and size are of a file that is gone from here, and
		// the new file's bytes must not be served under them. The reader
		// gets ESTALE, and the kernel is told to forget the name, so the
		// next open looks it up afresh.
		f.Close()
		if name, parent := n.Parent(); parent != nil {
			n.v.work.Go(func(context.Context) { parent.NotifyEntry(name) }) // never from inside this request
		}
		return nil, sniff.Result{}, syscall.ESTALE
	}
	var res sniff.Result
	if err == nil {
		if res, err = n.v.admit.Decide(g, f); denied(err) {
			n.v.hide(n) // listed by name, refused by content: out of the view
		}
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, sniff.Result{}, n.v.refuse(fuseCaller(ctx), p, err)
	}
	return f, res, 0
}

// Flush answers ENOSYS, so the kernel stops sending FLUSH on every close:
// nothing is ever written, so there is nothing to flush.
func (n *node) Flush(context.Context, fs.FileHandle) syscall.Errno { return syscall.ENOSYS }

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	_, r := n.v.root(n.root)
	if r == nil {
		return syscall.ENOENT
	}
	return statfs(r, out)
}

func statfs(r *roots.Root, out *fuse.StatfsOut) syscall.Errno {
	var st unix.Statfs_t
	if err := r.Use(func(fd int) error { return unix.Fstatfs(fd, &st) }); err != nil {
		return fs.ToErrno(err)
	}
	out.Blocks, out.Bfree, out.Bavail = st.Blocks, st.Bfree, st.Bavail
	out.Files, out.Ffree = st.Files, st.Ffree
	out.Bsize, out.Frsize = uint32(st.Bsize), uint32(st.Frsize)
	out.NameLen = uint32(st.Namelen)
	return 0
}

// Every write answers EROFS. The mount is also MS_RDONLY, so the kernel
// refuses most of these itself; these are the second line.

func (n *node) Setattr(context.Context, fs.FileHandle, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return syscall.EROFS
}
func (n *node) Create(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EROFS
}
func (n *node) Mkdir(context.Context, string, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}
func (n *node) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}
func (n *node) Unlink(context.Context, string) syscall.Errno { return syscall.EROFS }
func (n *node) Rmdir(context.Context, string) syscall.Errno  { return syscall.EROFS }
func (n *node) Rename(context.Context, string, fs.InodeEmbedder, string, uint32) syscall.Errno {
	return syscall.EROFS
}
func (n *node) Link(context.Context, fs.InodeEmbedder, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}
func (n *node) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}
func (n *node) Setxattr(context.Context, string, []byte, uint32) syscall.Errno { return syscall.EROFS }

// Getxattr answers that the view supports no attribute (ENOTSUP), POSIX
// ACLs included: the mode bits shown stand for the backing ACL (see
// roots.Entry.Stat). The kernel caches no answer, but tools do: `ls -l`
// asks for the ACL and security.selinux of every file until a device says
// ENOTSUP, and then stops asking, where ENODATA cost a round trip per file.
func (n *node) Getxattr(context.Context, string, []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}
func (n *node) Removexattr(context.Context, string) syscall.Errno { return syscall.EROFS }
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.EROFS
}
func (n *node) Allocate(context.Context, fs.FileHandle, uint64, uint64, uint32) syscall.Errno {
	return syscall.EROFS
}

// fillAttr copies a backing stat into FUSE attributes.
func fillAttr(a *fuse.Attr, st *unix.Stat_t) {
	a.Size = uint64(st.Size)
	a.Blocks = uint64(st.Blocks)
	a.Atime, a.Atimensec = uint64(st.Atim.Sec), uint32(st.Atim.Nsec)
	a.Mtime, a.Mtimensec = uint64(st.Mtim.Sec), uint32(st.Mtim.Nsec)
	a.Ctime, a.Ctimensec = uint64(st.Ctim.Sec), uint32(st.Ctim.Nsec)
	a.Mode = st.Mode
	a.Nlink = uint32(st.Nlink)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		// A directory's link count would count its hidden subdirectories
		// (.ssh shows as one more link). 1 is the convention for "not
		// counted" (as btrfs reports), which find and du understand.
		a.Nlink = 1
	}
	a.Owner = fuse.Owner{Uid: st.Uid, Gid: st.Gid}
	a.Blksize = uint32(st.Blksize)
}

// listing is an open directory: a snapshot of its visible entries, taken
// at the first READDIR.
type listing struct {
	n      *node
	caller *fuse.Caller
	loaded bool
	ents   []fuse.DirEntry
	pos    int
	// changes is the view's count of changes when the listing was made,
	// and busy says the directory itself had changed just before: see
	// Lookup.
	changes int64
	busy    bool
	// again: the directory was listed before, by this node; the kernel
	// lists it again once it has dropped the listing and, mostly, the
	// pages of its files with it (an idle machine's reclaim).
	again bool
	// seen holds the stats the listing's admission took of its entries,
	// in the directory at: READDIRPLUS's lookups of those names use both
	// (see Lookup).
	seen map[string]*unix.Stat_t
	at   place
	// w is the warming engine's share of the listing: the content of
	// small files its admission read, kept for the pushes after
	// READDIRPLUS, and the pushes of the files its current reply names,
	// handed over at the next request (the kernel has taken the reply in
	// then). req is the current request.
	w   *warm.Listing
	req context.Context
	// loadReq is the request that made the listing (see Lookup).
	loadReq context.Context
}

var (
	_ fs.FileReaddirenter = (*listing)(nil)
	_ fs.FileSeekdirer    = (*listing)(nil)
	_ fs.FileLookuper     = (*listing)(nil)
	_ fs.FileReleasedirer = (*listing)(nil)
)

// quiet is how long a directory must have been unchanged for READDIRPLUS
// to hand the kernel its entries.
const quiet = 2 * time.Second

// busy reports whether the directory whose stat is st changed within
// quiet.
func busy(st *unix.Stat_t) bool { return time.Since(time.Unix(st.Mtim.Unix())) < quiet }

// Lookup answers READDIRPLUS's lookup of one entry. The kernel takes the
// reply in some time after it was made, and an entry in it replaces the
// one the kernel holds for the name. So an entry made just before a
// rename, taken in after a fresher LOOKUP of the name, puts the replaced
// file back under it, and reads of the name get ESTALE until the kernel
// looks it up again; the watch's invalidation, sent before, does not
// help. Three rules keep READDIRPLUS from handing over such an entry:
//   - a name the kernel holds a node for gets no entry: the kernel's is as
//     fresh as the listing's, and the watch keeps it so;
//   - a listing of a directory that was changing when it was made gets no
//     entries at all;
//   - nor does one made before the latest change the watch saw.
//
// A name without an entry is looked up by the kernel itself, afresh, when
// it is used. A quiet tree keeps READDIRPLUS for every name it has not
// seen yet, which is what a first listing is for.
func (l *listing) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	l.begin(ctx)
	if l.busy || l.n.v.changes.Load() != l.changes {
		return nil, syscall.EAGAIN // no entry: not an error the kernel sees
	}
	if ch := l.n.GetChild(name); ch != nil {
		// Its pages may be gone (reclaim is what makes the kernel list a
		// directory again): the content read for the listing still goes
		// in, if it is of the file the node stands for.
		if c, ok := nodeOf(ch); ok {
			l.w.Known(name, ref{ch}, c.key.dev, c.key.ino)
		} else {
			l.w.Known(name, nil, 0, 0)
		}
		return nil, syscall.EAGAIN
	}
	// The listing resolved and stat'ed each file under the guard it
	// names, in this very request: a reload since brings another guard
	// (and counts as a change), and a change the watch saw since is
	// caught above. A later request of the listing (a directory of more
	// entries than one reply holds) resolves each name again: the walker
	// may have paused between them for long, and under load the watch
	// reports a change seconds late (a rename storm beside it), so the
	// counter alone would let a stat from before a rename through. Without
	// a watch nothing would catch one either.
	var at *place
	seen, ok := l.seen[name]
	if ok && l.n.v.watched() && ctx == l.loadReq {
		at = &l.at
	}
	in, st, errno := l.n.lookup(ctx, name, out, at, seen)
	var c warm.Node
	var id fileid.Identity
	if errno == 0 && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1 {
		if _, ok := nodeOf(in); ok {
			c, id = ref{in}, fileid.Of(st)
		}
	}
	l.w.Named(name, c, id, l.first())
	return in, errno
}

func (l *listing) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	l.begin(ctx)
	if !l.loaded {
		if errno := l.load(); errno != 0 {
			return nil, errno
		}
		l.loadReq = ctx
	}
	if l.pos >= len(l.ents) {
		return nil, 0
	}
	e := l.ents[l.pos]
	l.pos++
	e.Off = uint64(l.pos)
	return &e, 0
}

// begin notes the request ctx of the listing: a new one means the kernel
// took the previous reply in, so its pushes are handed over (see
// warm.Listing.HandOver). A request need not start with a Readdirent:
// go-fuse first answers with the entry that did not fit the reply before,
// or with the entries after an interrupted one, and looks those up. Their pushes belong to this
// request's reply, and were lost (the inode unknown, one per reply) when
// handed over with the previous one.
func (l *listing) begin(ctx context.Context) {
	if ctx != l.req {
		l.req = ctx
		l.handOver()
	}
}

// Releasedir hands over what the last reply named. openless releases a
// listing at the request that finds its end, which the kernel sends only
// once it took the reply before in; a listing let go early (another
// reader starting over, an eviction, a FORGET) may hand over pushes of
// nodes the kernel does not know yet or any more, which the kernel
// refuses (counted as "unknown").
func (l *listing) Releasedir(context.Context, uint32) {
	l.handOver()
	l.w.GiveBack() // content for entries never handed over
}

// handOver hands the engine the pushes of files named by replies the
// kernel has taken in.
func (l *listing) handOver() { l.w.HandOver(ref{&l.n.Inode}, l.first()) }

// first reports whether the listing is an agent's first of the directory:
// its pushes are parked (see warm.Listing.HandOver).
func (l *listing) first() bool { return !l.walk() && !l.again }

// walk reports whether the listing is the warm walk's: the daemon's own.
func (l *listing) walk() bool {
	return l.caller != nil && l.n.v.warm.Walks(l.caller.Pid)
}

func (l *listing) Seekdir(_ context.Context, off uint64) syscall.Errno {
	if !l.loaded {
		if errno := l.load(); errno != 0 {
			return errno
		}
	}
	if off > uint64(len(l.ents)) {
		return syscall.EINVAL
	}
	l.pos = int(off)
	return 0
}
