package warm

import (
	"context"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
)

// The refill pushes again what the machine reclaimed. An idle machine
// takes the mount's file pages (this VM's host does after a minute), often
// while the kernel keeps the names and the directories' listings: nothing
// is then listed again, so nothing is pushed again, and a walker sends a
// READ per file, each waiting on the backing file's pages, which went too.
//
// Each node keeps the version whose bytes the kernel was given whole (a
// push, a whole READ) and when (Node.Held). A READ at offset 0 of that
// version, refillAfter or more after it was given, means its pages are
// gone (readOf). The files beside it that were given as long ago are then
// pushed again by the eager workers while it is answered: a walker reads
// them next. Once that is found in a second directory, a walker is
// crossing the tree, and going one directory at a time leaves it a READ
// to wait for in each, on a backing file read from disk. A round then
// pushes again every file of the tree given as long ago (the old marks),
// on workers of its own, so that several files are read from disk at
// once: the walker's directory first, each directory where the walker is
// found next on top, then the rest of the tree, at most the warm walk's
// budget. Each push re-admits its file under the guard in force, checks
// its identity before and after the store, and stores only the version it
// admitted (Target.Push, the gate); a file is taken once, its mark
// cleared, and marked again when pushed.
type refill struct {
	mu      sync.Mutex
	running bool
	dirs    []Node        // to go through, the next last
	queued  map[Node]bool // in dirs this round, or gone through
	// found is the directory of the last reclaim found outside a round.
	found Node
	// started is when the last round started; the next starts the round
	// gap after it at the earliest (see Engine.roundGap).
	started time.Time
}

const (
	// refillAfter: a READ of a version the kernel was given whole longer
	// ago than this finds its pages reclaimed (here the host takes pages
	// idle for a minute); sooner, it is a READ that raced their push.
	refillAfter = 5 * time.Second
	// refillWorkers push a round's files: more than the cores, since
	// after a reclaim each push mostly waits on the disk.
	refillWorkers = 4
	// roundGap bounds how often a round starts. An agent may drop the
	// mount's pages itself (FADV_DONTNEED on a file it opened) and read two
	// files: without a bound, a cheap request every refillAfter would have
	// the daemon read and push the whole tree again each time.
	roundGap = 30 * time.Second
)

// gaveWhole notes that the kernel was given version id of n whole at at,
// by a refill or not.
func gaveWhole(n Node, id fileid.Identity, at time.Time, refill bool) {
	if h := n.Held(); h != nil {
		h.Store(&Held{id, at, refill})
	}
}

// refillAfter is Config.RefillAfter's, or the constant.
func (e *Engine) refillAfter() time.Duration {
	if f := e.cfg.RefillAfter; f != nil {
		return f()
	}
	return refillAfter
}

// roundGap is Config.RoundGap's, or the constant.
func (e *Engine) roundGap() time.Duration {
	if f := e.cfg.RoundGap; f != nil {
		return f()
	}
	return roundGap
}

// longAgo reports whether the kernel was given the bytes h whole
// refillAfter or more before now: a READ of them then finds them reclaimed.
func (p *prefetch) longAgo(h *Held, now time.Time) bool {
	return h != nil && now.Sub(h.At) >= p.e.refillAfter()
}

// takeOld takes c's file for a push again if the kernel was given it
// whole long ago (its mark is cleared: no other refill takes it).
func (p *prefetch) takeOld(c Node, now time.Time) (pushJob, bool) {
	m := c.Held()
	if m == nil {
		return pushJob{}, false
	}
	h := m.Load()
	if !p.longAgo(h, now) || !m.CompareAndSwap(h, nil) {
		return pushJob{}, false
	}
	return pushJob{n: c, id: h.ID, refill: true}, true
}

// wantedIn is the admit.Keep.Want of a listing of dir that reads the
// files whose verdicts are known, for their pushes: the content of a
// version a refill gave the kernel less than refillAfter ago (a round may
// get to a directory before the walker lists it again) is not wanted,
// since its pages went in after the reclaim. Any other mark says nothing
// of the pages: a listing made again lost it to reclaim, which may have
// come at any time since. Nil (every file wanted) for a directory the
// kernel does not know.
func (p *prefetch) wantedIn(dir Node) func(name string, id fileid.Identity) bool {
	if dir == nil {
		return nil
	}
	return func(name string, id fileid.Identity) bool {
		c := dir.Child(name)
		if c == nil {
			return true
		}
		m := c.Held()
		if m == nil {
			return true
		}
		h := m.Load()
		return h == nil || !h.Refill || h.ID != id || p.longAgo(h, time.Now())
	}
}

// ReadOf notes a READ at off, of size bytes, of version id of n, a file
// the kernel opens without asking: one at offset 0 of a version the
// kernel was given whole a while ago finds its pages reclaimed, and has
// the files beside it pushed again, and a round started (see refill).
func (e *Engine) ReadOf(n Node, id fileid.Identity, off int64, size int) {
	p := &e.prefetch
	m := n.Held()
	if off != 0 || id.Size > maxPush || m == nil || !p.on() {
		return
	}
	now := time.Now()
	if h := m.Load(); h != nil && h.ID == id && p.longAgo(h, now) {
		if dir := n.Dir(); dir != nil {
			for _, c := range dir.Children() {
				if c == n {
					continue
				}
				if j, ok := p.takeOld(c, now); ok {
					p.offerKept(j)
				}
			}
			p.refill.foundIn(p, dir)
		}
	}
	if id.Size <= int64(size) {
		gaveWhole(n, id, now, false)
	}
}

// foundIn notes a reclaim found in dir: the round's next directory, or
// the start of one if it is the second directory found.
func (r *refill) foundIn(p *prefetch, dir Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.running:
		r.queue(dir)
	case r.found == nil || r.found == dir || !r.started.IsZero() && time.Since(r.started) < p.e.roundGap():
		r.found = dir
	default:
		r.found, r.running, r.started = nil, true, time.Now()
		r.queued = map[Node]bool{}
		r.queue(dir.Top()) // last: the rest of the tree
		r.queue(dir)
		if !p.e.t.Go(func(ctx context.Context) { r.round(ctx, p) }) {
			r.running, r.dirs, r.queued = false, nil, nil
		}
	}
}

// queue puts dir on top, unless it was queued this round; r.mu is held.
func (r *refill) queue(dir Node) {
	if !r.queued[dir] {
		r.queued[dir] = true
		r.dirs = append(r.dirs, dir)
	}
}

// round pushes again the files of the directories queued, and of their
// subdirectories, that the kernel was given whole refillAfter or more
// ago and no longer holds whole, until none is left or the budget is
// spent.
func (r *refill) round(ctx context.Context, p *prefetch) {
	// What the kernel still holds is asked of a child (see residency),
	// which dies with this thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	res := p.startResidency()
	defer res.close()
	jobs := make(chan pushJob, refillWorkers)
	var wg sync.WaitGroup
	for range refillWorkers {
		wg.Go(func() {
			buf := make([]byte, maxPush+1)
			for j := range jobs {
				p.push(j, buf)
				p.queued.Add(-1)
			}
		})
	}
	var taken int64
	for {
		r.mu.Lock()
		if len(r.dirs) == 0 || taken >= p.e.cfg.Budget || ctx.Err() != nil {
			r.running, r.dirs, r.queued = false, nil, nil
			r.mu.Unlock()
			break
		}
		dir := r.dirs[len(r.dirs)-1]
		r.dirs = r.dirs[:len(r.dirs)-1]
		r.mu.Unlock()
		now := time.Now()
		var subs []Node
		old := map[string]Node{}
		for name, c := range dir.Children() {
			if c.IsDir() {
				subs = append(subs, c)
			} else if m := c.Held(); m != nil && p.longAgo(m.Load(), now) {
				old[name] = c
			}
		}
		for _, c := range res.notHeld(dir, old) {
			if j, ok := p.takeOld(c, now); ok {
				taken += j.id.Size
				p.queued.Add(1)
				jobs <- j
			}
		}
		r.mu.Lock()
		for _, c := range subs {
			r.queue(c)
		}
		r.mu.Unlock()
	}
	close(jobs)
	wg.Wait()
}

// residency tells which files the kernel's page cache still holds whole:
// an idle machine's reclaim takes a share of the mount's pages, and
// pushing the rest again reads each from the backing tree, from disk when
// its backing pages went
// too, beside the walker that found the reclaim. The daemon cannot ask
// its own mount (see lister.go), so a lister child counts the pages
// (cachestat). Without one (it did not start, or failed), every file is
// taken as not held, as before there was one.
type residency struct {
	p  *prefetch
	ls *Lister
}

// startResidency starts the child; call it on a locked thread that
// outlives it. Its opens are the daemon's own (Engine.Own), and so are
// its requests.
func (p *prefetch) startResidency() *residency {
	ls, err := p.e.t.StartLister()
	if err != nil {
		return &residency{p: p}
	}
	p.e.active.helper.Store(ls.Tid())
	p.e.active.helperPid.Store(ls.Pid())
	return &residency{p: p, ls: ls}
}

// notHeld returns the files of old (by name, in dir) whose pages the
// kernel does not hold whole for the version it was given.
func (r *residency) notHeld(dir Node, old map[string]Node) []Node {
	out := make([]Node, 0, len(old))
	names := make([]string, 0, len(old))
	for name, c := range old {
		names = append(names, name)
		out = append(out, c)
	}
	if r.ls == nil || len(old) == 0 {
		return out
	}
	at, ok := dir.Path()
	if !ok {
		return out
	}
	pages, err := r.ls.Cached(at, names)
	if err != nil {
		r.close() // the rest of the round pushes without asking
		return out
	}
	out = out[:0]
	for i, name := range names {
		c := old[name]
		if m := c.Held(); m != nil && heldWhole(m.Load(), pages[i]) {
			r.p.count("held")
			continue
		}
		out = append(out, c)
	}
	return out
}

// heldWhole reports whether pages cached are all of the version the kernel
// was given whole (h).
func heldWhole(h *Held, pages uint64) bool {
	return h != nil && pages >= uint64((h.ID.Size+pageSize-1)/pageSize)
}

var pageSize = int64(os.Getpagesize())

func (r *residency) close() {
	if r.ls == nil {
		return
	}
	r.p.e.active.helperPid.Store(0) // before the child is reaped and its pid free
	r.ls.Close()
	r.p.e.active.helper.Store(0)
	r.ls = nil
}
