package warm

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"

	"golang.org/x/sys/unix"
)

// ahead lists directories before the kernel asks: when an agent's walker
// lists a directory (for the first time, or again after reclaim took the
// kernel's listings: see the mount's listing.load), the subdirectories
// it shows are listed and their files admitted in the background, the
// next first, so that the walker's READDIRPLUS of each finds the work
// done. A first
// grep -r or find waits on each listing in turn (a listing decides every
// file in it, and go-fuse answers one READDIRPLUS of a directory at a
// time), while the daemon has a core to spare as the walker reads.
//
// A listing made ahead is only a head start: it is used only if nothing
// it stands for changed since. Its directory must still have the stat it
// had before it was listed (an entry created, removed or renamed moves
// the directory's mtime and ctime), the directory must have been quiet
// then (so no change within the timestamps' grain can hide), the watch
// must have reported no change since, the guard must be the same, and
// each file it shows must still have the identity it was admitted with
// (a file changed in place moves no directory time). Otherwise it is
// dropped and the directory is listed afresh, as without it. Its kept
// contents (for the pushes after READDIRPLUS) are bounded in all.
type ahead struct {
	e     *Engine
	mu    sync.Mutex
	lists map[aheadKey]*Ahead // queued, being made, or made
	queue []*Ahead            // not started yet, the next first
	busy  bool                // the worker runs
	// bytes is the content held by lists made and not yet taken.
	bytes atomic.Int64
}

type aheadKey struct{ root, rel string }

// AheadDir is a subdirectory to list ahead, and whether it was listed
// before.
type AheadDir struct {
	Name  string
	Known bool
	Node  Node // the kernel's, if it knows the directory (else nil)
}

// Ahead is one directory listed ahead.
type Ahead struct {
	key     aheadKey
	shown   string
	known   bool // listed before: see admit.Keep.Known
	in      Node // the directory, if the kernel knows it
	started bool
	done    chan struct{} // closed once made (or given up)
	at      time.Time     // when made

	g       *roots.Guard
	changes int64       // the view's count of changes before the listing
	dir     unix.Stat_t // the directory's stat before the listing
	ok      bool        // listed, with the directory quiet
	list    []roots.DirEntry
	held    Listing // kept contents, by name (see Listing.keep)
}

// Known says the directory was listed before (see admit.Keep.Known).
func (x *Ahead) Known() bool { return x.known }

// Changes is the view's count of changes before the listing was made.
func (x *Ahead) Changes() int64 { return x.changes }

// List is the listing's admitted entries.
func (x *Ahead) List() []roots.DirEntry { return x.list }

const (
	// maxAheadQueued bounds the directories waiting to be listed ahead:
	// a walker goes depth first, so the oldest are the furthest off.
	maxAheadQueued = 16
	// maxAheadBytes bounds the content held by lists made ahead.
	maxAheadBytes = 16 << 20
	// aheadTTL is how long a list made ahead waits for the walker.
	aheadTTL = 5 * time.Second
	// maxAheadEntries is the largest directory listed ahead: a list holds
	// a stat for each of its files until the walker comes, which it may
	// never do (an agent's ls of a tree with a cache of 100,000 files).
	maxAheadEntries = 4096
)

func (a *ahead) count(result string) {
	if r := a.e.cfg.ListedAhead; r != nil {
		r(result)
	}
}

// ListAhead asks for the directories dir/name (the subdirectories a
// listing of dir just showed) to be listed ahead, before those queued
// earlier.
func (e *Engine) ListAhead(dir roots.Path, dirs []AheadDir) {
	a := &e.ahead
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lists == nil {
		a.lists = map[aheadKey]*Ahead{}
	}
	a.sweepLocked()
	var add []*Ahead
	for _, d := range dirs {
		c := dir.Join(d.Name)
		k := aheadKey{dir.Root.Name, c.Rel}
		if a.lists[k] != nil {
			continue
		}
		x := &Ahead{key: k, shown: c.Shown, known: d.Known, in: d.Node, done: make(chan struct{})}
		a.lists[k] = x
		add = append(add, x)
	}
	a.queue = append(add, a.queue...)
	for len(a.queue) > maxAheadQueued {
		x := a.queue[len(a.queue)-1]
		a.queue = a.queue[:len(a.queue)-1]
		delete(a.lists, x.key)
		close(x.done)
		a.count("unused")
	}
	if !a.busy && len(a.queue) > 0 {
		a.busy = e.t.Go(a.work)
	}
}

// sweepLocked drops the lists made that waited too long; a.mu is held.
func (a *ahead) sweepLocked() {
	for k, x := range a.lists {
		if x.started && !x.at.IsZero() && time.Since(x.at) > aheadTTL {
			delete(a.lists, k)
			a.drop(x, "unused")
		}
	}
}

// drop gives back what a list made holds.
func (a *ahead) drop(x *Ahead, result string) {
	a.bytes.Add(-int64(x.held.keptBytes))
	x.held.GiveBack()
	a.count(result)
}

func (a *ahead) work(ctx context.Context) {
	for {
		a.mu.Lock()
		if len(a.queue) == 0 || ctx.Err() != nil {
			a.busy = false
			a.mu.Unlock()
			return
		}
		x := a.queue[0]
		a.queue = a.queue[1:]
		x.started = true
		a.mu.Unlock()
		a.make(x)
		a.mu.Lock()
		x.at = time.Now() // under mu: sweepLocked reads it
		a.mu.Unlock()
		close(x.done)
	}
}

// make lists x's directory as the mount's listing.load would, with the
// same guard calls: only the moment differs.
func (a *ahead) make(x *Ahead) {
	t := a.e.t
	g, r := t.Root(x.key.root)
	if r == nil {
		return
	}
	dir, err := g.Entry(r, x.key.rel)
	if err != nil || !dir.IsDir() || t.Busy(&dir.Stat) {
		return
	}
	x.g, x.changes, x.dir = g, t.Changes(), dir.Stat
	list, err := g.List(r, x.key.rel)
	if err != nil || len(list) > maxAheadEntries {
		return // the walker's own listing meets the error (and reports it), or decides the big one itself
	}
	// Each file's content is counted against the budget before it is
	// kept (a check of the total before the listing let one list hold a
	// listing's 8 MiB past it); what the listing then declines to keep
	// gives its share back.
	var reserved atomic.Int64
	known := a.e.readKnown(x.known)
	// As the walker's own listing would decide it (see the mount's
	// lazy.go): by name and place unless its files are pushed now.
	keep := &admit.Keep{Known: known, ByName: !known, Want: a.e.wantedIn(x.in), Fn: func(rel string, id fileid.Identity, data []byte) {
		n := int64(len(data))
		if a.bytes.Add(n) > maxAheadBytes {
			a.bytes.Add(-n)
			return
		}
		reserved.Add(n)
		x.held.keep(rel, id, data)
	}}
	x.list = t.Shown(g, roots.Path{Root: r, Rel: x.key.rel, Shown: x.shown}, list, keep)
	a.bytes.Add(int64(x.held.keptBytes) - reserved.Load())
	x.ok = true
}

// TakeAhead returns the list made ahead of the directory at, if it still
// stands for the directory as it is now: dir is the directory's stat,
// taken by the caller after the list was made, under guard g. A list not
// started yet is left to the caller; one being made is waited for. The
// caller uses it (UseAhead) or drops it (DropAhead).
func (e *Engine) TakeAhead(g *roots.Guard, at roots.Path, dir *unix.Stat_t) *Ahead {
	a := &e.ahead
	r := at.Root
	k := aheadKey{r.Name, at.Rel}
	a.mu.Lock()
	x := a.lists[k]
	if x == nil {
		a.mu.Unlock()
		return nil
	}
	delete(a.lists, k)
	if !x.started {
		for i, q := range a.queue {
			if q == x {
				a.queue = append(a.queue[:i], a.queue[i+1:]...)
				break
			}
		}
		a.mu.Unlock()
		a.count("unused")
		return nil
	}
	a.mu.Unlock()
	<-x.done
	if !x.ok { // given up (a busy directory, an error): nothing to use
		a.drop(x, "unused")
		return nil
	}
	if !x.current(e.t, g, r, dir) {
		a.drop(x, "stale")
		return nil
	}
	return x
}

// UseAhead hands x's kept contents on to the listing that takes its
// place, and returns that listing's share of the engine's work.
func (e *Engine) UseAhead(x *Ahead) *Listing {
	e.ahead.bytes.Add(-int64(x.held.keptBytes))
	e.ahead.count("used")
	l := &x.held
	l.e = e
	return l
}

// DropAhead gives back what x holds: the listing was made afresh.
func (e *Engine) DropAhead(x *Ahead) { e.ahead.drop(x, "unused") }

// current reports whether x stands for the directory as it is now (see
// ahead).
func (x *Ahead) current(t Target, g *roots.Guard, r *roots.Root, dir *unix.Stat_t) bool {
	if !x.ok || dir == nil || x.g != g || t.Changes() != x.changes || time.Since(x.at) > aheadTTL ||
		fileid.Of(dir) != fileid.Of(&x.dir) || dir.Nlink != x.dir.Nlink {
		return false
	}
	for _, e := range x.list {
		if e.Stat == nil {
			continue // not an entry the listing decided (a link): looked up afresh
		}
		// Compared, never trusted: a path that now leads elsewhere gives
		// another identity, and the list is dropped.
		var st unix.Stat_t
		if r.StatNow(r.At(x.key.rel).Join(e.Name).Rel, &st) != nil || fileid.Of(&st) != fileid.Of(e.Stat) {
			return false
		}
	}
	return true
}
