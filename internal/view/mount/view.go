// Package mount owns the FUSE view: a read-only go-fuse filesystem in which
// every LOOKUP, READDIR and OPEN is decided by the same roots and sniff code
// that `fsguard read` uses, never by a second copy of the rules.
//
// The view keeps no policy of its own. A node is a root name and a path
// relative to that root; each operation asks the current roots.Guard about
// that path afresh, so a reload (SIGHUP) takes effect on the next operation.
//
// The mount makes and drives the page-cache warming engine
// (internal/view/warm, see warming.go), which gets bytes to the kernel
// only through the view's gate (gate.go).
package mount

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/view/warm"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// view is the state shared by every node of one mount.
type view struct {
	guard atomic.Pointer[roots.Guard]
	audit Auditor
	admit Admitter
	git   gitIndexes

	// mountPoint is never resolved by the daemon: a root that contains it
	// would otherwise have the daemon call into its own mount.
	mountPoint string
	// kernelOpen: the kernel opens files without asking (see node.Open).
	kernelOpen bool
	// unrecordable: see Config.Unrecordable (nil: never).
	unrecordable func(path string) error
	latency      func(op string, d time.Duration)

	idMu sync.Mutex
	devs map[uint64]uint64 // device → its index in inode numbers
	// odd maps identities whose numbers do not fit the computed layout;
	// an entry goes when the kernel forgets the node.
	odd     map[idKey]uint64
	nextOdd uint64
	// nodes maps the inode numbers the kernel holds to their nodes, so an
	// inode met outside a request (an open seen by the access audit) can
	// be named; an entry goes when the kernel forgets the node.
	nodes map[uint64]*node
	// graves are the inode numbers of directories the kernel was told are
	// deleted and still holds (see bury); nGraves is len(graves).
	graves  map[uint64]grave
	nGraves atomic.Int64
	// changes counts the batches of changes the watch (or a write of the
	// daemon's own) reported: a listing made before one of them is old.
	changes atomic.Int64
	// moved is the count of changes of the last batch that moved a node
	// to a new name (see Server.follow): a push of a version admitted
	// before it may be of a file that is now elsewhere.
	moved atomic.Int64
	// replies counts the replies handing the kernel names.
	replies replies
	// looked, when set (tests only), runs twice in a LOOKUP: after the
	// name was decided, and after the timeouts were (answered): the two
	// places a change can land before the kernel has the reply.
	looked atomic.Pointer[func(rel string, answered bool)]
	// absent are the names the kernel caches as not there.
	absent negatives
	// open keeps admitted descriptors between READs; nil without a watch.
	open atomic.Pointer[fds]
	// warm is the warming engine: it pushes into the page cache the files
	// a listing named, lists ahead the directories a walker lists next,
	// refills what reclaim took, walks the mount; and it knows when
	// another process last asked, so that background work yields.
	warm *warm.Engine
	// work runs the mount's own goroutines (see workers).
	work *workers
	// lazy are the files shown without a content verdict, waiting to be
	// decided in the background (see lazy.go).
	lazy chan lazyJob
}

type idKey struct {
	dev, ino uint64
	typ      uint32
}

// Inode numbers in the mount are computed, not remembered: raw numbers
// from several roots on several devices could collide, and go-fuse merges
// nodes that share a number, so each (device, type, inode) gets
//
//	device index (15 bits) | type (4 bits) | backing inode (44 bits)
//
// which costs no memory per file. An identity that does not fit (a huge
// inode number, as overlayfs's xino makes, or a 32,768th device) gets a
// number from a counter with the top bit set, held until the kernel
// forgets the node.
const (
	inoBits = 44
	typBits = 4
	devBits = 15
)

// ino returns the mount's inode number for a backing identity.
func (v *view) ino(k idKey) uint64 {
	v.idMu.Lock()
	defer v.idMu.Unlock()
	d, ok := v.devs[k.dev]
	if !ok {
		d = uint64(len(v.devs)) + 1 // never 0: 1 is the mount's root
		v.devs[k.dev] = d
	}
	if k.ino < 1<<inoBits && d < 1<<devBits {
		return d<<(inoBits+typBits) | uint64(k.typ>>12)<<inoBits | k.ino
	}
	id, ok := v.odd[k]
	if !ok {
		v.nextOdd++
		id = 1<<63 | v.nextOdd
		v.odd[k] = id
	}
	return id
}

// remember records the node the kernel holds under its number, unless a
// node in place (one with a parent) is recorded for it already; over: the
// recorded one's name no longer leads to the file (see node.lookup).
func (v *view) remember(n *node, over bool) {
	ino := n.StableAttr().Ino
	v.idMu.Lock()
	defer v.idMu.Unlock()
	if old := v.nodes[ino]; old != nil && old != n && !over {
		if _, parent := old.Parent(); parent != nil {
			return
		}
	}
	v.nodes[ino] = n
}

// grave is what the kernel holds of an inode number's deleted
// directories: held is how many of them it still holds, each of a
// generation below live.
type grave struct{ live, held uint64 }

// bury notes that the kernel is about to be told the directory n is
// deleted. FUSE_NOTIFY_DELETE marks its inode dead (S_DEAD: every lookup
// and listing in it fails with ENOENT) for as long as anything holds it
// (an open descriptor, a shell in it), and the kernel revives no inode:
// handed the same node by a lookup that raced the removal (it found the
// node by its name and number before the name was taken away; go-fuse
// files it under the name after Lookup returns), or by go-fuse for the
// same number and generation, the kernel would put the name on the dead
// inode for the hour an entry is cached. So until the kernel forgets it,
// a lookup hands out only a later generation of the number (see liveGen).
// Files are not dead when deleted: a LOOKUP reply sets their link count
// again.
func (v *view) bury(n *node) {
	if n.key.typ != syscall.S_IFDIR {
		return
	}
	id := n.StableAttr()
	v.idMu.Lock()
	defer v.idMu.Unlock()
	if n.buried || n.forgotten {
		return // counted already, or gone from the kernel: nothing to hold
	}
	n.buried = true
	g := v.graves[id.Ino]
	v.graves[id.Ino] = grave{live: max(g.live, id.Gen+1), held: g.held + 1}
	v.nGraves.Store(int64(len(v.graves)))
}

// liveGen is the lowest generation of the inode number ino that no
// buried directory the kernel holds has.
func (v *view) liveGen(ino uint64) uint64 {
	if v.nGraves.Load() == 0 {
		return 0 // the common case, without the lock every lookup takes
	}
	v.idMu.Lock()
	defer v.idMu.Unlock()
	return v.graves[ino].live
}

// held is the node recorded for the mount's inode number ino, or nil.
func (v *view) held(ino uint64) *node {
	v.idMu.Lock()
	defer v.idMu.Unlock()
	return v.nodes[ino]
}

// forget releases an identity's number once the kernel forgot its node.
func (v *view) forget(k idKey, ino uint64) {
	if ino&(1<<63) == 0 {
		return
	}
	v.idMu.Lock()
	defer v.idMu.Unlock()
	if v.odd[k] == ino && v.nodes[ino] == nil { // no other node holds it (see node.lookup)
		delete(v.odd, k)
	}
}

// drop removes a node the kernel forgot from the nodes it holds.
func (v *view) drop(n *node) {
	ino := n.StableAttr().Ino
	v.idMu.Lock()
	defer v.idMu.Unlock()
	if v.nodes[ino] == n {
		delete(v.nodes, ino)
	}
	n.forgotten = true
	if n.buried {
		// Every buried generation gone from the kernel frees the number's
		// generations: no dead inode is left to revive.
		if g := v.graves[ino]; g.held > 1 {
			v.graves[ino] = grave{live: g.live, held: g.held - 1}
		} else {
			delete(v.graves, ino)
			v.nGraves.Store(int64(len(v.graves)))
		}
	}
}

// timed reports an operation's latency; use as defer v.timed(op, time.Now()).
func (v *view) timed(op string, start time.Time) {
	if v.latency != nil {
		v.latency(op, time.Since(start))
	}
}

func (v *view) policy() *policy.Policy { return v.guard.Load().Policy() }

// timeouts are how long the kernel may cache a reply's name and
// attributes: the policy's while a watch keeps them fresh, at most
// fallbackTimeout without one (from the mount, or after a reload that
// could not set one again). They are set in each reply, not in go-fuse's
// options: go-fuse puts its options' timeouts in place of a zero one, and
// a zero is what a reply that must not be cached needs (see node.lookup).
// Negative entries keep go-fuse's option, fixed at mount.
func (v *view) timeouts() (entry, attr time.Duration) {
	m := &v.policy().Mount
	entry, attr = m.EntryTimeout.Duration, m.AttrTimeout.Duration
	if !v.watched() {
		entry, attr = min(entry, fallbackTimeout), min(attr, fallbackTimeout)
	}
	return entry, attr
}

// cacheEntry sets a LOOKUP reply's timeouts (see timeouts).
func (v *view) cacheEntry(out *fuse.EntryOut) {
	entry, attr := v.timeouts()
	out.SetEntryTimeout(entry)
	out.SetAttrTimeout(attr)
}

// watched reports whether a watch of the backing tree holds: then every
// change invalidates what the kernel and the daemon hold for it, and the
// caches that only a watch keeps fresh (kept descriptors, pushes, a
// listing's stats) are used.
func (v *view) watched() bool { return v.open.Load() != nil }

// root finds a root of the current guard by name.
func (v *view) root(name string) (*roots.Guard, *roots.Root) {
	g := v.guard.Load()
	for _, r := range g.Roots() {
		if r.Name == name {
			return g, r
		}
	}
	return g, nil
}

// refuse turns a refusal of p into the errno a shell tool sees, and
// reports the denials among them to the audit hook.
// recordable is the errno of a file's bytes that cannot be served
// because they could not be recorded (Config.Unrecordable), or 0.
func (v *view) recordable(caller *fuse.Caller, p roots.Path) syscall.Errno {
	if v.unrecordable == nil {
		return 0
	}
	if err := v.unrecordable(p.Shown); err != nil {
		return v.refuse(caller, p, err)
	}
	return 0
}

func (v *view) refuse(caller *fuse.Caller, p roots.Path, err error) syscall.Errno {
	errno, denial := errnoOf(err, v.policy().Mount.Denied == "eacces")
	if denial {
		d := newDenial(caller, p.Shown, refusal.CodeOf(err))
		d.RealPath = p.Real()
		v.audit.Denial(d)
	}
	return errno
}

// errnoOf is the one mapping of refusals to errnos: the mount shows no
// message, only this. A denial (a policy's no, reported to the audit hook)
// is ENOENT — the name is simply not there — or EACCES for a denied name
// when the policy asks for it ([mount] denied = "eacces").
func errnoOf(err error, deniedEACCES bool) (errno syscall.Errno, denial bool) {
	switch refusal.CodeOf(err) {
	case refusal.NotFound:
		return syscall.ENOENT, false
	case refusal.Denied, refusal.ArchiveUnchecked:
		if deniedEACCES {
			return syscall.EACCES, true
		}
		return syscall.ENOENT, true
	case refusal.OutsideAllowedRoots, refusal.DangerousPath, refusal.NotAFile:
		// Escaping links and special files are simply not there.
		return syscall.ENOENT, true
	case refusal.PermissionDenied:
		return syscall.EACCES, false
	case refusal.ChangedDuringRead:
		return syscall.ESTALE, false
	case refusal.InvalidInput:
		return syscall.EINVAL, false
	}
	return syscall.EIO, false
}
