// Package opens records which processes open which files through the
// mount. The daemon puts a fanotify mark on the mount's own superblock, so
// it sees every open of a file in the mount, through every bind of it, in
// every mount namespace (a container's too), after the fact: the opener
// never waits for it and no FUSE request is added (in kernel open mode
// the event's descriptor is opened without asking the daemon).
//
// Opens are aggregated, one Access per process and file version per
// interval, and handed on in batches; when the kernel's event queue
// overflows, that is counted and handed on too, never dropped silently.
//
// An Access says that a process opened a file. It does not say that a
// model saw its bytes, and nothing treats it as an observation.
package opens

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Access is a process's opens of one file version within one interval.
type Access struct {
	Time    time.Time // the first of them
	Pid     uint32    // in the daemon's pid namespace
	Process Process
	// Path is where the opener saw the file: the path in its own mount
	// namespace (a container's /workspace/a.go, not the daemon's).
	Path string
	// Opens is how many opens the kernel reported. It merges a process's
	// repeated opens of a file while they wait in its queue, so this is
	// at least 1 and at most the opens made.
	Opens int64
	// Ino, Size, MtimeNs and CtimeNs are the mount's inode number and the
	// version's attributes as the kernel served them to the opener.
	Ino     uint64
	Size    int64
	MtimeNs int64
	CtimeNs int64
}

// Lost counts opens that could not be recorded one by one between From
// and To: the kernel's queue overflowed (Overflows times; how many opens
// each time is not known) or the pending set was full (Dropped opens).
type Lost struct {
	From, To  time.Time
	Overflows int64
	Dropped   int64
}

// Any reports whether anything was lost.
func (l Lost) Any() bool { return l.Overflows > 0 || l.Dropped > 0 }

// Config tunes a Recorder.
type Config struct {
	// Interval is how often the batch of opens aggregated so far is
	// looked at, to be handed on (default 1 s).
	Interval time.Duration
	// MaxPending bounds the distinct accesses held between flushes
	// (default 1<<16, some 16 MiB); opens beyond it are counted as
	// Dropped. It also bounds the records one interval can add to the
	// journal, however many processes open however many files.
	MaxPending int
	// Emit receives each batch from one goroutine; it may take its time
	// (a journal append) while opens keep being aggregated.
	Emit func([]Access, Lost)
	// A batch is handed on once no open has arrived for Pause (default
	// 250 ms), or MaxDelay (default 5 s) after its first open, or once it
	// holds half of MaxPending: in the pause after the command that made
	// the opens, not beside it. Appending a walker's opens takes CPU from
	// the walker: the append of a first grep -r's 20,000 was a third of
	// the daemon's CPU during it.
	Pause, MaxDelay time.Duration
}

// Recorder is a running record of the opens in one mount.
type Recorder struct {
	fd   int    // the fanotify group, non-blocking, never in the netpoller
	wake [2]int // a pipe: a byte in it stops the reader
	// fdDir is /proc/self/fd, held open: each new open is named by a
	// readlinkat of its event's descriptor in it, not by resolving
	// /proc/self/fd/N from the root again (2.5 µs against 4.3 µs, for
	// each of a walker's thousands of files). link is the reader's
	// buffer for it.
	fdDir int
	link  []byte
	cfg   Config
	self  uint32 // the daemon: its own opens (none, but a test's) are not the agent's

	mu      sync.Mutex
	pending map[key]*Access
	since   time.Time // when the oldest pending open was read
	last    time.Time // when the latest open was read
	lost    Lost

	procs     *procs
	done      chan struct{}
	flushDone chan struct{}
	stop      chan struct{}
}

type key struct {
	pid            uint32
	ino            uint64
	size           int64
	mtimeNs, ctime int64
}

// Start marks the filesystem mounted at mountPoint and records its opens
// until Close.
func Start(mountPoint string, cfg Config) (*Recorder, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 1 << 16
	}
	if cfg.Pause <= 0 {
		cfg.Pause = 250 * time.Millisecond
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = 5 * time.Second
	}
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK, unix.O_RDONLY|unix.O_LARGEFILE|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("recording opens needs fanotify (root, CAP_SYS_ADMIN): %w", err)
	}
	// A filesystem mark, not a mount mark: a container's bind of the mount
	// is another mount of the same superblock.
	if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, unix.FAN_OPEN, unix.AT_FDCWD, mountPoint); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("recording opens: fanotify mark on %s: %w", mountPoint, err)
	}
	r := &Recorder{
		fd: fd, cfg: cfg, self: uint32(os.Getpid()),
		pending: map[key]*Access{}, procs: newProcs(),
		done: make(chan struct{}), flushDone: make(chan struct{}), stop: make(chan struct{}),
	}
	if err := unix.Pipe2(r.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if r.fdDir, err = unix.Open("/proc/self/fd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		unix.Close(fd)
		unix.Close(r.wake[0])
		unix.Close(r.wake[1])
		return nil, fmt.Errorf("recording opens: %w", err)
	}
	r.link = make([]byte, unix.PathMax+1)
	go r.read()
	go r.flushEvery()
	return r, nil
}

// Close stops recording and hands on what is pending.
func (r *Recorder) Close() error {
	unix.Write(r.wake[1], []byte{0})
	<-r.done
	err := unix.Close(r.fd)
	unix.Close(r.wake[0])
	unix.Close(r.wake[1])
	unix.Close(r.fdDir)
	close(r.stop)
	<-r.flushDone
	r.procs.close()
	return err
}

const metaLen = int(unsafe.Sizeof(unix.FanotifyEventMetadata{}))

func (r *Recorder) read() {
	defer close(r.done)
	buf := make([]byte, 64<<10)
	// The group's descriptor is polled here, on this goroutine's thread,
	// never registered with Go's netpoller: epoll would stay on the
	// group's wait queue, so every open would wake a thread. Between
	// polls nobody waits, and an open queues its event without a wakeup.
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}, {Fd: int32(r.wake[0]), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			return
		}
		if fds[1].Revents != 0 {
			// Close: what the kernel queued before it is still recorded.
			for r.queued() {
				r.readOnce(buf)
			}
			return
		}
		r.readOnce(buf)
	}
}

// queued reports whether the group has events queued, without waiting.
func (r *Recorder) queued() bool {
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0
}

// readOnce reads and records one batch of events.
func (r *Recorder) readOnce(buf []byte) {
	n, err := unix.Read(r.fd, buf)
	if err != nil || n <= 0 {
		return // EAGAIN, EINTR, or an event whose descriptor could not be opened
	}
	now := time.Now().UTC()
	// Openers are named once per batch: /proc is read after the events
	// anyway, so naming each of a walker's thousands of opens in one read
	// again would tell nothing more, at a pread each.
	named := map[uint32]Process{}
	for b := buf[:n]; len(b) >= metaLen; {
		md := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&b[0]))
		if md.Event_len < uint32(metaLen) || int(md.Event_len) > len(b) {
			break
		}
		b = b[md.Event_len:]
		if md.Vers != unix.FANOTIFY_METADATA_VERSION {
			continue
		}
		if md.Mask&unix.FAN_Q_OVERFLOW != 0 {
			r.mu.Lock()
			r.lost.Overflows++
			r.noteLost(now)
			r.mu.Unlock()
		}
		if md.Fd >= 0 {
			r.event(int(md.Fd), uint32(md.Pid), now, named)
			unix.Close(int(md.Fd))
		}
	}
}

// noteLost widens the window of the losses; r.mu is held.
func (r *Recorder) noteLost(now time.Time) {
	if r.lost.From.IsZero() {
		r.lost.From = now
	}
	r.lost.To = now
}

// event aggregates one open. A repeat within the interval costs a statx
// (of attributes the kernel holds; never a FUSE request) and a map probe.
// named holds the openers this batch named already.
func (r *Recorder) event(fd int, pid uint32, now time.Time, named map[uint32]Process) {
	if pid == r.self {
		return
	}
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC,
		unix.STATX_TYPE|unix.STATX_INO|unix.STATX_SIZE|unix.STATX_MTIME|unix.STATX_CTIME, &stx); err != nil {
		return
	}
	if stx.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	k := key{pid: pid, ino: stx.Ino, size: int64(stx.Size),
		mtimeNs: stx.Mtime.Sec*1e9 + int64(stx.Mtime.Nsec), ctime: stx.Ctime.Sec*1e9 + int64(stx.Ctime.Nsec)}
	r.mu.Lock()
	r.last = now
	if a := r.pending[k]; a != nil {
		a.Opens++
		r.mu.Unlock()
		return
	}
	full := len(r.pending) >= r.cfg.MaxPending
	if full {
		r.lost.Dropped++
		r.noteLost(now)
	}
	r.mu.Unlock()
	if full {
		return
	}
	// Named while the opener most likely still lives: its name and
	// cgroup are gone from /proc once it is reaped.
	p, ok := named[pid]
	if !ok {
		p = r.procs.get(pid)
		named[pid] = p
	}
	path := ""
	if n, err := unix.Readlinkat(r.fdDir, strconv.Itoa(fd), r.link); err == nil && n < len(r.link) {
		path = string(r.link[:n])
	}
	a := &Access{Time: now, Pid: pid, Process: p, Path: path, Opens: 1, Ino: k.ino, Size: k.size, MtimeNs: k.mtimeNs, CtimeNs: k.ctime}
	r.mu.Lock()
	if b := r.pending[k]; b != nil {
		b.Opens++
	} else {
		if len(r.pending) == 0 {
			r.since = now
		}
		r.pending[k] = a
	}
	r.mu.Unlock()
}

func (r *Recorder) flushEvery() {
	defer close(r.flushDone)
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if !r.deferred() {
				r.flush()
			}
		case <-r.stop:
			r.flush()
			return
		}
	}
}

// deferred reports whether the pending batch waits for a pause in the
// opens (see Config.Pause). Lost opens do not wait: they are news.
func (r *Recorder) deferred() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Since(r.last) < r.cfg.Pause && time.Since(r.since) < r.cfg.MaxDelay &&
		len(r.pending) < r.cfg.MaxPending/2 && !r.lost.Any()
}

// Flush hands on what is pending now.
func (r *Recorder) Flush() { r.flush() }

func (r *Recorder) flush() {
	r.mu.Lock()
	batch, lost := r.pending, r.lost
	r.pending, r.lost = make(map[key]*Access, len(batch)), Lost{}
	r.mu.Unlock()
	r.procs.sweep()
	if len(batch) == 0 && !lost.Any() {
		return
	}
	out := make([]Access, 0, len(batch))
	for _, a := range batch {
		out = append(out, *a)
	}
	sortByTime(out)
	r.cfg.Emit(out, lost)
}

func sortByTime(a []Access) {
	slices.SortFunc(a, func(x, y Access) int { return x.Time.Compare(y.Time) })
}
