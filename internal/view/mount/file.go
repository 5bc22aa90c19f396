package mount

import (
	"context"
	"sync"
	"syscall"

	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// handle is an open, admitted regular file.
type handle struct {
	f *roots.File
	// recheck re-admits the file's version st when it changed since it
	// was admitted (daemon open mode: a file that became a key under an
	// open handle stops being served, one that now holds a credential is
	// served masked). Nil: never.
	recheck func(st *unix.Stat_t) (sniff.Result, syscall.Errno)
	// v is the view the file is read in (the guard in force checks what
	// each READ serves), who the caller who opened it.
	v   *view
	who *fuse.Caller
	mu  sync.Mutex
	// admitted is the version last admitted, with its masks.
	admitted served
	// passthrough lets the kernel read the backing file directly; the
	// daemon then sees no READ at all for this file. Sniffing has already
	// happened, at OPEN; only the gate sets it (see view.passthrough).
	passthrough bool
	// synth, when set, is what the view shows instead of the file's bytes
	// (a rewritten git index).
	synth []byte
}

// sliceAt is the part of data a READ at off for n bytes gets.
func sliceAt(data []byte, off int64, n int) []byte {
	if off >= int64(len(data)) {
		return nil
	}
	return data[off:min(int64(len(data)), off+int64(n))]
}

var (
	_ fs.FileReader          = (*handle)(nil)
	_ fs.FileReleaser        = (*handle)(nil)
	_ fs.FileGetattrer       = (*handle)(nil)
	_ fs.FilePassthroughFder = (*handle)(nil)
	_ fs.FileLseeker         = (*handle)(nil)
)

func (h *handle) Release(context.Context) syscall.Errno {
	h.f.Close()
	return 0
}

func (h *handle) Getattr(_ context.Context, out *fuse.AttrOut) syscall.Errno {
	var st unix.Stat_t
	if err := roots.FstatShown(int(h.f.Fd()), false, &st); err != nil {
		return fs.ToErrno(err)
	}
	fillAttr(&out.Attr, &st)
	return 0
}

// Lseek serves SEEK_DATA/SEEK_HOLE from the backing file.
func (h *handle) Lseek(_ context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	n, err := unix.Seek(int(h.f.Fd()), int64(off), int(whence))
	return uint64(n), fs.ToErrno(err)
}
