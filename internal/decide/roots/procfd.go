package roots

import (
	"fmt"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// procFD is /proc/self/fd, opened once and held: a reopen names the
// descriptor in it instead of resolving /proc, the self link and fd from
// the root each time (4.5 us against 5.5 us here, for each of the files a
// walker's listing admits).
var procFD = sync.OnceValues(func() (int, error) {
	return unix.Open("/proc/self/fd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
})

// Reopen opens, with flags, the very inode the descriptor fd holds (an
// O_PATH one, typically), through its magic link in /proc/self/fd: the
// kernel checks the open against the rights of whoever calls, as it
// checks any open, and no path is resolved again.
func Reopen(fd, flags int) (int, error) {
	dir, err := procFD()
	if err != nil {
		return retryOpen(func() (int, error) { return unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), flags, 0) })
	}
	return retryOpen(func() (int, error) { return unix.Openat(dir, strconv.Itoa(fd), flags, 0) })
}
