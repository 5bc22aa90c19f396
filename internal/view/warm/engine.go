package warm

import (
	"context"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"

	"golang.org/x/sys/unix"
)

// Node is a file or directory the kernel holds, as the view hands it to
// the engine: a handle the engine compares, walks by the kernel's names
// and marks. It carries no way to the kernel: the engine gets bytes there
// only through Target.Push, which decides afresh.
type Node interface {
	// Held is the engine's mark on the file (see Held); nil for a node
	// that is no file or directory beneath a root (a mount's top).
	Held() *atomic.Pointer[Held]
	// Dir is the directory the kernel holds the node in; nil: none.
	Dir() Node
	// Child is the node the kernel holds under name in the directory;
	// nil: none.
	Child(name string) Node
	// Children are the nodes the kernel holds in the directory, by name.
	Children() iter.Seq2[string, Node]
	IsDir() bool
	// Top is the mount's top directory.
	Top() Node
	// Path is the node's path through the mount, by the names the kernel
	// holds; false when no name leads to it any more.
	Path() (string, bool)
}

// Held is a version of a file whose bytes the kernel was given whole, and
// when; Refill says a refill gave them, after a reclaim.
type Held struct {
	ID     fileid.Identity
	At     time.Time
	Refill bool
}

// Target is what the engine asks of the view. Push is its only way to
// put bytes in the kernel; nothing else it is given stores, replies or
// hands over a descriptor.
type Target interface {
	// Push stores the whole content of version id of the file n in the
	// kernel's page cache, through the view's gate: it admits the version
	// afresh at the node's place under the guard in force, stores it only
	// if the file there is still that version with one link (masked by its
	// verdict), and checks version, guard and place again after the store.
	// data is the content when the engine holds it, else it is read into
	// buf (MaxPush+1 bytes). wait: wait for the kernel to know the inode.
	// It returns the bytes stored and the result to count ("pushed",
	// "unknown", "changed"; "" for a push given up unstored).
	Push(n Node, id fileid.Identity, data, buf []byte, wait bool) (int, string)
	// Warming reports whether the view can be warmed now: the policy in
	// force has the engine on, a watch drops what changes, and the kernel
	// opens files itself (its page cache is what READs fill).
	Warming() bool
	// Policy is the policy in force.
	Policy() *policy.Policy
	// Changes is the view's count of batches of changes seen.
	Changes() int64
	// Root finds a root of the guard in force by name.
	Root(name string) (*roots.Guard, *roots.Root)
	// Shown is the view's admission of a listing (admit.Decider.Shown,
	// with the view's own mount point hidden).
	Shown(g *roots.Guard, dir roots.Path, list []roots.DirEntry, keep *admit.Keep) []roots.DirEntry
	// Busy reports whether a directory of stat st changed too recently
	// for its listing to hand the kernel entries.
	Busy(st *unix.Stat_t) bool
	// Backing names a directory of the mount (a path through it) as a
	// root and a path beneath it; false for the top of several roots.
	Backing(at string) (Dir, bool)
	// WarmIndexes makes the view of every git index the kernel holds,
	// and returns how many it made.
	WarmIndexes() int
	// StartLister starts a lister child of the mount (see StartLister),
	// from a thread locked for the child's life.
	StartLister() (*Lister, error)
	// Go runs f on one of the mount's goroutines, which the unmount ends
	// and waits for; false (not run) once it has.
	Go(f func(ctx context.Context)) bool
}

// Config is what the engine is told besides its target.
type Config struct {
	MountPoint string
	// Budget bounds the bytes a warm walk, or a refill's round, pushes.
	Budget int64
	// Prefetched, Listed and Event report what became of pushes, of
	// listings made ahead and the engine's own events (see mount.Config).
	Prefetched, ListedAhead, Event func(string)
	Log                            *slog.Logger
	// Done is closed once the mount is going: Walked waits no more.
	Done <-chan struct{}
	// RefillAfter and RoundGap, when set, replace refillAfter and
	// roundGap (see refill.go); each is asked whenever it is used.
	RefillAfter, RoundGap func() time.Duration
}

// Engine is one mount's warming engine. The view tells it what the
// kernel was handed (listings, READs, forgotten nodes, changes) through
// its methods; the engine decides what to push, when and in which
// order, and pushes through the view's gate.
type Engine struct {
	t   Target
	cfg Config

	prefetch
	ahead  ahead
	active activity
	// forgotten counts the nodes the kernel forgot since the last warm
	// walk (see keepWarm).
	forgotten atomic.Int64

	// walked is closed when the first warm walk ends, or once Walk found
	// there is none; repos, unlisted and walkedOK are set before (see
	// Walked).
	walked     chan struct{}
	walkedOnce sync.Once
	walkOnce   sync.Once
	repos      []Dir
	unlisted   []Dir
	walkedOK   bool
}

// New makes the engine of a mount and starts its push workers (they run
// until the mount's goroutines are stopped).
func New(t Target, cfg Config) *Engine {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{t: t, cfg: cfg, walked: make(chan struct{})}
	e.ahead.e = e
	e.prefetch.start(e)
	return e
}

// On reports whether pushes are made at all (see Target.Warming).
// Listings made ahead and refills go with them.
func (e *Engine) On() bool { return e.t.Warming() }

func (e *Engine) event(name string) {
	if e.cfg.Event != nil {
		e.cfg.Event(name)
	}
}

// Forgot notes that the kernel forgot n: what is parked for it goes, and
// the warm walk counts it (see keepWarm).
func (e *Engine) Forgot(n Node) {
	e.forgotten.Add(1)
	e.parked.drop(n)
}

// Walks reports whether a request of the thread pid is the engine's own
// (the daemon's, or the warm walk's lister), not an agent's.
func (e *Engine) Walks(pid uint32) bool { return pid == self || pid == e.active.walker.Load() }

// Idle reports whether the engine has nothing in hand: no refill round
// runs, every push offered is done, and every directory queued to be
// listed ahead is listed.
func (e *Engine) Idle() bool {
	e.refill.mu.Lock()
	refilling := e.refill.running
	e.refill.mu.Unlock()
	e.ahead.mu.Lock()
	listing := e.ahead.busy
	e.ahead.mu.Unlock()
	return !refilling && !listing && e.drained()
}

// ListsAhead names the directories of the root named root queued or
// listed ahead and not yet taken by a listing (by their paths beneath
// it), each with whether it was listed before.
func (e *Engine) ListsAhead(root string) map[string]bool {
	e.ahead.mu.Lock()
	defer e.ahead.mu.Unlock()
	out := map[string]bool{}
	for k, x := range e.ahead.lists {
		if k.root == root {
			out[k.rel] = x.known
		}
	}
	return out
}
