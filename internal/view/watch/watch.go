// Package watch owns noticing changes in the backing tree: it turns what
// the kernel reports about the allowed roots (fanotify or inotify) into
// events that name a directory and the entry in it that changed, so that
// the mount can tell the kernel to forget exactly what it cached of them.
//
// It decides nothing about policy and knows nothing of FUSE: an event says
// only where something changed, never what is there now. Everything that
// reads the entry afterwards asks the guard afresh.
package watch

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/mountinfo"
)

// Op is what happened to an entry.
type Op uint8

const (
	// Changed: the entry's content or attributes changed in place.
	Changed Op = iota + 1
	// Added: the name now exists (created, or moved in, possibly over
	// another entry of that name).
	Added
	// Removed: the name went away (deleted, or moved out).
	Removed
	// Lost: the kernel dropped events; anything may have changed.
	Lost
	// Moved: the entry was renamed from FromDir/FromName, as the kernel
	// said (fanotify's FAN_RENAME names both; the inotify watch pairs a
	// rename's halves for its own watches but reports no Moved, see
	// inotify.convert). It comes besides the Removed and the Added of the
	// two names, never instead of them: a consumer that ignores it misses
	// nothing but the pairing. A rename into the roots from outside, or
	// out of them, is no Moved: one of its places is not watched.
	Moved
	// Blind: a directory beneath the roots could not be watched (out of
	// inotify watches, or any error): what changes there is not
	// reported until Sighted. Dir is the first such directory, Name the
	// error. Nothing held from the tree may be trusted meanwhile.
	Blind
	// Sighted: every directory that could not be watched is watched
	// again (retried), or gone.
	Sighted
)

func (o Op) String() string {
	switch o {
	case Changed:
		return "changed"
	case Added:
		return "added"
	case Removed:
		return "removed"
	case Lost:
		return "lost"
	case Moved:
		return "moved"
	case Blind:
		return "blind"
	case Sighted:
		return "sighted"
	}
	return fmt.Sprintf("op(%d)", o)
}

// Event is one change. Dir is the real, absolute path of the directory
// that holds the entry, always inside one of the watched roots; Name is
// the entry. A Lost event has neither.
type Event struct {
	Op   Op
	Dir  string
	Name string
	// FromDir and FromName are where a Moved entry was (FromDir inside a
	// root too); empty for every other Op.
	FromDir, FromName string
}

// Backends, in the order "auto" tries them.
const (
	Fanotify = "fanotify"
	Inotify  = "inotify"
	Auto     = "auto"
)

// Watcher is a running watch over a set of roots.
type Watcher struct {
	backend string
	stop    func() error
	blind   *Event
}

// Backend names the mechanism in use.
func (w *Watcher) Backend() string { return w.backend }

// Blind is the Blind event of a watch that started without watching part
// of the tree (out of inotify watches), nil for one that watches it all.
// No callback reports it; the Sighted that ends it is reported as usual.
func (w *Watcher) Blind() *Event { return w.blind }

// Close stops the watch; no callback runs after it returns.
func (w *Watcher) Close() error { return w.stop() }

// Options tune a watch.
type Options struct {
	// Skip is a path never descended into (the mount point of the view
	// itself, which may lie inside a root).
	Skip string
	// failAdd, in tests, makes adding an inotify watch on a directory
	// fail with its error.
	failAdd func(dir string) error
}

// Start watches the real, absolute directories roots with backend
// ("auto": fanotify where each root is a whole filesystem, else inotify;
// the other if the first cannot be set) and calls fn, from one goroutine, with
// each batch of events. It returns only once the watch is in place, so a
// change made after Start returns is always reported.
func Start(roots []string, backend string, o Options, fn func([]Event)) (*Watcher, error) {
	switch backend {
	case Fanotify:
		return startFanotify(roots, o, fn)
	case Inotify:
		return startInotify(roots, o, fn)
	case Auto, "":
		first, second := startInotify, startFanotify
		if ents, err := mountinfo.Read(0); err == nil && ownFilesystems(roots, ents) {
			first, second = startFanotify, startInotify
		}
		w, err1 := first(roots, o, fn)
		if err1 == nil && w.blind == nil {
			return w, nil
		}
		// The first is blind in part, or failed: the other, if it
		// sees everything, else the blind one, retrying.
		w2, err2 := second(roots, o, fn)
		if err2 == nil && (w2.blind == nil || err1 != nil) {
			if w != nil {
				w.Close()
			}
			return w2, nil
		}
		if w2 != nil {
			w2.Close()
		}
		if err1 == nil {
			return w, nil
		}
		return nil, errors.Join(err1, err2)
	}
	return nil, fmt.Errorf("unknown watch backend %q", backend)
}

// ownFilesystems reports whether each root is the top of a whole
// filesystem's mount. "auto" picks by it: a fanotify filesystem mark
// reports every change on the filesystem, so on a filesystem shared with
// other work (a project directory on /) the daemon would pay for every
// unrelated write, while inotify's per-directory watches cost nothing for
// them. fanotify is chosen only where all it reports is ours.
func ownFilesystems(roots []string, ents []mountinfo.Entry) bool {
	for _, r := range roots {
		owns := false
		for _, e := range ents {
			if e.MountPoint == r {
				owns = e.Root == "/" // the last mount at r is the one in use
			}
		}
		if !owns {
			return false
		}
	}
	return len(roots) > 0
}

// inside reports whether dir is one of roots or beneath one.
func inside(roots []string, dir string) bool {
	for _, r := range roots {
		if within(r, dir) {
			return true
		}
	}
	return false
}

// within reports whether p is top or beneath it.
func within(top, p string) bool {
	return p == top || strings.HasPrefix(p, top) && (strings.HasSuffix(top, "/") || p[len(top)] == '/')
}

// split turns a full path into the event for its parent directory.
func split(op Op, path string) Event {
	return Event{Op: op, Dir: filepath.Dir(path), Name: filepath.Base(path)}
}
