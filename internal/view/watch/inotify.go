package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inotify watches every directory beneath the roots, one inotify watch
// each, read from the kernel here rather than through a library: a
// rename's two halves (IN_MOVED_FROM, IN_MOVED_TO) carry one cookie, and
// pairing them keeps the watches beneath a renamed directory, renamed
// with it, so nothing made in it after the move goes unseen (they were
// dropped and the tree walked again); a directory that comes from outside
// gets watches, one that leaves loses them.
//
// A watch names the directory it was added for; which path that is now
// is this watch's own bookkeeping (dirs, wds), kept in step with the
// events in the order the kernel queued them. When the kernel's queue
// overflows that order is broken, so the tree is walked again and every
// watch named afresh before the loss is reported.
type inotify struct {
	f     *os.File
	roots []string
	skip  string
	dev   map[string]uint64 // root → device: the walk stays on it
	dirs  map[int32]string  // watch → the directory it watches now
	wds   map[string]int32  // directory → its watch
	// from holds the first halves of renames not yet paired, by cookie;
	// moving says which watches were beneath a directory in from: their
	// events queued between the two halves happened after the rename, so
	// they wait (in from's held) to be named by the new path.
	from   map[uint32]*moveFrom
	moving map[int32]uint32
	fn     func([]Event)
	done   chan struct{}
	// blind holds the directories that could not be watched, each the top
	// of a tree not watched, with the error; they are tried again each
	// blindRetry (retryAt). blindSaid: Blind was reported and Sighted not
	// yet. started: the first walk is done (a failure in it fails the
	// start instead).
	blind     map[string]error
	blindSaid bool
	retryAt   time.Time
	started   bool
	failAdd   func(dir string) error // Options.failAdd
}

// blindRetry is how often the directories that could not be watched are
// tried again.
const blindRetry = time.Second

// moveFrom is an IN_MOVED_FROM waiting for its IN_MOVED_TO. A
// directory's watches are taken out of the names (wds) meanwhile, with
// their paths below it (under): nothing made at its old path in between
// can be mistaken for them.
type moveFrom struct {
	under map[int32]string
	held  []rawEvent
}

// rawEvent is one inotify record.
type rawEvent struct {
	wd           int32
	mask, cookie uint32
	name         string
}

// inMask is what each directory's watch reports. IN_ONLYDIR and
// IN_DONT_FOLLOW: a directory swapped for a link between the walk's look
// and the watch's addition gets no watch (nor does whatever it points to).
const inMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// pairWait is how long a read that ends with a rename's first half waits
// for the second: the kernel queues the two one after the other, so a
// reader woken between them finds the second at once. A rename out of
// the roots has no second half, and pays this once per batch.
const pairWait = 5 * time.Millisecond

func startInotify(roots []string, o Options, fn func([]Event)) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &inotify{roots: roots, skip: o.Skip, dev: map[string]uint64{}, dirs: map[int32]string{}, wds: map[string]int32{},
		from: map[uint32]*moveFrom{}, moving: map[int32]uint32{}, fn: fn, done: make(chan struct{}), blind: map[string]error{}, failAdd: o.failAdd}
	w.f = os.NewFile(uintptr(fd), "inotify") // non-blocking: Close wakes a pending Read
	for _, r := range roots {
		var st unix.Stat_t
		if err := unix.Stat(r, &st); err != nil {
			w.f.Close()
			return nil, fmt.Errorf("inotify: %w", err)
		}
		w.dev[r] = st.Dev
		if err := w.addTree(r); err != nil {
			w.f.Close()
			return nil, err
		}
	}
	w.started = true
	// Out of watches at start (a root or a directory beneath one): the
	// watch starts blind there, says so (Watcher.Blind), and retries as
	// for a directory made later.
	var blind *Event
	if b := w.sight(nil); len(b) > 0 {
		blind = &b[0]
		w.f.SetReadDeadline(w.retryAt)
	}
	go w.loop()
	return &Watcher{backend: Inotify, blind: blind, stop: func() error {
		err := w.f.Close()
		<-w.done
		return err
	}}, nil
}

// addTree watches dir and every directory beneath it on the same device.
func (w *inotify) addTree(dir string) error {
	var dev uint64
	for r, d := range w.dev {
		if within(r, dir) {
			dev = d
		}
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // gone or unreadable meanwhile: nothing there to watch
		}
		if !d.IsDir() {
			return nil
		}
		if p == w.skip {
			return filepath.SkipDir
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Dev != dev {
			return filepath.SkipDir
		}
		if err := w.add(p); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				err = fmt.Errorf("inotify: out of watches at %s (fs.inotify.max_user_watches): %w", p, err)
			}
			if !w.started && !errors.Is(err, unix.ENOSPC) {
				if p == dir {
					return err
				}
				return nil
			}
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
				// Not watched, and so neither is anything beneath it:
				// reported (Blind) and tried again, the whole tree.
				w.blind[p] = err
			}
			return filepath.SkipDir
		}
		return nil
	})
}

// retryBlind tries again to watch the trees that could not be watched.
func (w *inotify) retryBlind() {
	dirs := make([]string, 0, len(w.blind))
	for d := range w.blind {
		dirs = append(dirs, d)
	}
	clear(w.blind)
	for _, d := range dirs {
		if inside(w.roots, d) {
			w.addTree(d)
		}
	}
	w.retryAt = time.Now().Add(blindRetry)
}

// sight reports a change of whether every directory is watched.
func (w *inotify) sight(out []Event) []Event {
	switch {
	case len(w.blind) > 0 && !w.blindSaid:
		w.blindSaid = true
		w.retryAt = time.Now().Add(blindRetry)
		first, why := "", ""
		for d, err := range w.blind {
			if first == "" || d < first {
				first, why = d, err.Error()
			}
		}
		out = append(out, Event{Op: Blind, Dir: first, Name: why})
	case len(w.blind) == 0 && w.blindSaid:
		w.blindSaid = false
		out = append(out, Event{Op: Sighted})
	}
	return out
}

// add watches dir. A directory watched already under another path (it
// moved while no event said so) keeps its watch, named dir from now on.
func (w *inotify) add(dir string) error {
	if w.failAdd != nil {
		if err := w.failAdd(dir); err != nil {
			return err
		}
	}
	wd, err := unix.InotifyAddWatch(int(w.f.Fd()), dir, inMask)
	if err != nil {
		return err
	}
	id := int32(wd)
	if old, ok := w.dirs[id]; ok && w.wds[old] == id {
		delete(w.wds, old)
	}
	w.dirs[id], w.wds[dir] = dir, id
	return nil
}

// beneath calls fn with each watch on dir or below it.
func (w *inotify) beneath(dir string, fn func(p string, wd int32)) {
	if _, ok := w.wds[dir]; !ok {
		return // not a watched directory: nothing below it is either
	}
	for p, wd := range w.wds {
		if within(dir, p) {
			fn(p, wd)
		}
	}
}

// forget drops the watches on dir and below it.
func (w *inotify) forget(dir string) {
	w.beneath(dir, func(p string, wd int32) {
		w.drop(wd)
		delete(w.wds, p)
	})
}

// drop removes the watch wd from the kernel and from its names.
func (w *inotify) drop(wd int32) {
	unix.InotifyRmWatch(int(w.f.Fd()), uint32(wd))
	delete(w.dirs, wd)
}

// rewatch names every watch afresh from a walk of the roots, after the
// kernel dropped events: directories made meanwhile get watches, moved
// ones their new names, and those gone or moved out lose theirs.
func (w *inotify) rewatch() {
	old := w.dirs
	w.dirs, w.wds = map[int32]string{}, map[string]int32{}
	w.from, w.moving = map[uint32]*moveFrom{}, map[int32]uint32{}
	clear(w.blind) // the walk finds them again
	for _, r := range w.roots {
		w.addTree(r) // a root gone is reported by the walk's events' absence alone
	}
	for wd := range old {
		if _, ok := w.dirs[wd]; !ok {
			w.drop(wd)
		}
	}
}

func (w *inotify) loop() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	var out []Event
	lost, waiting := false, false
	for {
		n, err := w.f.Read(buf)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return // closed
		}
		if err == nil {
			var l bool
			out, l = w.parse(buf[:n], out)
			lost = lost || l
			if len(w.from) > 0 && !lost {
				if !waiting {
					w.f.SetReadDeadline(time.Now().Add(pairWait))
					waiting = true
				}
				continue
			}
		}
		if waiting {
			w.f.SetReadDeadline(time.Time{})
			waiting = false
		}
		w.unpaired()
		if lost {
			w.rewatch()
			out = append(out, Event{Op: Lost})
		}
		if len(w.blind) > 0 && w.blindSaid && !time.Now().Before(w.retryAt) {
			w.retryBlind()
		}
		out = w.sight(out)
		if len(out) > 0 {
			w.fn(out)
		}
		out, lost = nil, false
		if len(w.blind) > 0 {
			w.f.SetReadDeadline(w.retryAt) // wakes to try them again
		} else {
			w.f.SetReadDeadline(time.Time{})
		}
	}
}

// parse decodes one read's worth of records into out; lost says the
// kernel's queue overflowed.
func (w *inotify) parse(b []byte, out []Event) ([]Event, bool) {
	const size = unix.SizeofInotifyEvent
	lost := false
	for len(b) >= size {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		n := size + int(ev.Len)
		if n > len(b) {
			break
		}
		name := string(b[size:n])
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		b = b[n:]
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			lost = true
			continue
		}
		if !lost { // after a loss, the walk names everything afresh
			out = w.convert(out, rawEvent{ev.Wd, ev.Mask, ev.Cookie, name})
		}
	}
	return out, lost
}

// convert turns one record into events, keeping the watches' names in
// step with it.
func (w *inotify) convert(out []Event, ev rawEvent) []Event {
	if c, ok := w.moving[ev.wd]; ok {
		if f := w.from[c]; f != nil {
			f.held = append(f.held, ev) // named once the rename's second half says where
			return out
		}
		delete(w.moving, ev.wd) // cannot be: a rename taken off from takes its watches out of moving
	}
	dir, ok := w.dirs[ev.wd]
	if ev.mask&unix.IN_IGNORED != 0 { // the watch is gone (its directory removed, or rm_watch)
		if ok {
			delete(w.dirs, ev.wd)
			if w.wds[dir] == ev.wd {
				delete(w.wds, dir)
			}
		}
		return out
	}
	if !ok || ev.name == "" || !inside(w.roots, dir) {
		return out
	}
	p := filepath.Join(dir, ev.name)
	isDir := ev.mask&unix.IN_ISDIR != 0
	out = appendOps(out, uint64(ev.mask), dir, ev.name)
	switch {
	case ev.mask&unix.IN_MOVED_FROM != 0:
		f := &moveFrom{under: map[int32]string{}}
		if isDir {
			w.beneath(p, func(q string, wd int32) {
				f.under[wd] = q[len(p):]
				w.moving[wd] = ev.cookie
				delete(w.wds, q)
			})
		}
		w.from[ev.cookie] = f
	case ev.mask&unix.IN_MOVED_TO != 0:
		f, paired := w.from[ev.cookie]
		if !paired {
			if isDir { // from outside the roots
				w.forget(p)
				w.addTree(p)
			}
			return out
		}
		delete(w.from, ev.cookie)
		// The pair is not reported as Moved: the mount following both
		// halves of a storm of exchanges (RENAME_EXCHANGE of a directory
		// and a link, TestLoadWithSymlinkSwaps) grew the daemon's memory
		// well beyond what a removal and an addition cost; until that is
		// understood, a rename on inotify is those two.
		w.forget(p) // an empty directory it replaced
		for wd, q := range f.under {
			w.dirs[wd], w.wds[p+q] = p+q, wd // q is "" or begins with '/'
			delete(w.moving, wd)
		}
		for _, h := range f.held {
			out = w.convert(out, h)
		}
	case ev.mask&unix.IN_CREATE != 0 && isDir:
		w.forget(p) // a directory of that name before: its watches named the old one
		w.addTree(p)
	case ev.mask&unix.IN_DELETE != 0 && isDir:
		w.forget(p)
	}
	return out
}

// unpaired settles the renames whose second half never came: each went
// out of the roots, and a directory's watches go with it (the events
// held for them are of a place no longer watched).
func (w *inotify) unpaired() {
	for c, f := range w.from {
		delete(w.from, c)
		for wd := range f.under {
			w.drop(wd)
			delete(w.moving, wd)
		}
	}
}
