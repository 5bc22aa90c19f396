package roots

import (
	"io"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/fsguard/fsguard/fileid"
	"github.com/fsguard/fsguard/refusal"

	"golang.org/x/sys/unix"
)

// File is an admitted, open regular file.
type File struct {
	*os.File
	Name string      // the path in the caller's view, for messages and output
	Root *Root       // the root that holds the real file
	Rel  string      // real path relative to Root
	Real string      // real absolute path
	Stat unix.Stat_t // fstat of the open descriptor at open time
}

// Identity returns the identity of the file as opened.
func (f *File) Identity() fileid.Identity { return fileid.Of(&f.Stat) }

// Restat returns the identity of the open descriptor now.
func (f *File) Restat() (fileid.Identity, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileid.Identity{}, err
	}
	return fileid.Of(&st), nil
}

// ReadAtSized is ReadAt for a file that is as long as it was when
// opened (Stat.Size): a count that reaches that size is taken as the end.
// ReadAt reads again after a short count only to be told EOF, a second
// system call for each small file a cold walker's listing reads whole. A
// count short of both len(b) and the size is read on, as ReadAt would.
func (f *File) ReadAtSized(b []byte, off int64) (int, error) {
	n, err := f.pread(b, off)
	if err != nil || n == len(b) || off+int64(n) >= f.Stat.Size {
		return n, err
	}
	m, err := f.ReadAt(b[n:], off+int64(n))
	return n + m, err
}

// pread is one pread(2), with ReadAt's errors: io.EOF for no bytes.
func (f *File) pread(b []byte, off int64) (n int, err error) {
	if len(b) == 0 {
		return 0, nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	if cerr := rc.Read(func(fd uintptr) bool {
		for {
			n, err = unix.Pread(int(fd), b, off)
			if err != unix.EINTR {
				return true
			}
		}
	}); cerr != nil {
		return 0, cerr
	}
	switch {
	case err != nil:
		return 0, &os.PathError{Op: "read", Path: f.Name, Err: err}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func validUTF8(s string) bool { return utf8.ValidString(s) }

// Dir is an admitted directory, open for creating and renaming entries.
type Dir struct {
	*os.File
	Root *Root
	Rel  string // real path relative to Root
}

// OpenParent opens the directory that would hold rel beneath root, for a
// write: the entry's own name must not be denied, and the directory must
// resolve beneath the root to a directory no deny rule matches. It returns
// the directory and the entry's base name.
func (g *Guard) OpenParent(root *Root, rel, display string) (*Dir, string, error) {
	if rel == "." {
		return nil, "", notAFile(display, "directory")
	}
	if g.Denied(root, rel) {
		return nil, "", deniedErr(display)
	}
	name := filepath.Base(rel)
	d, err := g.OpenDir(root, filepath.Dir(rel), filepath.Dir(display))
	if err != nil {
		return nil, "", err
	}
	if g.Denied(root, filepath.Join(d.Rel, name)) {
		d.Close()
		return nil, "", deniedErr(display)
	}
	return d, name, nil
}

// OpenDir opens the directory rel beneath root: it must resolve beneath
// the root (a link on the way may not leave it) to a directory no deny
// rule matches. Whoever works in it by path (git) is given the
// descriptor's /proc/self/fd link, which cannot be swapped under it.
func (g *Guard) OpenDir(root *Root, rel, display string) (*Dir, error) {
	fd, viaLink, err := g.open(root, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err == unix.EXDEV {
		return nil, refusal.Cannot(refusal.OutsideAllowedRoots, display, "a symbolic link on the path leads outside the root")
	}
	if err != nil {
		return nil, g.openErr(err, root, rel, display)
	}
	d := &Dir{File: os.NewFile(uintptr(fd), display), Root: root, Rel: rel}
	if viaLink {
		_, rel2, err := g.landed(fd, root, display)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.Rel = rel2
	}
	if g.Denied(root, d.Rel) {
		d.Close()
		return nil, deniedErr(display)
	}
	return d, nil
}
