package session

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/fsguard/fsguard/internal/decide/roots"

	"golang.org/x/sys/unix"
)

// temp is the new version of a file while it is being written: an unnamed
// O_TMPFILE inode in the target's directory where the file system has them
// (a write killed before it finishes leaves nothing behind), else a named
// file. Either way it is created by the caller (so it is the caller's) with
// mode 0600, and gets its final owner and mode only once complete. The name
// it will have (name) is chosen at once, so the write's intent can record
// it before the file gets it: a name left by a writer killed before its
// rename is then found at the next start (RemoveTemp).
type temp struct {
	*os.File
	base  string
	name  string // the name it has, or will have, in the directory
	named bool   // it has the name
}

func newTemp(g *roots.Guard, dfd int, base string, noTmpfile bool, named func(name string) error) (*temp, error) {
	t := &temp{base: base, name: tempName(base)}
	fd := -1
	err := g.Do(func() (err error) {
		if noTmpfile {
			return unix.EOPNOTSUPP // as a file system without O_TMPFILE says
		}
		fd, err = unix.Openat(dfd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
		return err
	})
	if err != nil && (errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL)) {
		// A file system without O_TMPFILE: named from the start, and
		// the name recorded first (named), so a kill at any point
		// leaves a name the next start finds.
		if err = named(t.name); err != nil {
			return nil, err
		}
		err = g.Do(func() (err error) {
			fd, err = unix.Openat(dfd, t.name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
			return err
		})
		t.named = err == nil
	}
	if err != nil {
		return nil, err
	}
	t.File = os.NewFile(uintptr(fd), base)
	return t, nil
}

// finish names the complete file (as the caller, in the directory dfd) and
// gives it its final owner and mode: a replaced file keeps its owner and
// group, as an in-place write would, and the mode never keeps a set-user-ID
// or set-group-ID bit (the kernel clears those when a file is written).
// Restoring another owner takes the daemon's CAP_CHOWN, and is done only for
// a file the caller proved it may write (writable).
//
// The owner and mode are set before the file is named: its name appears
// with them.
func (t *temp) finish(g *roots.Guard, dfd int, replaced *roots.File, mode uint32) error {
	fd := int(t.Fd())
	if err := t.settle(fd, replaced, mode); err != nil {
		return err
	}
	if t.named {
		return nil
	}
	if err := g.Do(func() error {
		return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), dfd, t.name, unix.AT_SYMLINK_FOLLOW)
	}); err != nil {
		return err
	}
	t.named = true
	return nil
}

// settle gives the file its final owner and mode (see finish).
func (t *temp) settle(fd int, replaced *roots.File, mode uint32) error {
	if replaced != nil && os.Geteuid() == 0 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if st.Uid != replaced.Stat.Uid || st.Gid != replaced.Stat.Gid {
			if err := unix.Fchown(fd, int(replaced.Stat.Uid), int(replaced.Stat.Gid)); err != nil {
				return err
			}
		}
	}
	return unix.Fchmod(fd, mode&0o777)
}

// writable checks that the caller could open f for writing itself; run it
// with the caller's rights. Opening /proc/self/fd/N reopens the very inode
// that was checked, and without O_TRUNC it changes nothing.
func writable(f *roots.File) error {
	fd, err := roots.Reopen(int(f.Fd()), unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

func tempName(base string) string {
	var b [6]byte
	rand.Read(b[:])
	return "." + base + roots.TempMark + hex.EncodeToString(b[:])
}
