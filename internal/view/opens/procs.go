package opens

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Process is who opened a file, as /proc said while it lived.
type Process struct {
	// Name is the command name (comm, which a process may set itself).
	// "" when the process had exited before it could be named.
	Name string
	// Uid is its filesystem uid; NoUid when it could not be named.
	Uid uint32
	// Cgroup is its cgroup v2 path (a container's scope), or "".
	Cgroup string
}

// NoUid is the uid of a process that could not be named: (uid_t)-1,
// which no process has.
const NoUid = ^uint32(0)

// procs names processes by pid. Each entry keeps /proc/<pid>/comm open:
// reading it again costs one pread and tells both whether the process
// still lives (a descriptor of a dead process reads nothing, even if the
// pid was reused since) and whether it exec'd something else (its name
// changed), so a cached answer is never another process's. It is used
// on the reader's thread only: its descriptors are in that thread's table.
type procs struct {
	m map[uint32]*proc
	// ex names the processes that exited before they could be named
	// here (nil: not known).
	ex *exits
}

type proc struct {
	comm int // a descriptor in the reader's own table
	p    Process
	used time.Time
}

func newProcs() *procs { return &procs{m: map[uint32]*proc{}} }

// maxProcs bounds the descriptors held; sweep closes the idle ones.
const maxProcs = 4096

func (ps *procs) get(pid uint32) Process {
	var buf [64]byte
	e := ps.m[pid]
	if e != nil {
		n, err := unix.Pread(e.comm, buf[:], 0)
		if n > 0 {
			e.used = time.Now()
			if name := string(bytes.TrimRight(buf[:n], "\n")); name != e.p.Name {
				e.p = describe(pid, name) // it exec'd: uid and cgroup may have moved
			}
			return e.p
		}
		_ = err // gone: events still queued are the dead process's, unless the pid is taken again
		fresh := open(pid)
		if fresh == nil {
			return e.p
		}
		unix.Close(e.comm)
		ps.m[pid] = fresh
		return fresh.p
	}
	fresh := open(pid)
	if fresh == nil {
		if ps.ex != nil {
			if p, ok := ps.ex.named(pid); ok {
				return p
			}
		}
		return Process{Uid: NoUid}
	}
	if len(ps.m) >= maxProcs {
		ps.sweepOlder(0)
	}
	ps.m[pid] = fresh
	return fresh.p
}

// open names a live process and keeps its comm open, or returns nil.
func open(pid uint32) *proc {
	fd, err := unix.Open("/proc/"+strconv.FormatUint(uint64(pid), 10)+"/comm", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	var buf [64]byte
	n, _ := unix.Pread(fd, buf[:], 0)
	if n <= 0 {
		unix.Close(fd)
		return nil
	}
	return &proc{comm: fd, p: describe(pid, string(bytes.TrimRight(buf[:n], "\n"))), used: time.Now()}
}

// describe reads the uid and cgroup of a process named name.
func describe(pid uint32, name string) Process {
	p := Process{Name: name, Uid: NoUid}
	dir := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	if b, err := readSmall(dir + "/status"); err == nil {
		for ln := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(ln, "Uid:"); ok {
				// real, effective, saved, filesystem: access is the fsuid's
				if f := strings.Fields(rest); len(f) == 4 {
					if u, err := strconv.ParseUint(f[3], 10, 32); err == nil {
						p.Uid = uint32(u)
					}
				}
				break
			}
		}
	}
	if b, err := readSmall(dir + "/cgroup"); err == nil {
		for ln := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(ln, "0::"); ok {
				p.Cgroup = strings.TrimSpace(rest)
				break
			}
		}
	}
	return p
}

// idle is how long an entry is kept without an open by its process.
const idle = 30 * time.Second

// sweep closes the entries of processes idle for a while.
func (ps *procs) sweep() {
	ps.sweepOlder(idle)
}

func (ps *procs) sweepOlder(olderThan time.Duration) {
	now := time.Now()
	for pid, e := range ps.m {
		if now.Sub(e.used) >= olderThan {
			unix.Close(e.comm)
			delete(ps.m, pid)
		}
	}
}

func (ps *procs) close() {
	ps.sweepOlder(0)
	if ps.ex != nil {
		ps.ex.close()
	}
}

// readSmall reads a small /proc file by system calls alone. It runs on the
// reader's thread, whose descriptor table is its own: nothing in the os
// package may run there that could write a file of the process's (a
// test's log, written through os.Open's hooks, would find it closed in
// this table).
func readSmall(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var out []byte
	buf := make([]byte, 4096)
	for len(out) < 1<<20 {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		out = append(out, buf[:n]...)
	}
	return out, nil
}
