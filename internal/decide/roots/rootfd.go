package roots

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// A root's descriptor is reference-counted, as os.Root's is: every system
// call made on it holds a reference for its duration, and Close marks the
// root closed but closes the descriptor only when the last call in flight
// is done. After a policy reload, an operation still running on the old
// guard therefore never meets a closed descriptor whose number an
// unrelated open has since reused (a write that lands in the wrong
// directory); a new one on the old guard is refused.

// errClosed: the root was closed (the policy was reloaded) before the call.
var errClosed = errors.New("the root was closed by a policy reload")

type rootFD struct {
	mu     sync.Mutex
	fd     int
	refs   int
	closed bool
}

// hold takes a reference to the descriptor.
func (r *rootFD) hold() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return -1, errClosed
	}
	r.refs++
	return r.fd, nil
}

// drop gives a reference back; the last one of a closed root closes it.
func (r *rootFD) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refs--
	if r.closed && r.refs == 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
}

func (r *rootFD) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	if r.refs == 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
}

// Use runs fn with the root's descriptor, held open for fn's duration.
func (r *Root) Use(fn func(fd int) error) error {
	fd, err := r.rfd.hold()
	if err != nil {
		return err
	}
	defer r.rfd.drop()
	return fn(fd)
}

// StatNow is the stat of what rel, beneath the root, names now, without
// following a final symbolic link. It is not a resolution: a link in the
// middle of rel is followed, wherever it leads. So it only ever confirms
// a version admitted before (the same device, inode, size, mtime and
// ctime: that very file, unchanged since); it never decides on a path.
// One fstatat, where the guard's resolution costs an openat2, an fstat
// and a close: the page-cache pushes ask it of every small file a walker
// lists.
func (r *Root) StatNow(rel string, st *unix.Stat_t) error {
	return r.Use(func(fd int) error {
		return unix.Fstatat(fd, rel, st, unix.AT_SYMLINK_NOFOLLOW)
	})
}
