package mount

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// ahead lists directories before the kernel asks: when an agent's walker
// lists a directory (for the first time, or again after reclaim took the
// kernel's listings: see listing.load), the subdirectories it shows are
// listed and their files admitted in the background, the next first, so
// that the walker's READDIRPLUS of each finds the work done. A first
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
	v     *view
	mu    sync.Mutex
	lists map[aheadKey]*aheadList // queued, being made, or made
	queue []*aheadList            // not started yet, the next first
	busy  bool                    // the worker runs
	// bytes is the content held by lists made and not yet taken.
	bytes atomic.Int64
	// report, when set, is told of each list's end: "used", "stale"
	// (dropped at the kernel's listing: something changed) or "unused"
	// (dropped unasked: the walker never came, or the queue was full).
	report func(result string)
}

type aheadKey struct{ root, rel string }

// aheadDir is a subdirectory to list ahead, and whether it was listed
// before.
type aheadDir struct {
	name  string
	known bool
	in    *fs.Inode // the kernel's, if it knows the directory
}

// aheadList is one directory listed ahead.
type aheadList struct {
	key     aheadKey
	shown   string
	known   bool      // listed before: see admit.Keep.Known
	in      *fs.Inode // the directory's inode, if the kernel knows it
	started bool
	done    chan struct{} // closed once made (or given up)
	at      time.Time     // when made

	g       *roots.Guard
	changes int64       // the view's count of changes before the listing
	dir     unix.Stat_t // the directory's stat before the listing
	ok      bool        // listed, with the directory quiet
	list    []roots.DirEntry
	held    listing // kept contents, by name (see listing.keep)
}

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
	if a.report != nil {
		a.report(result)
	}
}

// queueDirs asks for the directories dir/name (the subdirectories a
// listing of dir just showed) to be listed ahead, before those queued
// earlier.
func (a *ahead) queueDirs(dir roots.Path, dirs []aheadDir) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lists == nil {
		a.lists = map[aheadKey]*aheadList{}
	}
	a.sweepLocked()
	var add []*aheadList
	for _, d := range dirs {
		c := child(dir, d.name)
		k := aheadKey{dir.Root.Name, c.Rel}
		if a.lists[k] != nil {
			continue
		}
		x := &aheadList{key: k, shown: c.Shown, known: d.known, in: d.in, done: make(chan struct{})}
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
		a.busy = a.v.work.Go(a.work)
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
func (a *ahead) drop(x *aheadList, result string) {
	a.bytes.Add(-int64(x.held.keptBytes))
	x.held.giveBack()
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

// make lists x's directory as listing.load would, with the same guard
// calls: only the moment differs.
func (a *ahead) make(x *aheadList) {
	g, r := a.v.root(x.key.root)
	if r == nil {
		return
	}
	dir, err := g.Entry(r, x.key.rel)
	if err != nil || !dir.IsDir() || busy(&dir.Stat) {
		return
	}
	x.g, x.changes, x.dir = g, a.v.changes.Load(), dir.Stat
	list, err := g.List(r, x.key.rel)
	if err != nil || len(list) > maxAheadEntries {
		return // the walker's own listing meets the error (and reports it), or decides the big one itself
	}
	// Each file's content is counted against the budget before it is
	// kept (a check of the total before the listing let one list hold a
	// listing's 8 MiB past it); what the listing then declines to keep
	// gives its share back.
	var reserved atomic.Int64
	keep := &admit.Keep{Known: a.v.prefetch.readKnown(x.known), Want: a.v.prefetch.wantedIn(x.in), Fn: func(rel string, id fileid.Identity, data []byte) {
		n := int64(len(data))
		if a.bytes.Add(n) > maxAheadBytes {
			a.bytes.Add(-n)
			return
		}
		reserved.Add(n)
		x.held.keep(rel, id, data)
	}}
	x.list = a.v.admit.Shown(g, roots.Path{Root: r, Rel: x.key.rel, Shown: x.shown}, list, func(crel string) bool { return a.v.hidesMountPoint(r, crel) }, keep)
	a.bytes.Add(int64(x.held.keptBytes) - reserved.Load())
	x.ok = true
}

// take returns the list made ahead of the directory at, if it still
// stands for the directory as it is now: dir is the directory's stat,
// taken by the caller after the list was made, under guard g. A list not
// started yet is left to the caller; one being made is waited for.
func (a *ahead) take(g *roots.Guard, at roots.Path, dir *unix.Stat_t) *aheadList {
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
	if !x.current(a.v, g, r, dir) {
		a.drop(x, "stale")
		return nil
	}
	return x // the caller uses it (see use) or drops it
}

// use hands x's kept contents on to the listing that takes its place.
func (a *ahead) use(x *aheadList) {
	a.bytes.Add(-int64(x.held.keptBytes))
	a.count("used")
}

// current reports whether x stands for the directory as it is now (see
// ahead).
func (x *aheadList) current(v *view, g *roots.Guard, r *roots.Root, dir *unix.Stat_t) bool {
	if !x.ok || dir == nil || x.g != g || v.changes.Load() != x.changes || time.Since(x.at) > aheadTTL ||
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
		if r.StatNow(childRel(x.key.rel, e.Name), &st) != nil || fileid.Of(&st) != fileid.Of(e.Stat) {
			return false
		}
	}
	return true
}
