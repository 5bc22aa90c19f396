package roots

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fsguard/fsguard/internal/concept/mountinfo"

	"golang.org/x/sys/unix"
)

// A root's view is a private clone of the root's mount, detached (no path
// names it, no other process can reach it) and made nodev and nosuid,
// through which a listed file, or a file named by a caller, is opened for
// reading at once (see openNodev): the kernel refuses any device open on
// it before a driver sees it, so the O_PATH resolution and the reopen
// through /proc/self/fd that keep a root daemon from opening a device
// swapped in after a listing are not needed. On a mount that has nodev
// already the root's own descriptor serves; the view gives every other
// root the same one open. It is not made read-only: a write's check that
// the caller could open the file for writing reopens the very descriptor
// it read (session's writable), which a read-only view would refuse
// whatever the tree allows; nothing is opened through the view but for
// reading.
//
// The clone holds only the root's own mount, not those mounted beneath
// it: those it would pin (an unmounted file system kept alive, its
// device not released) and it would miss the ones mounted later. So
// where the tree has a mount beneath the root, the view would show the
// directory under it, which the mount hides; a path through such a mount
// point is never opened through the view. The mount points are the
// process's mount table, read again each time the kernel says it changed
// (mountWatch); a path is judged by the table as last read.

// openView makes the view of the root whose descriptor is rootfd. It fails
// without CAP_SYS_ADMIN (a non-root test) or before Linux 5.12; the root
// then resolves with O_PATH as before.
func openView(rootfd int) (int, error) {
	fd, err := unix.OpenTree(rootfd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, err
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOSUID}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// oneOpen is the descriptor beneath which rel may be opened for reading
// at once: the root's own when its mount has nodev, else its view when
// the view shows what the tree does at rel; nil when neither.
func (r *Root) oneOpen(rel string) *rootFD {
	if r.nodev.Load() {
		return &r.rfd
	}
	if r.view == nil {
		return nil
	}
	beneath, ok := r.mountsBeneath()
	if !ok {
		return nil
	}
	for _, m := range beneath {
		if rel == m || strings.HasPrefix(rel, m+"/") {
			return nil
		}
	}
	return r.view
}

// OneOpen reports whether a listed file beneath the root is admitted with
// one open: its mount had nodev at the last listing, or it has a view.
func (r *Root) OneOpen() bool { return r.nodev.Load() || r.view != nil }

// mountsBeneath returns the mount points strictly beneath the root, as
// paths relative to it, from the mount table as last read; ok is false
// when the table is not being watched.
func (r *Root) mountsBeneath() (rels []string, ok bool) {
	t := mountWatch.table()
	if t == nil {
		return nil, false
	}
	if b := r.beneath.Load(); b != nil && b.of == t {
		return b.rels, true
	}
	b := &beneath{of: t}
	for _, mp := range t.points {
		if rel, in := Within(r.Real, mp); in && rel != "." {
			b.rels = append(b.rels, rel)
		}
	}
	r.beneath.Store(b)
	return b.rels, true
}

// beneath is a root's mount points as derived from one table.
type beneath struct {
	of   *mountTable
	rels []string
}

// mountTable is the mount points of the process's mount namespace.
type mountTable struct{ points []string }

// mountWatch holds the mount table, read again whenever the kernel marks
// /proc/self/mountinfo changed (POLLPRI): one goroutine, started by the
// first root that has a view, waits in poll(2) for that. A table that
// cannot be read, or a watch that fails, leaves no table: views are then
// not used at all.
var mountWatch watchedMounts

type watchedMounts struct {
	once sync.Once
	cur  atomic.Pointer[mountTable]
	mu   sync.Mutex
	read chan struct{} // closed, and replaced, at each table read
}

func (w *watchedMounts) table() *mountTable {
	w.once.Do(w.start)
	return w.cur.Load()
}

func (w *watchedMounts) start() {
	w.read = make(chan struct{})
	// The descriptor is opened before the first read: a change made after
	// the read is then seen by poll, as the kernel compares against the
	// table's state at open.
	fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	if !w.reread() {
		unix.Close(fd)
		return
	}
	go func() {
		defer unix.Close(fd)
		for {
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
			if _, err := unix.Poll(p, -1); err != nil && err != unix.EINTR {
				w.cur.Store(nil)
				return
			}
			if p[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0 && !w.reread() {
				return
			}
		}
	}()
}

// reread reads the mount table and publishes it; on failure it withdraws
// the last one.
func (w *watchedMounts) reread() bool {
	ents, err := mountinfo.Read(0)
	if err != nil {
		w.cur.Store(nil)
		return false
	}
	t := &mountTable{points: make([]string, 0, len(ents))}
	for _, e := range ents {
		t.points = append(t.points, e.MountPoint)
	}
	w.cur.Store(t)
	w.mu.Lock()
	close(w.read)
	w.read = make(chan struct{})
	w.mu.Unlock()
	return true
}

// changed returns a channel closed at the next read of the table (tests
// wait on it for the watch to have seen a mount they made).
func (w *watchedMounts) changed() <-chan struct{} {
	w.once.Do(w.start)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.read
}
