package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// inotify watches every directory beneath the roots, one inotify watch
// each (fsnotify does the reading and decoding). New directories get a
// watch as they appear; a directory that moves loses the watches under its
// old name, since inotify would go on reporting them by that name.
type inotify struct {
	w     *fsnotify.Watcher
	roots []string
	skip  string
	dev   map[string]uint64 // root → device: the walk stays on it
	fn    func([]Event)
	done  chan struct{}
}

func startInotify(roots []string, o Options, fn func([]Event)) (*Watcher, error) {
	fw, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &inotify{w: fw, roots: roots, skip: o.Skip, dev: map[string]uint64{}, fn: fn, done: make(chan struct{})}
	for _, r := range roots {
		var st unix.Stat_t
		if err := unix.Stat(r, &st); err != nil {
			fw.Close()
			return nil, fmt.Errorf("inotify: %w", err)
		}
		w.dev[r] = st.Dev
		if err := w.addTree(r); err != nil {
			fw.Close()
			return nil, err
		}
	}
	go w.loop()
	return &Watcher{backend: Inotify, stop: func() error {
		err := fw.Close()
		<-w.done
		return err
	}}, nil
}

// addTree watches dir and every directory beneath it on the same device.
func (w *inotify) addTree(dir string) error {
	var dev uint64
	for r, d := range w.dev {
		if inside([]string{r}, dir) {
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
		if err := w.w.Add(p); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return fmt.Errorf("inotify: out of watches at %s (fs.inotify.max_user_watches): %w", p, err)
			}
			if p == dir {
				return err
			}
		}
		return nil
	})
}

// forget drops the watches on dir and below it.
func (w *inotify) forget(dir string) {
	for _, p := range w.w.WatchList() {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			w.w.Remove(p)
		}
	}
}

func (w *inotify) loop() {
	defer close(w.done)
	for {
		select {
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			// Take what else is queued, so one git checkout is a few
			// batches, and convert each name once, with its operations
			// merged: a name renamed back and forth thousands of times a
			// second (a directory swapped with a link) costs a scan of the
			// watch list per event, which put every other change seconds
			// behind under load.
			var b batch
			b.add(ev)
			for more := true; more; {
				select {
				case ev, ok := <-w.w.Events:
					if !ok {
						more = false
						break
					}
					b.add(ev)
				default:
					more = false
				}
			}
			var evs []Event
			for _, ev := range b.events {
				evs = w.convert(evs, ev)
			}
			if len(evs) > 0 {
				w.fn(evs)
			}
		case err, ok := <-w.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.fn([]Event{{Op: Lost}})
			}
		}
	}
}

func (w *inotify) convert(out []Event, ev fsnotify.Event) []Event {
	dir := filepath.Dir(ev.Name)
	if !inside(w.roots, dir) {
		return out
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		out = append(out, split(Removed, ev.Name))
		w.forget(ev.Name)
	}
	if ev.Has(fsnotify.Create) {
		out = append(out, split(Added, ev.Name))
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			w.forget(ev.Name) // a directory moved here keeps stale names otherwise
			w.addTree(ev.Name)
		}
	}
	if ev.Has(fsnotify.Write) || ev.Has(fsnotify.Chmod) {
		out = append(out, split(Changed, ev.Name))
	}
	return out
}

// batch is the events taken at once, one per name in first-seen order,
// each with every operation seen for that name. Converting the merged
// event reports what converting each would (a removal before an
// addition), and a directory's watches are renewed from its state now.
type batch struct {
	events []fsnotify.Event
	at     map[string]int
}

func (b *batch) add(ev fsnotify.Event) {
	if i, ok := b.at[ev.Name]; ok {
		b.events[i].Op |= ev.Op
		return
	}
	if b.at == nil {
		b.at = map[string]int{}
	}
	b.at[ev.Name] = len(b.events)
	b.events = append(b.events, ev)
}
