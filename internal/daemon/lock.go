package daemon

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// One daemon per control socket and per mount point. The socket's lock is
// SOCK.lock beside it, held (flock) for the daemon's life and taken before
// the socket is (re)created, so a second daemon refuses, naming the first
// by the pid written in the file, and never removes the live socket. The
// mount point's is a flock on the mount point directory itself, opened
// before the mount covers it: two daemons starting at once on one mount
// point cannot both pass the live-mount check. The kernel drops both locks
// when the daemon dies, so a killed daemon leaves nothing to clear; the
// lock file stays (removing it would let two daemons lock two files).

// lockSocket takes the socket's lock and records this pid in it.
func lockSocket(sock string) (*os.File, error) {
	path := sock + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: its lock %s: %w", sock, path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("control socket %s is served by another fsguard (pid %s, in %s): stop that daemon first, or give this one another --socket", sock, pidOr(strings.TrimSpace(string(b[:n]))), path)
		}
		return nil, fmt.Errorf("control socket %s: locking %s: %w", sock, path, err)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

// lockMountPoint takes the mount point's lock (see above). A mount point
// that cannot be opened is left to the mount to report.
func lockMountPoint(mp string) (*os.File, error) {
	f, err := os.OpenFile(mp, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("mount point %s is being mounted by another fsguard%s: stop that daemon first, or mount elsewhere", mp, holder(mp))
		}
		return nil, fmt.Errorf("mount point %s: locking it: %w", mp, err)
	}
	return f, nil
}

func pidOr(s string) string {
	if _, err := strconv.Atoi(s); err != nil {
		return "unknown"
	}
	return s
}

// holder names the process holding a flock on path, from /proc/locks
// ("1: FLOCK  ADVISORY  WRITE 1234 00:2d:5678 0 EOF").
func holder(path string) string {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return ""
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return ""
	}
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for _, ln := range strings.Split(string(b), "\n") {
		f := strings.Fields(ln)
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == id {
			return " (pid " + f[4] + ")"
		}
	}
	return ""
}
