// Package caller owns who is asking: the identity of the process behind one
// request (its uid, gids, pid, pid namespace and command name, as the kernel
// reports them, never as the request claims) and the means to act with that
// identity's own rights.
//
// The daemon runs as root. A request that came through its control socket
// must never be served with root's rights: Caller.Do runs file-system
// operations on a locked OS thread whose fsuid, fsgid and supplementary
// groups are the caller's, so the kernel itself applies mode bits, ACLs and
// directory permissions exactly as for the caller's own open(2). Setting the
// fsuid away from 0 also clears CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
// CAP_FOWNER, CAP_FSETID and CAP_CHOWN from the thread's effective set
// (capabilities(7)), so no root privilege leaks into the operation.
package caller

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Caller is the identity of the process behind one request. It is a value
// made per request (like an *http.Request), never a field of a long-lived
// service that requests take turns to overwrite.
type Caller struct {
	Pid     uint32
	Uid     uint32
	Gid     uint32
	Groups  []uint32 // supplementary groups, as the kernel reported them
	Process string   // command name (/proc/<pid>/comm); "" when unknown
	// PidNS is the inode of the caller's pid namespace: with the uid it
	// tells one container from another (0 when unknown).
	PidNS uint64
}

// Self is the current process.
func Self() *Caller {
	c := &Caller{Pid: uint32(os.Getpid()), Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid()), Process: "fsguard"}
	if gs, err := unix.Getgroups(); err == nil {
		for _, g := range gs {
			c.Groups = append(c.Groups, uint32(g))
		}
	}
	c.PidNS = pidNS("self")
	return c
}

// Owner names the identity a session belongs to: the same session id from
// another uid or another container is another session.
func (c *Caller) Owner() string {
	return fmt.Sprintf("uid:%d pidns:%d", c.Uid, c.PidNS)
}

// InGroup reports whether gid is the caller's primary or a supplementary
// group.
func (c *Caller) InGroup(gid uint32) bool {
	return c.Gid == gid || slices.Contains(c.Groups, gid)
}

// needsSwitch reports whether acting as c takes other credentials than
// the process's own.
func (c *Caller) needsSwitch() bool {
	return c.Uid != uint32(os.Geteuid()) || c.Gid != uint32(os.Getegid()) || !sameGroups(c.Groups)
}

func sameGroups(want []uint32) bool {
	have, err := unix.Getgroups()
	if err != nil || len(have) != len(want) {
		return false
	}
	for _, g := range have {
		if !slices.Contains(want, uint32(g)) {
			return false
		}
	}
	return true
}

// ProcessName reads a process's command name. The process may be gone by
// now; an empty name is the honest answer then.
func ProcessName(pid uint32) string {
	if pid == 0 {
		return ""
	}
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// pidNS reads the inode of a process's pid namespace ("self" or a pid).
func pidNS(who string) uint64 {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+who+"/ns/pid", &st); err != nil {
		return 0
	}
	return st.Ino
}

// Operator reports whether the caller is served as the daemon's operator:
// root, or the daemon's own user. The operator always finds a connection
// and a request slot on the control socket, and `fsguard status` shows it
// the whole daemon; anyone else sees only what its own rights reach.
func (c *Caller) Operator() bool {
	return c != nil && (c.Uid == 0 || c.Uid == uint32(os.Geteuid()))
}
