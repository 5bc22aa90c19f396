package caller

import (
	"errors"
	"net"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// OfConn returns the process at the other end of a unix socket, as the
// kernel recorded it at connect(2): SO_PEERCRED for pid, uid and gid,
// SO_PEERGROUPS for the supplementary groups. Nothing the peer sends can
// change these. The pid namespace and command name are read from /proc and
// kept only if a pidfd (SO_PEERPIDFD) shows the peer still alive after the
// read, so a recycled pid cannot lend another process's namespace.
func OfConn(c net.Conn) (*Caller, error) { return onFD(c, ofFD) }

// CredsOf is OfConn without the reads of /proc: pid, uid, gid and groups
// only, the kernel's record, enough to decide whether to serve the peer at
// all, at the cost of two getsockopt calls.
func CredsOf(c net.Conn) (*Caller, error) { return onFD(c, credsOfFD) }

// onFD runs of on the descriptor of the unix socket c.
func onFD(c net.Conn, of func(fd int) (*Caller, error)) (*Caller, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, errors.New("not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var out *Caller
	var oerr error
	if err := raw.Control(func(fd uintptr) { out, oerr = of(int(fd)) }); err != nil {
		return nil, err
	}
	return out, oerr
}

func credsOfFD(fd int) (*Caller, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return nil, err
	}
	c := &Caller{Pid: uint32(cred.Pid), Uid: cred.Uid, Gid: cred.Gid}
	if c.Groups, err = peerGroups(fd); err != nil {
		return nil, err
	}
	return c, nil
}

func ofFD(fd int) (*Caller, error) {
	c, err := credsOfFD(fd)
	if err != nil {
		return nil, err
	}
	pid := strconv.Itoa(int(c.Pid))
	ns, name := pidNS(pid), ProcessName(c.Pid)
	if pidfd, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
		alive := unix.PidfdSendSignal(pidfd, 0, nil, 0) == nil
		unix.Close(pidfd)
		if !alive {
			ns, name = 0, ""
		}
	}
	c.PidNS, c.Process = ns, name
	return c, nil
}

// peerGroups reads SO_PEERGROUPS (Linux 4.13+), growing the buffer as the
// kernel asks.
func peerGroups(fd int) ([]uint32, error) {
	buf := make([]uint32, 64)
	for {
		n := uint32(len(buf) * 4)
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		switch e {
		case 0:
			return append([]uint32(nil), buf[:n/4]...), nil
		case unix.ERANGE:
			buf = make([]uint32, n/4+1)
		default:
			return nil, e
		}
	}
}
