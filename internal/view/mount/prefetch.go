package mount

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/view/warm"

	"github.com/hanwen/go-fuse/v2/fs"
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
	v     *view
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
	report func(result string) // nil: not counted
	bytes  atomic.Int64        // pushed so far (the warm walk's budget)
	queued atomic.Int64        // offered and not yet pushed or given up
	// refillAfter is how long after the kernel was given a file's bytes a
	// READ of them means they were reclaimed (see readOf): refillAfter,
	// or 0 in tests.
	refillAfter atomic.Int64
	// refill pushes again what the machine reclaimed (see refill.go), at
	// most budget bytes a round.
	refill refill
	budget int64
}

// drained reports whether every push offered so far is done.
func (p *prefetch) drained() bool { return p.queued.Load() == 0 }

// busy reports whether more than half the queue waits: the warm walk
// then lets the workers catch up rather than have offers dropped.
func (p *prefetch) busy() bool { return len(p.queue) > pushQueue/2 }

// start makes the queue and its workers (for the life of the daemon).
func (p *prefetch) start(v *view, budget int64, report func(string)) {
	p.v, p.report, p.budget = v, report, budget
	p.refillAfter.Store(int64(refillAfter))
	p.refill.gap = roundGap
	p.queue = make(chan pushJob, pushQueue)
	p.eager = make(chan pushJob, pushQueue)
	for range pushWorkers {
		v.work.Go(func(ctx context.Context) { p.worker(ctx, p.queue, false) })
	}
	for range eagerWorkers {
		v.work.Go(func(ctx context.Context) { p.worker(ctx, p.eager, true) })
	}
}

// on reports whether pushes are made at all: only with the warming engine
// on in the policy in force, with a watch (which drops what changes) and
// in kernel open mode (where the page cache is what READs fill anyway).
// Listings made ahead and refills go with them.
func (p *prefetch) on() bool { return p.v.kernelOpen && p.v.watched() && p.v.policy().Mount.Warm }

func (p *prefetch) count(result string) {
	if p.report != nil {
		p.report(result)
	}
}

type pushJob struct {
	in *fs.Inode
	n  *node
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
	// maxPush is the largest file pushed whole (see warm.MaxPush).
	maxPush = warm.MaxPush
	// pushWorkers push concurrently; pushQueue bounds the jobs waiting
	// (a full queue drops the push: the file is then read on demand).
	pushWorkers = 2
	pushQueue   = 4096
	// eagerWorkers push what a read released, racing the walker's next
	// READs: pushes that read the file (verdicts kept by a restart) need
	// both cores to stay ahead of a first grep -r.
	eagerWorkers = 2
	// maxWaitKnown bounds the wait for the kernel to know an inode.
	maxWaitKnown = 2 * time.Second
	// maxEagerBytes bounds the content waiting in eager pushes; past it a
	// push is offered as an ordinary one (read again when it is its turn).
	maxEagerBytes = 64 << 20
)

// offer queues a push of n's content, the version id, once the kernel
// knows the inode (after the READDIRPLUS reply that names it).
func (p *prefetch) offer(n *node, id fileid.Identity, size int64) {
	if size == 0 || size > maxPush || n.index || !p.on() {
		return
	}
	n.held.Store(nil) // until this push is in
	p.queued.Add(1)
	select {
	case p.queue <- pushJob{in: n.EmbeddedInode(), n: n, id: id}:
	default:
		p.queued.Add(-1)
		p.count("dropped")
	}
}

// keptJob is the push of data, version id of n's content as the listing
// read and admitted it (nil: read when pushed).
func (p *prefetch) keptJob(n *node, id fileid.Identity, data []byte) pushJob {
	n.held.Store(nil) // until this push is in
	return pushJob{in: n.EmbeddedInode(), n: n, id: id, data: data}
}

// offerKept queues a push for the eager worker: one with the content the
// listing read, or one without (a file whose verdict was known, so the
// listing did not read it), which the worker reads. Past the eager budget
// a kept push is offered as an ordinary one (read again when it is its
// turn).
func (p *prefetch) offerKept(j pushJob) {
	if j.n.index || !p.on() {
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
		if !eager && !p.v.active.quiet(ctx.Done(), nil) {
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
// view.push), which admits the version afresh and checks it around the
// store. The kernel took in the reply naming the inode before the push was
// offered, so it never waits for it: an inode unknown now was forgotten
// since.
func (p *prefetch) pushKept(j pushJob) {
	defer warm.KeptDone(j.data) // the store copied it, and the job is done
	n, result := p.v.push(j.n, j.in, j.id, j.data, nil, false)
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

// readIn releases the pushes parked for the directory of n, a file a
// READ just admitted, to the eager worker; n's own is left out (that READ
// fills its pages).
func (p *prefetch) readIn(n *node) {
	if p.parked.bytes.Load() == 0 {
		return // the common case of a READ: nothing parked anywhere
	}
	_, dir := n.Parent()
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
// the gate (see view.push).
func (p *prefetch) push(j pushJob, buf []byte) {
	n, result := p.v.push(j.n, j.in, j.id, nil, buf, !j.refill)
	p.done(j, n, result)
}

// pushed accounts for the push of j, n bytes, now in the kernel's cache.
func (p *prefetch) pushed(j pushJob, n int) {
	p.bytes.Add(int64(n))
	j.n.gaveWhole(j.id, time.Now(), j.refill)
	p.count("pushed")
}
