package mount

import (
	"context"
	"syscall"
	"time"

	"github.com/fsguard/fsguard/internal/decide/roots"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// top is the mount's root when the policy has several roots: a read-only
// directory whose entries are the roots, by name.
type top struct {
	fs.Inode
	v *view
}

var (
	_ fs.NodeLookuper  = (*top)(nil)
	_ fs.NodeReaddirer = (*top)(nil)
	_ fs.NodeGetattrer = (*top)(nil)
	_ fs.NodeStatfser  = (*top)(nil)
)

func (t *top) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	defer t.v.timed("lookup", time.Now())
	_, r := t.v.root(name)
	if r == nil {
		t.v.absent.note(t.EmbeddedInode(), name, out) // a reload may add it
		return nil, syscall.ENOENT
	}
	var st unix.Stat_t
	if err := r.Use(func(fd int) error { return roots.FstatShown(fd, true, &st) }); err != nil {
		return nil, fs.ToErrno(err)
	}
	fillAttr(&out.Attr, &st)
	t.v.cacheEntry(out)
	key := idKey{st.Dev, st.Ino, unix.S_IFDIR}
	out.Attr.Ino = t.v.ino(key)
	n := newBase(t.v, name, "/"+name)
	n.key = key
	return t.NewInode(ctx, n, fs.StableAttr{Mode: unix.S_IFDIR, Ino: out.Attr.Ino}), 0
}

func (t *top) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	var ents []fuse.DirEntry
	for _, r := range t.v.guard.Load().Roots() {
		ents = append(ents, fuse.DirEntry{Name: r.Name, Mode: unix.S_IFDIR})
	}
	return fs.NewListDirStream(ents), 0
}

func (t *top) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	defer t.v.timed("getattr", time.Now())
	_, attr := t.v.timeouts()
	out.SetTimeout(attr)
	out.Attr.Mode = unix.S_IFDIR | 0o555
	out.Attr.Nlink = uint32(2 + len(t.v.guard.Load().Roots()))
	return 0
}

func (t *top) Statfs(_ context.Context, out *fuse.StatfsOut) syscall.Errno {
	return statfs(t.v.guard.Load().Roots()[0], out)
}
