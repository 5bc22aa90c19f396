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
// While a command opens files, the recorder only takes their events off
// the kernel's queue, names each opener, and keeps each event's
// descriptor. Which file and version each is (a statx and a readlink of
// the descriptor) is worked out in the pause after the command, with the
// batch: naming a first grep -r's 20,000 opens in step with it kept a
// core busy beside it. The descriptors are kept in a descriptor table of
// the reader's thread's own, so they take none of the daemon's and no
// other code in the daemon can be handed one by number.
//
// An Access says that a process opened a file. It does not say that a
// model saw its bytes, and nothing treats it as an observation.
package opens

import (
	"fmt"
	"os"
	"runtime"
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
	// version's attributes as the kernel held them when the open was
	// named, in the pause after the command that made it.
	Ino     uint64
	Size    int64
	MtimeNs int64
	CtimeNs int64
	// Changed says that the file may have changed after the open was
	// taken off the kernel's queue and before it was named (its ctime is
	// later, give or take a tick), so the version above may be newer than
	// the one opened.
	Changed bool
	// Unlinked says that the file had no link left when the open was
	// named: deleted since.
	Unlinked bool
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
	// Seen, when set, is called from the reader each time it takes
	// another process's opens off the queue, before they are named: an
	// open served from the kernel's caches asks the daemon nothing, and
	// this is how its background work learns that a command is running
	// and yields to it. It must not block.
	Seen func()
	// Own, when set, reports whether a process is the daemon's own (a
	// helper child): its opens are neither recorded nor Seen.
	Own func(pid uint32) bool
	// A batch is handed on once no open has arrived for Pause (default
	// 250 ms), or MaxDelay (default 5 s) after its first open, or once it
	// holds half of MaxPending: in the pause after the command that made
	// the opens, not beside it. Appending a walker's opens takes CPU from
	// the walker: the append of a first grep -r's 20,000 was a third of
	// the daemon's CPU during it.
	Pause, MaxDelay time.Duration
	// MaxHeld bounds the event descriptors kept unnamed: at the bound the
	// reader names the oldest at once, beside the command (see overBound).
	// Each is an open file of the mount, in the reader's own descriptor
	// table. Default: what the descriptor limit leaves beside the
	// processes named so far (counted as they come and go) and one read's
	// worth, at most 1<<15.
	MaxHeld int
}

// Recorder is a running record of the opens in one mount.
type Recorder struct {
	fd  int // the fanotify group, non-blocking, never in the netpoller
	cfg Config
	// wake is a pipe whose bytes make the reader look at quit and asks.
	wake [2]int
	self uint32 // the daemon: its own opens (none, but a test's) are not the agent's
	// room is what the descriptor limit leaves for held opens and named
	// processes together (see fdRoom), when MaxHeld is the default; 0
	// when MaxHeld alone bounds.
	room int

	// Only the reader's thread touches these: they are, or hold, numbers
	// in its own descriptor table. fdDir is /proc/thread-self/fd, held
	// open: each new open is named by a readlinkat of its event's
	// descriptor in it, not by resolving the whole path again, which
	// each of a walker's many files would pay.
	fdDir int
	// exitsErr says why exits are not learned from taskstats (nil: they
	// are).
	exitsErr error
	tid      int // the thread, whose table is /proc/self/task/<tid>/fd
	link     []byte
	held     []heldOpen // read, not yet named
	procs    *procs

	mu       sync.Mutex
	pending  map[key]*Access
	nheld    int       // len(held), for deferred
	since    time.Time // when the oldest pending or held open was read
	last     time.Time // when the latest open was read
	lost     Lost
	draining bool            // Drain was called: nothing is held from now on
	quit     bool            // Close was called
	asks     []chan struct{} // asks to name what is held, answered by closing

	done      chan struct{} // the reader is gone, and all it held named
	flushDone chan struct{}
	stop      chan struct{}
}

// heldOpen is an open taken off the kernel's queue, its opener named,
// its file not yet: fd is the event's descriptor, kept until then.
type heldOpen struct {
	fd   int
	pid  uint32
	at   time.Time // when it was read
	proc Process
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
	room := 0
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = 1 << 15
		var lim unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
			room = fdRoom(int(lim.Cur))
			cfg.MaxHeld = max(min(cfg.MaxHeld, room), 1)
		}
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
		fd: fd, cfg: cfg, self: uint32(os.Getpid()), room: room,
		pending: map[key]*Access{}, procs: newProcs(), link: make([]byte, unix.PathMax+1),
		done: make(chan struct{}), flushDone: make(chan struct{}), stop: make(chan struct{}),
	}
	if err := unix.Pipe2(r.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, err
	}
	ready := make(chan error, 1)
	go r.read(ready)
	if err := <-ready; err != nil {
		unix.Close(fd)
		unix.Close(r.wake[0])
		unix.Close(r.wake[1])
		return nil, fmt.Errorf("recording opens: %w", err)
	}
	go r.flushEvery()
	return r, nil
}

// Drain names every open held so far and holds none from now on: call
// it before unmounting, so that no descriptor of the recorder's keeps
// the mount busy.
func (r *Recorder) Drain() {
	r.mu.Lock()
	r.draining = true
	r.mu.Unlock()
	r.nameHeld()
}

// Close stops recording and hands on what is pending.
func (r *Recorder) Close() error {
	r.mu.Lock()
	r.quit = true
	r.mu.Unlock()
	unix.Write(r.wake[1], []byte{0})
	<-r.done
	err := unix.Close(r.fd)
	unix.Close(r.wake[0])
	unix.Close(r.wake[1])
	close(r.stop)
	<-r.flushDone
	return err
}

// nameHeld has the reader name what it holds, and waits for it.
func (r *Recorder) nameHeld() {
	ask := make(chan struct{})
	r.mu.Lock()
	r.asks = append(r.asks, ask)
	r.mu.Unlock()
	unix.Write(r.wake[1], []byte{0})
	select {
	case <-ask:
	case <-r.done: // gone, having named all it held
	}
}

const metaLen = int(unsafe.Sizeof(unix.FanotifyEventMetadata{}))

// read runs on a thread of its own with a descriptor table of its own:
// the kernel puts each event's descriptor there, and the reader keeps it
// until the open is named. Nothing else may run here: a descriptor made
// on this thread means nothing elsewhere in the daemon.
func (r *Recorder) read(ready chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread, and its table, end with the goroutine
	if unix.Gettid() == os.Getpid() {
		// The main thread: /proc/self is its, and the daemon names its
		// descriptors through /proc/self/fd, so this thread's table must
		// stay the daemon's (Start called from the main goroutine often
		// runs the new goroutine here). Start again: while this goroutine
		// holds the thread, the new one runs on another.
		inner := make(chan error, 1)
		go r.read(inner)
		ready <- <-inner
		runtime.UnlockOSThread()
		return
	}
	defer close(r.done)
	r.tid = unix.Gettid()
	if err := r.ownTable(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	defer func() {
		r.nameAll()
		r.procs.close()
		unix.Close(r.fdDir)
	}()
	buf := make([]byte, readBuf)
	// The group's descriptor is polled here, on this goroutine's thread,
	// never registered with Go's netpoller: epoll would stay on the
	// group's wait queue, so every open would wake a thread. Between
	// polls nobody waits, and an open queues its event without a wakeup.
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}, {Fd: int32(r.wake[0]), Events: unix.POLLIN}}
	var drop [64]byte
	// The exits' queue is drained at least each exitDrain, so the socket
	// does not overflow while no open is made.
	wait := -1
	if r.procs.ex.fd >= 0 {
		wait = int(exitDrain / time.Millisecond)
	}
	for {
		ready, err := unix.Poll(fds, wait)
		if err != nil && err != unix.EINTR {
			return
		}
		r.procs.ex.drain()
		if ready <= 0 {
			continue
		}
		if fds[1].Revents != 0 {
			for {
				if n, _ := unix.Read(r.wake[0], drop[:]); n < len(drop) {
					break
				}
			}
			r.mu.Lock()
			quit, asks := r.quit, r.asks
			r.asks = nil
			r.mu.Unlock()
			if quit {
				// What the kernel queued before Close is still recorded.
				for r.queued() {
					r.readOnce(buf)
				}
				return // the deferred nameAll answers the asks
			}
			if len(asks) > 0 {
				r.nameAll()
				r.procs.sweep()
				for _, a := range asks {
					close(a)
				}
			}
			continue
		}
		if n := r.readOnce(buf); n < len(buf)/2 {
			// The queue ran dry. Let the next opens gather in it before
			// polling again: a command's opens then wake this thread some
			// 100 times a second, not once or more per open, and the
			// kernel merges a process's repeated opens of a file meanwhile.
			time.Sleep(settle)
		}
	}
}

// readBuf is the size of one read of the group: at most readBuf/metaLen
// (682) events, each with its descriptor. The reader keeps room for one
// read (see fdRoom), so a smaller read leaves more for held opens.
const readBuf = 16 << 10

// settle is how long the reader lets events gather after the queue ran
// dry. The kernel queues 16,384 before it overflows: filling that within
// settle takes opens far faster than a walker makes them.
const settle = 10 * time.Millisecond

// ownTable gives the calling (locked) thread a descriptor table of its
// own, a copy of the daemon's, and closes in it every copy but the
// group, the wake pipe, the standard streams and the Go runtime's own
// (its epoll and eventfd, which it may use from any thread): a copy
// would keep its file open, the FUSE device's or a deleted file's, for
// the recorder's life. Then it opens fdDir in it. Where the thread may
// not have a table of its own, nothing is held: each batch is named as
// it is read, in the daemon's table.
//
// Files opened on this thread are opened and closed in one call (never
// an *os.File kept: its finalizer would close a number elsewhere).
func (r *Recorder) ownTable() error {
	// A timer makes sure the runtime's poller exists before the copy, so
	// that its descriptors are in it.
	time.NewTimer(time.Hour).Stop()
	if err := unix.Unshare(unix.CLONE_FILES); err != nil {
		r.cfg.MaxHeld = 0
	} else if err := r.closeCopies(); err != nil {
		return err
	}
	var err error
	r.fdDir, err = unix.Open("/proc/thread-self/fd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	// The exits' socket is in this table too: only this thread reads it.
	r.procs.ex, r.exitsErr = newExits()
	return nil
}

// closeCopies closes, in the thread's own table, the copies ownTable
// does not keep.
func (r *Recorder) closeCopies() error {
	// Listed through a descriptor of its own, not os.ReadDir: os.Open's
	// hooks must not run on this thread (see readSmall).
	dfd, err := unix.Open("/proc/thread-self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(dfd), "/proc/thread-self/fd")
	dir, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, e := range dir {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n <= 2 || n == r.fd || n == r.wake[0] || n == r.wake[1] {
			continue
		}
		if l, err := os.Readlink("/proc/thread-self/fd/" + e.Name()); err == nil && (l == "anon_inode:[eventpoll]" || l == "anon_inode:[eventfd]") {
			continue
		}
		unix.Close(n)
	}
	return nil
}

// queued reports whether the group has events queued, without waiting.
func (r *Recorder) queued() bool {
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0
}

// readOnce reads one batch of events and holds them, naming each opener
// (once per batch) while it most likely still lives: its name and cgroup
// are gone from /proc once it is reaped. It returns the bytes read.
func (r *Recorder) readOnce(buf []byte) int {
	n, err := unix.Read(r.fd, buf)
	if err != nil || n <= 0 {
		return 0 // EAGAIN, EINTR, or an event whose descriptor could not be opened
	}
	// now times the batch's waits (since, last) on the monotonic clock, so
	// a step of the wall clock neither hands a batch on early nor holds it;
	// at is the time the records carry.
	now := time.Now()
	at := now.UTC()
	named := map[uint32]Process{}
	overflows, held := 0, len(r.held)
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
			overflows++
		}
		if md.Fd < 0 {
			continue
		}
		pid := uint32(md.Pid)
		if pid == r.self || r.cfg.Own != nil && r.cfg.Own(pid) {
			unix.Close(int(md.Fd))
			continue
		}
		p, ok := named[pid]
		if !ok {
			p = r.procs.get(pid)
			named[pid] = p
		}
		r.held = append(r.held, heldOpen{fd: int(md.Fd), pid: pid, at: at, proc: p})
	}
	r.mu.Lock()
	if overflows > 0 {
		r.lost.Overflows += int64(overflows)
		r.noteLost(at)
	}
	if len(r.held) > held {
		if r.nheld == 0 && len(r.pending) == 0 {
			r.since = now
		}
		r.last = now
	}
	r.nheld = len(r.held)
	all := r.draining
	r.mu.Unlock()
	if len(r.held) > held && r.cfg.Seen != nil {
		r.cfg.Seen()
	}
	switch bound := r.heldBound(); {
	case all:
		r.nameAll()
	case len(r.held) >= bound:
		r.nameOldest(overBound(len(r.held), bound))
	}
	return n
}

// fdRoom is what a descriptor limit of limit leaves the reader's table for
// the opens it holds and the processes it named: not the 64 it may hold
// otherwise (its own, the runtime's), and not one read's worth, read
// before the bound is looked at (each event's descriptor, and one for each
// process first seen in it). The processes are counted as they are named,
// not reserved at their bound of maxProcs: that reserve would take a
// large part of the table from the held opens, and a first walk's opens
// would be named one by one beside it instead of held.
func fdRoom(limit int) int { return limit - 64 - 2*readBuf/metaLen }

// heldBound is the number of held opens at which the reader names the
// oldest: MaxHeld, and with the default, never more than the room the
// named processes leave.
func (r *Recorder) heldBound() int {
	if r.room == 0 || r.cfg.MaxHeld == 0 {
		return r.cfg.MaxHeld
	}
	return max(min(r.cfg.MaxHeld, r.room-len(r.procs.m)), 1)
}

// overBound is how many of held opens to name at once at bound: the
// oldest, down to a read's worth below it (a quarter of a small bound),
// while the command's later opens still wait for its pause; all of them
// when bound is 0 (the reader has no table of its own and holds nothing).
// What is named beside the command is then what passes the bound, and at
// most a read more: naming all at the bound named 15,840 of a 20,001-file
// grep -r's opens beside it, and naming down to three quarters 4,640
// where 1,430 passed it.
func overBound(held, bound int) int {
	return min(held, held-bound+max(min(bound/4, readBuf/metaLen), 1))
}

// noteLost widens the window of the losses; r.mu is held.
func (r *Recorder) noteLost(now time.Time) {
	if r.lost.From.IsZero() {
		r.lost.From = now
	}
	r.lost.To = now
}

// nameAll names the opens held and closes their descriptors; on the
// reader's thread.
func (r *Recorder) nameAll() { r.nameOldest(len(r.held)) }

// nameOldest names the n opens held longest and closes their descriptors;
// on the reader's thread.
func (r *Recorder) nameOldest(n int) {
	for _, h := range r.held[:n] {
		r.name(h)
		unix.Close(h.fd)
	}
	r.held = r.held[:copy(r.held, r.held[n:])]
	r.mu.Lock()
	r.nheld = len(r.held)
	r.mu.Unlock()
}

// name aggregates one held open: a statx of its descriptor (attributes
// the kernel holds; never a FUSE request) and a map probe, and for the
// first open of a version by its process a readlink.
func (r *Recorder) name(h heldOpen) {
	var stx unix.Statx_t
	if err := unix.Statx(h.fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC,
		unix.STATX_TYPE|unix.STATX_INO|unix.STATX_NLINK|unix.STATX_SIZE|unix.STATX_MTIME|unix.STATX_CTIME, &stx); err != nil {
		return
	}
	if stx.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	k := key{pid: h.pid, ino: stx.Ino, size: int64(stx.Size),
		mtimeNs: stx.Mtime.Sec*1e9 + int64(stx.Mtime.Nsec), ctime: stx.Ctime.Sec*1e9 + int64(stx.Ctime.Nsec)}
	r.mu.Lock()
	if a := r.pending[k]; a != nil {
		a.Opens++
		r.mu.Unlock()
		return
	}
	if len(r.pending) >= r.cfg.MaxPending {
		r.lost.Dropped++
		r.noteLost(h.at)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	path := ""
	if n, err := unix.Readlinkat(r.fdDir, strconv.Itoa(h.fd), r.link); err == nil && n < len(r.link) {
		path = string(r.link[:n])
	}
	// A ctime after the read may be a change after the open. A ctime is
	// cut to the kernel's tick, so a change just after the read can show
	// a ctime just before it: a tick of slack, and "may". (A change between
	// the open and its read cannot be told, as before naming waited.)
	a := &Access{Time: h.at, Pid: h.pid, Process: h.proc, Path: path, Opens: 1, Ino: k.ino, Size: k.size,
		MtimeNs: k.mtimeNs, CtimeNs: k.ctime, Changed: k.ctime > h.at.Add(-tick).UnixNano(), Unlinked: stx.Nlink == 0}
	r.mu.Lock()
	r.pending[k] = a // only the reader adds to pending
	r.mu.Unlock()
}

// tick is the coarsest a file's ctime is cut to (a kernel with HZ=100).
const tick = 10 * time.Millisecond

func (r *Recorder) flushEvery() {
	defer close(r.flushDone)
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if !r.deferred() {
				r.nameHeld()
				r.handOn(true)
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
	return r.deferredLocked()
}

// deferredLocked is deferred with r.mu held.
func (r *Recorder) deferredLocked() bool {
	return time.Since(r.last) < r.cfg.Pause && time.Since(r.since) < r.cfg.MaxDelay &&
		len(r.pending)+r.nheld < r.cfg.MaxPending/2 && !r.lost.Any()
}

// Flush names what is held and hands on what is pending now.
func (r *Recorder) Flush() { r.flush() }

// ExitsUnknown says why processes that exit before their opens are taken
// off the queue cannot be named (taskstats unavailable), or nil.
func (r *Recorder) ExitsUnknown() error { return r.exitsErr }

func (r *Recorder) flush() {
	r.nameHeld()
	r.handOn(false)
}

// handOn hands on what is pending. due: only if the batch is still due
// (see deferred) now that what was held is named: the reader may have
// taken a command's first opens off the queue since the tick found
// nothing to wait for (an empty batch is never deferred), and those wait
// for the command's pause like the rest.
func (r *Recorder) handOn(due bool) {
	r.mu.Lock()
	if due && r.deferredLocked() {
		r.mu.Unlock()
		return
	}
	batch, lost := r.pending, r.lost
	r.pending, r.lost = make(map[key]*Access, len(batch)), Lost{}
	r.mu.Unlock()
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
