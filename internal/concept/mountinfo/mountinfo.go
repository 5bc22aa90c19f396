// Package mountinfo reads /proc/<pid>/mountinfo: which file system is
// mounted where, in a process's own mount namespace. One parser serves the
// caller's view of the mount, the mount's own device and stale-mount
// checks, the watch's choice of mechanism, and the mount points a root's
// view must not show (roots).
package mountinfo

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Entry is one line of a mountinfo file.
type Entry struct {
	Dev        string // "major:minor"
	Root       string // the mounted subtree of the filesystem
	MountPoint string
	FSType     string
}

// Read reads /proc/<pid>/mountinfo (pid 0: this process).
func Read(pid int) ([]Entry, error) {
	who := "self"
	if pid > 0 {
		who = strconv.Itoa(pid)
	}
	f, err := os.Open("/proc/" + who + "/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint opts ... - fstype source superopts
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		e := Entry{Dev: fields[2], Root: unescapeMount(fields[3]), MountPoint: unescapeMount(fields[4])}
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) {
				e.FSType = fields[i+1]
			}
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ErrNotVisible: the process does not see the whole mount.
var ErrNotVisible = errors.New("the fsguard mount is not visible to the calling process (a bind of the whole mount is needed); fsguard read over the socket reads through the mount")

// Where finds where process pid sees the mount of device dev
// ("major:minor"): the mount point, in its own mount namespace, of a
// whole mount (root "/") of that device.
func Where(pid int, dev string) (string, error) {
	ents, err := Read(pid)
	if err != nil {
		return "", fmt.Errorf("cannot see the caller's mounts: %v", err)
	}
	for _, e := range ents {
		if e.Dev == dev && e.Root == "/" {
			return e.MountPoint, nil
		}
	}
	return "", ErrNotVisible
}
