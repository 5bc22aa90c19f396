package roots

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"unicode/utf8"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/refusal"

	"golang.org/x/sys/unix"
)

// File is an admitted, open regular file.
//
// It holds its descriptor bare, not in an *os.File: os.NewFile asks fcntl
// for the descriptor's flags and offers a nonblocking one (as this one
// is: see Guard.reopen) to the runtime's poller, which refuses a regular
// file, and its Close takes the poller's path out again: two system calls
// of the eight that each file of a cold listing costs. The descriptor is
// guarded as os.File guards its own (see desc). A copy of a File (another
// Stat for the same open file) shares the descriptor, as a copy of one
// holding an *os.File did.
type File struct {
	d     *desc
	Shown string      // the path in the caller's view, for messages and output
	Root  *Root       // the root that holds the real file
	Rel   string      // real path relative to Root
	Real  string      // real absolute path
	Stat  unix.Stat_t // fstat of the open descriptor at open time
}

// Path is the file as a Path: where it really is, shown as it was named.
func (f *File) Path() Path { return Path{Root: f.Root, Rel: f.Rel, Shown: f.Shown} }

// desc is an open descriptor shared by the copies of a File. Each system
// call on it holds mu shared and Close holds it alone and marks it closed,
// so a read that races a Close fails with os.ErrClosed and never reads
// through a number the kernel has given to another open since; one
// dropped without Close is closed by the garbage collector.
type desc struct {
	mu      sync.RWMutex
	fd      int // -1 once closed
	cleanup runtime.Cleanup
}

// newFile wraps fd, an open regular file, as a File.
func newFile(fd int, f File) *File {
	f.d = &desc{fd: fd}
	f.d.cleanup = runtime.AddCleanup(f.d, func(fd int) { unix.Close(fd) }, fd)
	return &f
}

// use runs call with the descriptor held open, or returns os.ErrClosed.
func (f *File) use(call func(fd int) (int, error)) (int, error) {
	f.d.mu.RLock()
	defer f.d.mu.RUnlock()
	if f.d.fd < 0 {
		return 0, os.ErrClosed
	}
	for {
		n, err := call(f.d.fd)
		if err != unix.EINTR { // the runtime's preemption sends signals
			return n, err
		}
	}
}

// Fd returns the descriptor, for system calls the caller makes itself
// while it holds the File open (as os.File.Fd).
func (f *File) Fd() uintptr { return uintptr(f.d.fd) }

// Close closes the descriptor; a second Close returns os.ErrClosed.
func (f *File) Close() error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if f.d.fd < 0 {
		return os.ErrClosed
	}
	f.d.cleanup.Stop()
	err := unix.Close(f.d.fd)
	f.d.fd = -1
	if err != nil {
		return &os.PathError{Op: "close", Path: f.Shown, Err: err}
	}
	return nil
}

// Read reads from the descriptor's offset, as os.File.Read: io.EOF for no
// bytes at the end.
func (f *File) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, err := f.use(func(fd int) (int, error) { return unix.Read(fd, b) })
	return f.result("read", n, err)
}

// ReadAt reads len(b) bytes from off, as os.File.ReadAt: a count short of
// len(b) comes with an error, io.EOF at the end.
func (f *File) ReadAt(b []byte, off int64) (n int, err error) {
	if off < 0 {
		return 0, &os.PathError{Op: "readat", Path: f.Shown, Err: errors.New("negative offset")}
	}
	for len(b) > 0 {
		m, err := f.pread(b, off)
		if err != nil {
			return n, err
		}
		n += m
		b = b[m:]
		off += int64(m)
	}
	return n, nil
}

// result gives a read's count os.File's errors: io.EOF for no bytes.
func (f *File) result(op string, n int, err error) (int, error) {
	switch {
	case err == os.ErrClosed:
		return 0, err
	case err != nil:
		return 0, &os.PathError{Op: op, Path: f.Shown, Err: err}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
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
func (f *File) pread(b []byte, off int64) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, err := f.use(func(fd int) (int, error) { return unix.Pread(fd, b, off) })
	return f.result("read", n, err)
}

func validUTF8(s string) bool { return utf8.ValidString(s) }

// Dir is an admitted directory, open for creating and renaming entries.
type Dir struct {
	*os.File
	Root *Root
	Rel  string // real path relative to Root
}

// OpenParent opens the directory that would hold p, for a write: the
// entry's own name must not be denied, the directory must resolve
// beneath the root to a directory no deny rule matches, and the write
// must not land in git's own files (writeIntoGitDir) nor in the hooks a
// commit runs (writeIntoHooks). It returns the
// directory and the entry's base name. Every write and edit, by every
// door, opens its directory here, and writes through that descriptor.
func (g *Guard) OpenParent(p Path) (*Dir, string, error) {
	if p.Rel == "." {
		return nil, "", notAFile(p.Shown, "directory")
	}
	if g.Denied(p.Root, p.Rel) {
		return nil, "", g.deniedErr(p.Shown)
	}
	name := p.Base()
	d, err := g.OpenDir(p.Parent())
	if err != nil {
		return nil, "", err
	}
	if g.Denied(p.Root, filepath.Join(d.Rel, name)) {
		d.Close()
		return nil, "", g.deniedErr(p.Shown)
	}
	if err := g.writeIntoGitDir(d, name, p.Shown); err != nil {
		d.Close()
		return nil, "", err
	}
	if err := g.writeIntoHooks(d, name, p.Shown, p.Rel); err != nil {
		d.Close()
		return nil, "", err
	}
	return d, name, nil
}

// OpenDir opens the directory p: it must resolve beneath its root (a link
// on the way may not leave it) to a directory no deny rule matches.
// Whoever works in it by path (git) is given the descriptor's
// /proc/self/fd link, which cannot be swapped under it.
func (g *Guard) OpenDir(p Path) (*Dir, error) {
	fd, viaLink, err := g.open(p.Root, p.Rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err == unix.EXDEV {
		return nil, refusal.Of(refusal.LinkOnPathOutside, refusal.OpRead, p.Shown, refusal.Facts{})
	}
	if err != nil {
		return nil, g.openErr(err, p)
	}
	d := &Dir{File: os.NewFile(uintptr(fd), p.Shown), Root: p.Root, Rel: p.Rel}
	if viaLink {
		at, err := g.landed(fd, p, true)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.Rel = at.Rel
	}
	if g.Denied(p.Root, d.Rel) {
		d.Close()
		return nil, g.deniedErr(p.Shown)
	}
	return d, nil
}
