package opens

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// exits learns each process's name as it exits, from the kernel's
// taskstats exit notifications (netlink, root only): the kernel sends the
// exiting task's command name, uid and pid in the message, so a short-lived
// reader (a cat under load) that is gone before its open is taken off the
// fanotify queue is still named. A process whose /proc entry has vanished
// has exited, so its notification is already queued on the socket: the
// reader drains it before it gives up on the name (see procs.get). It is
// used on the reader's thread only: its socket is in that thread's table.
type exits struct {
	fd    int // the netlink socket, non-blocking; -1 when unavailable
	buf   []byte
	m     map[uint32]exited
	order []uint32 // pids in the order they exited, for the bound
	lost  bool     // the socket overflowed at least once (ENOBUFS)
}

type exited struct {
	p  Process
	at time.Time
}

// maxExits bounds the names of exited processes kept, and exitKeep how
// long each is kept: long enough for the reader to take the process's
// opens off the queue under load.
const (
	maxExits = 1 << 14
	exitKeep = time.Minute
)

// exitDrain is the longest the reader leaves the exits' socket undrained.
const exitDrain = time.Second

// newExits registers for the exit notifications of every CPU; without
// taskstats (no CONFIG_TASKSTATS, not root, another network namespace)
// it returns an exits that knows nothing.
func newExits() (*exits, error) {
	e := &exits{fd: -1, m: map[uint32]exited{}}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_GENERIC)
	if err != nil {
		return e, err
	}
	// Room for the exits of a busy machine between two drains.
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return e, err
	}
	e.buf = make([]byte, 64<<10)
	family, err := e.family(fd)
	if err != nil {
		unix.Close(fd)
		return e, err
	}
	mask := cpuMask()
	attr := netlinkAttr(unix.TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, append([]byte(mask), 0))
	if err := request(fd, family, unix.TASKSTATS_CMD_GET, attr); err != nil {
		unix.Close(fd)
		return e, fmt.Errorf("taskstats register %s: %w", mask, err)
	}
	if err := ack(fd, e.buf); err != nil {
		unix.Close(fd)
		return e, fmt.Errorf("taskstats register %s: %w", mask, err)
	}
	e.fd = fd
	return e, nil
}

// cpuMask is every CPU the kernel may bring up ("0-3").
func cpuMask() string {
	if b, err := readSmall("/sys/devices/system/cpu/possible"); err == nil {
		if s := strings.TrimSpace(string(b)); s != "" {
			return s
		}
	}
	return fmt.Sprintf("0-%d", runtime.NumCPU()-1)
}

// family asks the generic netlink controller for taskstats' family id.
func (e *exits) family(fd int) (uint16, error) {
	attr := netlinkAttr(unix.CTRL_ATTR_FAMILY_NAME, append([]byte(unix.TASKSTATS_GENL_NAME), 0))
	if err := request(fd, unix.GENL_ID_CTRL, unix.CTRL_CMD_GETFAMILY, attr); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n, err := recvWait(fd, e.buf, deadline)
		if err != nil {
			return 0, err
		}
		msgs, err := syscall.ParseNetlinkMessage(e.buf[:n])
		if err != nil {
			return 0, err
		}
		for _, m := range msgs {
			if m.Header.Type == unix.NLMSG_ERROR {
				return 0, nlError(m.Data)
			}
			if len(m.Data) < unix.GENL_HDRLEN {
				continue
			}
			for a := range attrs(m.Data[unix.GENL_HDRLEN:]) {
				if a.typ == unix.CTRL_ATTR_FAMILY_ID && len(a.val) >= 2 {
					return binary.NativeEndian.Uint16(a.val), nil
				}
			}
		}
	}
	return 0, fmt.Errorf("taskstats: no answer from the generic netlink controller")
}

// ack waits for the answer to a request (an error message whose code is
// 0 when it succeeded).
func ack(fd int, buf []byte) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n, err := recvWait(fd, buf, deadline)
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Type == unix.NLMSG_ERROR {
				return nlError(m.Data)
			}
		}
	}
	return fmt.Errorf("no answer")
}

func nlError(data []byte) error {
	if len(data) < 4 {
		return fmt.Errorf("short netlink error")
	}
	if code := int32(binary.NativeEndian.Uint32(data)); code != 0 {
		return unix.Errno(-code)
	}
	return nil
}

// recvWait receives one datagram from the non-blocking fd, waiting for
// it until deadline.
func recvWait(fd int, buf []byte, deadline time.Time) (int, error) {
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != unix.EAGAIN {
			return n, err
		}
		ms := int(time.Until(deadline) / time.Millisecond)
		if ms <= 0 {
			return 0, unix.ETIMEDOUT
		}
		unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
	}
}

// request sends one generic netlink request.
func request(fd int, family uint16, cmd uint8, attr []byte) error {
	const hdr = unix.NLMSG_HDRLEN + unix.GENL_HDRLEN
	b := make([]byte, hdr+len(attr))
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], family)
	binary.NativeEndian.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(b[8:], 1)
	b[unix.NLMSG_HDRLEN] = cmd
	b[unix.NLMSG_HDRLEN+1] = 1 // version
	copy(b[hdr:], attr)
	return unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

func netlinkAttr(typ uint16, val []byte) []byte {
	n := unix.NLA_HDRLEN + len(val)
	b := make([]byte, (n+unix.NLA_ALIGNTO-1)&^(unix.NLA_ALIGNTO-1))
	binary.NativeEndian.PutUint16(b[0:], uint16(n))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[unix.NLA_HDRLEN:], val)
	return b
}

type nlattr struct {
	typ uint16
	val []byte
}

// attrs iterates over the netlink attributes in b.
func attrs(b []byte) func(func(nlattr) bool) {
	return func(yield func(nlattr) bool) {
		for len(b) >= unix.NLA_HDRLEN {
			n := int(binary.NativeEndian.Uint16(b[0:]))
			if n < unix.NLA_HDRLEN || n > len(b) {
				return
			}
			if !yield(nlattr{typ: binary.NativeEndian.Uint16(b[2:]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER), val: b[unix.NLA_HDRLEN:n]}) {
				return
			}
			n = (n + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1)
			if n > len(b) {
				return
			}
			b = b[n:]
		}
	}
}

// drain takes every queued exit notification off the socket.
func (e *exits) drain() {
	if e.fd < 0 {
		return
	}
	for {
		n, _, err := unix.Recvfrom(e.fd, e.buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err == unix.ENOBUFS {
			e.lost = true
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		msgs, err := syscall.ParseNetlinkMessage(e.buf[:n])
		if err != nil {
			continue
		}
		now := time.Now()
		for _, m := range msgs {
			if len(m.Data) < unix.GENL_HDRLEN {
				continue
			}
			for a := range attrs(m.Data[unix.GENL_HDRLEN:]) {
				if a.typ != unix.TASKSTATS_TYPE_AGGR_PID {
					continue
				}
				for in := range attrs(a.val) {
					if in.typ == unix.TASKSTATS_TYPE_STATS {
						e.note(in.val, now)
					}
				}
			}
		}
	}
}

// note keeps the name in one struct taskstats.
func (e *exits) note(b []byte, now time.Time) {
	var ts unix.Taskstats
	if len(b) < int(unsafe.Offsetof(ts.Ac_ppid)) {
		return
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts)), b)
	comm := unsafe.Slice((*byte)(unsafe.Pointer(&ts.Ac_comm[0])), len(ts.Ac_comm))
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	if ts.Ac_pid == 0 || len(comm) == 0 {
		return
	}
	if _, ok := e.m[ts.Ac_pid]; !ok {
		e.order = append(e.order, ts.Ac_pid)
	}
	e.m[ts.Ac_pid] = exited{p: Process{Name: string(comm), Uid: ts.Ac_uid}, at: now}
	e.trim(now)
}

// trim forgets the oldest exits beyond the bound or the keep time.
func (e *exits) trim(now time.Time) {
	drop := 0
	for ; drop < len(e.order); drop++ {
		x, ok := e.m[e.order[drop]]
		if ok && len(e.order)-drop <= maxExits && now.Sub(x.at) < exitKeep {
			break
		}
		delete(e.m, e.order[drop])
	}
	if drop > 0 {
		e.order = append(e.order[:0], e.order[drop:]...)
	}
}

// named returns the name of pid, which has exited, if its exit was seen.
func (e *exits) named(pid uint32) (Process, bool) {
	e.drain()
	x, ok := e.m[pid]
	return x.p, ok
}

func (e *exits) close() {
	if e.fd >= 0 {
		unix.Close(e.fd)
		e.fd = -1
	}
}
