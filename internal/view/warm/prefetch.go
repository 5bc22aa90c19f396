package warm

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
)

// prefetch pushes the content of small admitted files into the kernel's
// page cache (FUSE_NOTIFY_STORE) once a READDIRPLUS has made them known to
// the kernel: a tree walker (grep -r, cat, git) that lists a directory and
// then reads its files finds their pages there and sends no READ. The
// pushes are made by a few workers outside any request, whenever no other
// process has asked anything for a moment (they would compete with the
// agent's command on a small machine, and race its READs anyway), never
// before the version was admitted by the LOOKUP that READDIRPLUS made,
// and never leave a page of another version behind: the file is fstat'ed
// after its bytes were pushed, and a version that moved meanwhile is
// invalidated again (the watch may have invalidated it before the push).
type prefetch struct {
	e     *Engine
	queue chan pushJob
	// eager holds pushes whose content the listing already read: they
	// cost a write to the kernel and an fstatat, so they do not wait for
	// a quiet moment; they race the walker's READs and mostly win.
	// eagerBytes is the content they hold (bounded by maxEagerBytes).
	eager      chan pushJob
	eagerBytes atomic.Int64
	// parked are agents' listings' pushes, waiting for a read in their
	// directory.
	parked parked
	bytes  atomic.Int64 // pushed so far (the warm walk's budget)
	queued atomic.Int64 // offered and not yet pushed or given up
	// refill pushes again what the machine reclaimed (see refill.go), at
	// most the budget's bytes a round.
	refill refill
}

// drained reports whether every push offered so far is done.
func (p *prefetch) drained() bool { return p.queued.Load() == 0 }

// busy reports whether more than half the queue waits: the warm walk
// then lets the workers catch up rather than have offers dropped.
func (p *prefetch) busy() bool { return len(p.queue) > pushQueue/2 }

// start makes the queue and its workers (for the life of the mount).
func (p *prefetch) start(e *Engine) {
	p.e = e
	p.queue = make(chan pushJob, pushQueue)
	p.eager = make(chan pushJob, pushQueue)
	for range pushWorkers {
		e.t.Go(func(ctx context.Context) { p.worker(ctx, p.queue, false) })
	}
	for range eagerWorkers {
		e.t.Go(func(ctx context.Context) { p.worker(ctx, p.eager, true) })
	}
}

func (p *prefetch) on() bool { return p.e.t.Warming() }

func (p *prefetch) count(result string) {
	if r := p.e.cfg.Prefetched; r != nil {
		r(result)
	}
}

type pushJob struct {
	n  Node
	id fileid.Identity
	// data is the version's content when the listing read it (eager).
	data []byte
	// refill: a refill's push (see refill.go). The kernel knew the inode
	// when the job was made (it had been given the file's bytes), so the
	// store does not wait for a reply naming it (an inode unknown now was
	// forgotten since); and the mark it leaves says so.
	refill bool
}

const (
	// maxPush is the largest file pushed whole (MaxPush).
	maxPush = MaxPush
	// pushWorkers push concurrently; pushQueue bounds the jobs waiting
	// (a full queue drops the push: the file is then read on demand).
	pushWorkers = 2
	pushQueue   = 4096
	// eagerWorkers push what a read released, racing the walker's next
	// READs: pushes that read the file (verdicts kept by a restart) need
	// both cores to stay ahead of a first grep -r.
	eagerWorkers = 2
	// maxEagerBytes bounds the content waiting in eager pushes; past it a
	// push is offered as an ordinary one (read again when it is its turn).
	maxEagerBytes = 64 << 20
)

// Offer queues a push of the file n's content, the version id of size
// bytes, once the kernel knows the inode (after the reply that names it).
func (e *Engine) Offer(n Node, id fileid.Identity, size int64) { e.offer(n, id, size) }

func (p *prefetch) offer(n Node, id fileid.Identity, size int64) {
	if size == 0 || size > maxPush || !p.on() {
		return
	}
	h := n.Held()
	if h == nil {
		return
	}
	h.Store(nil) // until this push is in
	p.queued.Add(1)
	select {
	case p.queue <- pushJob{n: n, id: id}:
	default:
		p.queued.Add(-1)
		p.count("dropped")
	}
}

// keptJob is the push of data, version id of n's content as the listing
// read and admitted it (nil: read when pushed).
func keptJob(n Node, id fileid.Identity, data []byte) pushJob {
	n.Held().Store(nil) // until this push is in
	return pushJob{n: n, id: id, data: data}
}

// offerKept queues a push for the eager worker: one with the content the
// listing read, or one without (a file whose verdict was known, so the
// listing did not read it), which the worker reads. Past the eager budget
// a kept push is offered as an ordinary one (read again when it is its
// turn).
func (p *prefetch) offerKept(j pushJob) {
	if !p.on() {
		return
	}
	if p.eagerBytes.Add(int64(len(j.data))) > maxEagerBytes {
		p.eagerBytes.Add(-int64(len(j.data)))
		p.offer(j.n, j.id, j.id.Size)
		return
	}
	p.queued.Add(1)
	select {
	case p.eager <- j:
	default:
		p.eagerBytes.Add(-int64(len(j.data)))
		p.queued.Add(-1)
		p.count("dropped")
	}
}

// worker takes pushes from queue until ctx ends. An eager queue's are
// made at once (an agent is reading what they hold); the background
// queue's wait for the agent's pause, as its command's requests go first
// (a push races the walker's own READ anyway). Only eager jobs may carry
// the content a listing read (data); the others read the file.
func (p *prefetch) worker(ctx context.Context, queue <-chan pushJob, eager bool) {
	buf := make([]byte, maxPush+1)
	for {
		var j pushJob
		select {
		case <-ctx.Done():
			return
		case j = <-queue:
		}
		if !eager && !p.e.active.quiet(ctx.Done(), nil) {
			return
		}
		if j.data == nil {
			p.push(j, buf)
		} else {
			p.pushKept(j)
		}
		if eager {
			p.eagerBytes.Add(-int64(len(j.data)))
		}
		p.queued.Add(-1)
	}
}

// pushKept stores content the listing read, through the gate (see
// Target.Push), which admits the version afresh and checks it around the
// store. The kernel took in the reply naming the inode before the push was
// offered, so it never waits for it: an inode unknown now was forgotten
// since.
func (p *prefetch) pushKept(j pushJob) {
	defer KeptDone(j.data) // the store copied it, and the job is done
	n, result := p.e.t.Push(j.n, j.id, j.data, nil, false)
	p.done(j, n, result)
}

// done accounts for the gate's answer to the push j: n bytes stored, and
// the result to count.
func (p *prefetch) done(j pushJob, n int, result string) {
	switch result {
	case "pushed":
		p.pushed(j, n)
	case "":
	default:
		p.count(result)
	}
}

// readKnown says whether a listing reads, for its pushes, the files whose
// verdicts are known (admit.Keep.Known): when it lists a directory again
// (again: its pages were reclaimed with its listing), or while the agent
// reads what it lists (see parked.reads).
func (p *prefetch) readKnown(again bool) bool { return again || p.parked.reads.Load() }

// ReadIn releases the pushes parked for the directory of n, a file a
// READ just admitted, to the eager worker; n's own is left out (that READ
// fills its pages).
func (e *Engine) ReadIn(n Node) {
	p := &e.prefetch
	if p.parked.bytes.Load() == 0 {
		return // the common case of a READ: nothing parked anywhere
	}
	dir := n.Dir()
	if dir == nil {
		return
	}
	for _, j := range p.parked.take(dir) {
		if j.n != n {
			p.offerKept(j)
		}
	}
}

// push reads one file and stores its bytes in the kernel's cache, through
// the gate (see Target.Push).
func (p *prefetch) push(j pushJob, buf []byte) {
	n, result := p.e.t.Push(j.n, j.id, nil, buf, !j.refill)
	p.done(j, n, result)
}

// pushed accounts for the push of j, n bytes, now in the kernel's cache.
func (p *prefetch) pushed(j pushJob, n int) {
	p.bytes.Add(int64(n))
	gaveWhole(j.n, j.id, time.Now(), j.refill)
	p.count("pushed")
}
