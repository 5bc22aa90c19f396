package warm

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/fsguard/fsguard/internal/decide/roots"
)

// self is the daemon's pid: its own requests (the warm walk's) are not
// an agent's.
var self = uint32(os.Getpid())

// activity is when a request of another process was last served; the
// warm walk waits while there are such requests, so it never slows the
// agent it warms for.
type activity struct {
	last atomic.Int64
	// walker is the thread the warm walk runs on: a FUSE request names
	// the thread that made it, not its process.
	walker atomic.Uint32
	// helper is the thread of the refill's residency child, and
	// helperPid the child (the opens audit names processes); 0 when
	// there is none.
	helper, helperPid atomic.Uint32
}

// Saw notes a request of the thread pid: unless it is the engine's own,
// another process is using the mount, and background work yields.
func (e *Engine) Saw(pid uint32) {
	if pid != self && pid != e.active.walker.Load() && pid != e.active.helper.Load() {
		e.active.last.Store(time.Now().UnixNano())
	}
}

// Used notes that another process used the mount without a request:
// an open served from the kernel's caches, which only the opens audit
// sees. Background work yields to it as to a request; without it, the
// history check's walk of the backing tree ran beside a grep -r that
// the warm walk had made cache-only, and took a core from it.
func (e *Engine) Used() { e.active.last.Store(time.Now().UnixNano()) }

// Own reports whether pid is a helper process of the daemon's (the
// refill's residency child, while it lives): its opens of files in the
// mount are the daemon's, not an agent's, and the opens audit leaves
// them out.
func (e *Engine) Own(pid uint32) bool { return pid != 0 && pid == e.active.helperPid.Load() }

// idleFor is how long no other process has asked anything.
func (a *activity) idleFor() time.Duration {
	return time.Duration(time.Now().UnixNano() - a.last.Load())
}

// yieldAfter is how long background work waits after another process's
// request.
const yieldAfter = 250 * time.Millisecond

// quiet waits until no other process has asked anything for yieldAfter,
// and busy (when set) says no more; false if stop (nil: never) closed
// first. Every piece of background work waits by it: the warm walk, the
// push workers, the git history check.
func (a *activity) quiet(stop <-chan struct{}, busy func() bool) bool {
	for {
		wait := yieldAfter - a.idleFor()
		if busy != nil && busy() {
			wait = max(wait, time.Millisecond)
		}
		if wait <= 0 {
			select {
			case <-stop:
				return false
			default:
				return true
			}
		}
		select {
		case <-stop:
			return false
		case <-time.After(wait):
		}
	}
}

// Quiet waits until no process but the daemon has used the mount for a
// moment: background work (the git history check) calls it between steps,
// so it runs in the agent's pauses, not beside its commands.
func (e *Engine) Quiet(ctx context.Context) error {
	if !e.active.quiet(ctx.Done(), nil) {
		return ctx.Err()
	}
	return nil
}

// warm walks the mount itself, as a tree walker would, right after it is
// mounted: each directory listed is a READDIRPLUS that puts its names in
// the kernel's cache and has its small files pushed into the page cache
// (see prefetch), so the agent's first grep -r or git status finds the
// view warm instead of paying a round trip per name and per file. It
// lists directories only (it opens no file: the pushes read them, outside
// the journal, which records agents' reads), one at a time, waits while
// the pushes queued are many or while another process is using the
// mount (it yields to real requests), and stops at the byte budget, at
// stop, or at the end of the tree. Symbolic links are not followed.
//
// It returns the directories that hold a .git directory it met and the
// directories it did not list (see Walked); ok is false when it stopped
// before it could say.
func (e *Engine) warm(stop <-chan struct{}, budget int64, ls *Lister) (repos, unlisted []Dir, ok bool) {
	start, pushed := time.Now(), e.bytes.Load()
	queue := []string{e.cfg.MountPoint}
	dirs, files := 0, 0
	for len(queue) > 0 && e.bytes.Load()-pushed < budget {
		if !e.active.quiet(stop, e.prefetch.busy) { // the workers, or the agent, go first
			return nil, nil, false
		}
		d := queue[0]
		queue = queue[1:]
		ents, err := ls.List(d)
		if err != nil {
			continue // gone, or hidden meanwhile: nothing to warm
		}
		if filepath.Base(d) == ".git" && e.t.WarmIndexes() > 0 {
			// Its listing made the index known to the kernel: the view is
			// made in this pause, not once the whole tree is walked (which
			// in a large tree is long after mounting), and its decisions of
			// every tracked file are the walk's and an early git status's
			// to reuse.
			e.event("index_warmed")
		}
		dirs++
		for _, ent := range ents {
			if ent.Dir {
				if ent.Name == ".git" {
					if r, ok := e.t.Backing(d); ok {
						repos = append(repos, r)
					}
				}
				queue = append(queue, filepath.Join(d, ent.Name))
			} else {
				files++
			}
		}
	}
	// Past the byte budget, what is left of the queue is for whoever needs
	// the whole tree (the history check) to walk: at the budget's end the
	// walk had often listed all but a few directories, and the check
	// walked the whole tree again.
	if unlisted, ok = e.unlistedOf(queue); !ok {
		return nil, nil, false
	}
	// The indexes the walk met, made in a pause like every step of it.
	if !e.active.quiet(stop, nil) {
		return nil, nil, false
	}
	e.t.WarmIndexes()
	// Done means warm: the pushes the walk's listings queued are in.
	for !e.drained() {
		select {
		case <-stop:
			return nil, nil, false
		case <-time.After(time.Millisecond):
		}
	}
	e.cfg.Log.Info("warm walk done", "dirs", dirs, "files", files, "pushed_bytes", e.bytes.Load()-pushed,
		"budget_bytes", budget, "seconds", time.Since(start).Seconds())
	e.event("warm_walk_done")
	return repos, unlisted, true
}

// Dir is a directory of the mount as a root and a path beneath it ("."
// for the root's own).
type Dir struct {
	Root *roots.Root
	Rel  string
}

// unlistedOf names the directories of the mount a walk did not list;
// false if one is no root's (the top of a mount of several roots).
func (e *Engine) unlistedOf(dirs []string) (unlisted []Dir, ok bool) {
	for _, d := range dirs {
		r, in := e.t.Backing(d)
		if !in {
			return nil, false
		}
		unlisted = append(unlisted, r)
	}
	return unlisted, true
}

// walkDone records the first walk's outcome and wakes Walked.
func (e *Engine) walkDone(repos, unlisted []Dir, ok bool) {
	e.walkedOnce.Do(func() {
		e.repos, e.unlisted, e.walkedOK = repos, unlisted, ok
		close(e.walked)
	})
}

// Walk starts the warm walk (see keepWarm), when the policy in force has
// the warming engine and its walk on and the mount can warm (see
// Target.Warming); otherwise it records that there is none (Walked).
// The daemon calls it once the mount is set up; later calls do nothing.
func (e *Engine) Walk() {
	e.walkOnce.Do(func() {
		m := e.t.Policy().Mount
		budget := m.WarmMaxBytes
		if !m.Warm || !m.WarmWalk || !e.On() || !e.t.Go(func(ctx context.Context) { e.keepWarm(ctx, budget) }) {
			e.walkDone(nil, nil, false)
		}
	})
}

// Walked waits for the first warm walk to end (see Walk) and returns the
// directories it met that hold a .git directory (git working trees, so
// the history check need not walk the tree again) and the directories it
// did not list (it stopped at its byte budget), for the check to walk.
// ok is false when there was no walk or it stopped before it could say:
// the check walks the whole tree. A tree hidden from the view is not met,
// and needs no warning: the agent cannot run git on it. Once the mount is
// gone, or ctx is done, there is nothing to warn about (none, ok).
func (e *Engine) Walked(ctx context.Context) (found, unlisted []Dir, ok bool) {
	select {
	case <-e.walked:
		return e.repos, e.unlisted, e.walkedOK
	case <-e.cfg.Done:
		return nil, nil, true
	case <-ctx.Done():
		return nil, nil, true
	}
}

// Re-warming: the kernel may forget what the walk put in its caches — its
// inodes are reclaimed like any cache when memory is wanted, or when an
// idle machine's memory is reclaimed proactively — and an agent back from
// a pause would then pay the cold walk again, a request for every name
// it meets. When at least rewarmForgets nodes were forgotten since the
// last walk and no other process has asked
// anything for rewarmIdle, the walk runs again.
const (
	rewarmForgets = 1024
	rewarmIdle    = 5 * time.Second
)

// keepWarm walks the mount once right after mounting, and again whenever
// the kernel has forgotten much of it while the agent was away.
func (e *Engine) keepWarm(ctx context.Context, budget int64) {
	stop := ctx.Done()
	// The child dies with this thread (Pdeathsig): it stays locked to
	// it, and the child lives as long as the walks.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ls, err := e.t.StartLister()
	if err != nil {
		e.cfg.Log.Warn("no warm walk: its lister process did not start", "err", err.Error())
		e.walkDone(nil, nil, false)
		return
	}
	defer ls.Close()
	e.active.walker.Store(ls.Tid()) // its requests are not an agent's
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for walks := 0; ; walks++ {
		if walks > 0 {
			e.cfg.Log.Info("warm walk again: the kernel forgot part of the view", "forgotten_nodes", e.forgotten.Load())
		}
		e.forgotten.Store(0)
		e.walkDone(e.warm(stop, budget, ls)) // the first walk's counts
		for e.forgotten.Load() < rewarmForgets || e.active.idleFor() < rewarmIdle {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}
}
