package mount

import (
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// spliceMin is the READ size from which the bytes go from the backing file
// to the kernel by splice: one copy (pipe to /dev/fuse) instead of two
// (pread into the daemon, write to /dev/fuse). A smaller READ (a small
// file's) costs fewer system calls as a pread.
const spliceMin = 64 << 10

// splicedRead answers a READ from an admitted descriptor once the handler
// has returned: go-fuse splices from it as it writes the reply (or preads,
// when it cannot splice), and then calls Done, which ends the READ's use
// of the descriptor. So the descriptor is never closed, and its number
// never reused for another file, while the reply is being made.
type splicedRead struct {
	fd   int
	off  int64
	size int
	done func()
}

// Seekable is what go-fuse splices from.
func (r *splicedRead) Seekable() (uintptr, int64, int) { return uintptr(r.fd), r.off, r.size }

// Bytes reads the bytes when go-fuse does not splice.
func (r *splicedRead) Bytes(buf []byte) ([]byte, fuse.Status) {
	n, err := unix.Pread(r.fd, buf[:min(len(buf), r.size)], r.off)
	if err != nil {
		return nil, fuse.ToStatus(err)
	}
	return buf[:n], fuse.OK
}

func (r *splicedRead) Size() int { return r.size }

func (r *splicedRead) Done() {
	if r.done != nil {
		r.done()
		r.done = nil
	}
}
