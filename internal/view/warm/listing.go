package warm

import (
	"path"
	"sync"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/decide/admit"
)

// Listing is the engine's share of one listing of a directory by the
// view: the content of small files its admission read (kept for the
// pushes that follow the READDIRPLUS entries naming them), and the pushes
// of files its current reply names, handed over once the kernel has taken
// that reply in. The view's listing calls it from one request at a time.
type Listing struct {
	e *Engine
	// kept holds, by name, the content of small files the listing
	// admitted from one whole read; keptBytes is its size (bounded by
	// maxKeptPerListing).
	kept      map[string]keptFile
	keptBytes int
	keptMu    sync.Mutex // keep runs on the admission's goroutines
	// pending are the pushes of files the listing handed the kernel in its
	// current request; the kernel knows those inodes only once it has
	// taken the reply in, which it has when the next request of the
	// listing (or its release) comes: they are handed over then (see
	// HandOver), and never meet an inode the kernel does not know yet.
	pending []pushJob
}

// keptFile is a file's content as the listing read it, and its version.
type keptFile struct {
	id   fileid.Identity
	data []byte
}

// maxKeptPerListing bounds the content one listing holds for pushes.
const maxKeptPerListing = 8 << 20

// Listing starts the engine's share of a listing.
func (e *Engine) Listing() *Listing { return &Listing{e: e} }

// Keep is the admission's admit.Keep for a listing of dir (nil when the
// kernel does not know it) that keeps content for pushes; again says the
// directory was listed before.
func (l *Listing) Keep(dir Node, again bool) *admit.Keep {
	return &admit.Keep{Fn: l.keep, Known: l.e.readKnown(again), Want: l.e.wantedIn(dir)}
}

// keep copies a small file's content for the push that follows its
// READDIRPLUS entry (into a recycled buffer: see keptBufs).
func (l *Listing) keep(rel string, id fileid.Identity, data []byte) {
	l.keptMu.Lock()
	defer l.keptMu.Unlock()
	if int64(len(data)) != id.Size || id.Size > maxPush || l.keptBytes+len(data) > maxKeptPerListing {
		return
	}
	if l.kept == nil {
		l.kept = map[string]keptFile{}
	}
	l.kept[path.Base(rel)] = keptFile{id: id, data: KeptCopy(data)}
	l.keptBytes += len(data)
}

// take removes the content kept for name.
func (l *Listing) take(name string) (keptFile, bool) {
	k, held := l.kept[name]
	if held {
		delete(l.kept, name)
		l.keptBytes -= len(k.data)
	}
	return k, held
}

// Known notes that READDIRPLUS names name, which the kernel holds already
// as c (nil: not a file the engine may push), a file of backing device
// dev and inode ino. Its pages may be gone (reclaim is what makes the
// kernel list a directory again): the content read for the listing
// still goes in, if it is of the file the node stands for.
func (l *Listing) Known(name string, c Node, dev, ino uint64) {
	k, held := l.take(name)
	if c != nil && c.Held() != nil && held && dev == k.id.Dev && ino == k.id.Ino && len(k.data) > 0 {
		l.pending = append(l.pending, keptJob(c, k.id, k.data))
	}
}

// Named notes that READDIRPLUS hands the kernel an entry for name: c (nil:
// none, or not a file the engine may push) is the node of a regular file
// of one link, version id, which the kernel knows once this reply is in;
// its bytes can go into the page cache before the walker asks for them.
// first: see HandOver.
func (l *Listing) Named(name string, c Node, id fileid.Identity, first bool) {
	k, held := l.take(name)
	if c == nil || c.Held() == nil {
		return
	}
	switch {
	case held && k.id == id && len(k.data) > 0:
		l.pending = append(l.pending, keptJob(c, id, k.data))
	case !held && first && id.Size > 0 && id.Size <= maxPush:
		// Its verdict was known (a restart kept it), so the listing read
		// nothing: parked like the others, the push reads the file when a
		// neighbour is read.
		l.pending = append(l.pending, keptJob(c, id, nil))
	default:
		l.e.offer(c, id, id.Size)
	}
}

// HandOver hands on the pushes of files named by replies the kernel has
// taken in (the view calls it at each new request of the listing, and at
// its release), of the directory dir. The warm walk's go to the eager
// worker at once: warming is its purpose. So do those of a directory
// listed again: its files were read again for them (see admit.Keep.Known),
// and the walker that lists after the pages were reclaimed mostly reads
// next; parked, they would wait for its first READ in the directory and
// then race its next ones. An agent's first listing's (first) are parked
// until it reads a file in the directory (see parked), but for most while
// it reads what it lists (see parked.atOnce).
func (l *Listing) HandOver(dir Node, first bool) {
	if len(l.pending) == 0 {
		return
	}
	p := &l.e.prefetch
	if !first || p.parked.atOnce() {
		for _, j := range l.pending {
			p.offerKept(j)
		}
		clear(l.pending) // the content is the eager queue's now
		l.pending = l.pending[:0]
		return
	}
	if dropped := p.parked.park(dir, l.pending); dropped > 0 {
		for range dropped {
			p.count("dropped")
		}
	}
	l.pending = nil // parked owns it
}

// GiveBack returns the buffers of the content the listing still keeps
// (see keptBufs): no push will be made of it.
func (l *Listing) GiveBack() {
	for _, k := range l.kept {
		KeptDone(k.data)
	}
	l.kept = nil
}
