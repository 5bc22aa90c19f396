package warm

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// parked holds the pushes an agent's listing of a directory prepared (the
// content its admission read, or, for a file whose verdict was known and
// so not read, the push to make), until a file of that directory is read.
// Pushed at once, they cost a walker that lists and reads nothing (find,
// git status over an unchanged tree) a fifth more time, for pages nobody
// asks for; a walker that reads one file of a directory (grep -r, cat,
// an import) reads its neighbours next, and the eager worker pushes them
// while it reads the first. Bounded: past maxParkedBytes the directories
// parked longest ago are dropped, and their files read on demand.
type parked struct {
	mu    sync.Mutex
	dirs  map[Node]*list.Element // of *parkedDir
	lru   list.List              // front: parked most recently
	bytes atomic.Int64           // memory held, see weight (read without mu on every READ)
	// last is the directory parked last, and lastRead says a file of it
	// was read since (its pushes were taken).
	last     Node
	lastRead bool
	// reads says the agent reads what it lists. A read of a file whose
	// directory's pushes are parked sets it; parking a directory's pushes
	// when no file of the one parked before was read clears it (a walker
	// that reads nothing lists on and on). While it is set, listings read
	// the files whose verdicts are known for their pushes (see
	// admit.Keep.Known), as a first listing reads them anyway to decide:
	// a restart's grep -r otherwise waits on the eager worker reading
	// each file it is about to read, and a find still reads nothing.
	reads atomic.Bool
	// pushedAtOnce counts the first listings pushed at once since the last
	// one parked (see atOnce).
	pushedAtOnce int
}

// probeEvery: while the agent reads what it lists, one first listing in
// that many is parked, to learn whether it still does; the others are
// pushed at once.
const probeEvery = 8

// atOnce reports whether an agent's first listing's pushes go out at once
// rather than parked. While the agent reads what it lists (reads), a
// parked directory costs its walker a READ of the first file it reads
// there, a round trip per directory that a cold walk pays many times
// over; pushed at once, the walker mostly finds the pages there. But it
// is the parked directories' reads that tell whether
// the agent still reads: so one in probeEvery is parked, and once one of
// them is not read before the next is parked, reads is cleared (see park)
// and every listing is parked again. A walker that reads nothing after
// one that read (a find after a grep -r) has the pushes of at most
// 2*probeEvery directories made for nothing.
func (p *parked) atOnce() bool {
	if !p.reads.Load() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pushedAtOnce++; p.pushedAtOnce < probeEvery {
		return true
	}
	p.pushedAtOnce = 0
	return false
}

// weight is the memory a parked push holds: its content, if any, and the
// job itself.
func weight(j pushJob) int64 { return int64(len(j.data)) + jobBytes }

// jobBytes is about what a pushJob takes in memory.
const jobBytes = 128

type parkedDir struct {
	dir   Node
	jobs  []pushJob
	bytes int64
}

// maxParkedBytes bounds the memory parked for all directories. A reader
// takes its directory's pushes at its first read there, so few wait at
// once; a walker that reads nothing fills the budget, and the buffers of
// the pushes dropped past it are recycled for the next listings' copies
// (a larger budget only lets such a walker allocate fresh pages for
// copies no one reads).
const maxParkedBytes = 16 << 20

// park adds jobs, pushes of files named by a listing of dir that the
// kernel has taken in, and owns the slice from then on. It reports how
// many pushes the bound dropped.
func (p *parked) park(dir Node, jobs []pushJob) (dropped int) {
	var size int64
	for _, j := range jobs {
		size += weight(j)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dirs == nil {
		p.dirs = map[Node]*list.Element{}
	}
	if dir != p.last {
		if p.last != nil {
			p.reads.Store(p.lastRead)
		}
		p.last, p.lastRead = dir, false
	}
	if e, ok := p.dirs[dir]; ok {
		d := e.Value.(*parkedDir)
		d.jobs = append(d.jobs, jobs...)
		d.bytes += size
		p.lru.MoveToFront(e)
	} else {
		p.dirs[dir] = p.lru.PushFront(&parkedDir{dir: dir, jobs: jobs, bytes: size})
	}
	total := p.bytes.Add(size)
	for total > maxParkedBytes {
		d := p.lru.Remove(p.lru.Back()).(*parkedDir)
		delete(p.dirs, d.dir)
		total = p.bytes.Add(-d.bytes)
		dropped += len(d.jobs)
		d.done()
	}
	return dropped
}

// take removes and returns the pushes parked for dir, a file of which was
// read.
func (p *parked) take(dir Node) []pushJob { return p.remove(dir, true) }

// drop forgets what is parked for dir (the kernel forgot the directory).
func (p *parked) drop(dir Node) { (&parkedDir{jobs: p.remove(dir, false)}).done() }

// remove removes and returns the pushes parked for dir; read says a file
// of it was read.
func (p *parked) remove(dir Node, read bool) []pushJob {
	if p.bytes.Load() == 0 {
		return nil // the common case of a READ: nothing parked anywhere
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.dirs[dir]
	if !ok {
		return nil
	}
	d := p.lru.Remove(e).(*parkedDir)
	delete(p.dirs, dir)
	p.bytes.Add(-d.bytes)
	if read {
		p.reads.Store(true)
		p.lastRead = p.lastRead || dir == p.last
	}
	return d.jobs
}

// done gives back the buffers of pushes that will not be made.
func (d *parkedDir) done() {
	for _, j := range d.jobs {
		KeptDone(j.data)
	}
}
