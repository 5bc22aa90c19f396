package mount

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/view/warm"

	"github.com/hanwen/go-fuse/v2/fuse"
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

// saw notes a request's caller.
func (v *view) saw(ctx context.Context) {
	if c, ok := fuse.FromContext(ctx); ok && c.Pid != self && c.Pid != v.active.walker.Load() && c.Pid != v.active.helper.Load() {
		v.active.last.Store(time.Now().UnixNano())
	}
}

// Used notes that another process used the mount without a request:
// an open served from the kernel's caches, which only the opens audit
// sees. Background work yields to it as to a request; without it, the
// history check's walk of the backing tree ran beside a grep -r that
// the warm walk had made cache-only, and took a core from it.
func (s *Server) Used() { s.v.active.last.Store(time.Now().UnixNano()) }

// Own reports whether pid is a helper process of the daemon's (the
// refill's residency child, while it lives): its opens of files in the
// mount are the daemon's, not an agent's, and the opens audit leaves
// them out.
func (s *Server) Own(pid uint32) bool { return pid != 0 && pid == s.v.active.helperPid.Load() }

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
func (s *Server) Quiet(ctx context.Context) error {
	if !s.v.active.quiet(ctx.Done(), nil) {
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
func (s *Server) warm(stop <-chan struct{}, budget int64, ls *warm.Lister) (repos, unlisted []Dir, ok bool) {
	start, pushed := time.Now(), s.v.prefetch.bytes.Load()
	queue := []string{s.mp}
	dirs, files := 0, 0
	for len(queue) > 0 && s.v.prefetch.bytes.Load()-pushed < budget {
		if !s.v.active.quiet(stop, s.v.prefetch.busy) { // the workers, or the agent, go first
			return nil, nil, false
		}
		d := queue[0]
		queue = queue[1:]
		ents, err := ls.List(d)
		if err != nil {
			continue // gone, or hidden meanwhile: nothing to warm
		}
		if filepath.Base(d) == ".git" && s.v.warmIndexes() > 0 {
			// Its listing made the index known to the kernel: the view is
			// made in this pause, not once the whole tree is walked (which
			// in a large tree is long after mounting), and its decisions of
			// every tracked file are the walk's and an early git status's
			// to reuse.
			s.event("index_warmed")
		}
		dirs++
		for _, e := range ents {
			if e.Dir {
				if e.Name == ".git" {
					if r, ok := s.backingOf(d); ok {
						repos = append(repos, r)
					}
				}
				queue = append(queue, filepath.Join(d, e.Name))
			} else {
				files++
			}
		}
	}
	// Past the byte budget, what is left of the queue is for whoever needs
	// the whole tree (the history check) to walk: at the budget's end the
	// walk had often listed all but a few directories, and the check
	// walked the whole tree again.
	if unlisted, ok = s.unlistedOf(queue); !ok {
		return nil, nil, false
	}
	// The indexes the walk met, made in a pause like every step of it.
	if !s.v.active.quiet(stop, nil) {
		return nil, nil, false
	}
	s.v.warmIndexes()
	// Done means warm: the pushes the walk's listings queued are in.
	for !s.v.prefetch.drained() {
		select {
		case <-stop:
			return nil, nil, false
		case <-time.After(time.Millisecond):
		}
	}
	s.log.Info("warm walk done", "dirs", dirs, "files", files, "pushed_bytes", s.v.prefetch.bytes.Load()-pushed,
		"budget_bytes", budget, "seconds", time.Since(start).Seconds())
	s.event("warm_walk_done")
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
func (s *Server) unlistedOf(dirs []string) (unlisted []Dir, ok bool) {
	for _, d := range dirs {
		r, in := s.backingOf(d)
		if !in {
			return nil, false
		}
		unlisted = append(unlisted, r)
	}
	return unlisted, true
}

// backingOf names d, a directory of the mount, as a root and a path in
// it ("." for the root's own); false for the top of a mount of several
// roots, which is no root's.
func (s *Server) backingOf(d string) (Dir, bool) {
	rel, err := filepath.Rel(s.mp, d)
	if err != nil {
		return Dir{}, false
	}
	g := s.v.guard.Load()
	if _, several := s.root.(*top); !several {
		return Dir{Root: g.Roots()[0], Rel: rel}, true
	}
	// Several roots: the first name is the root's.
	name, rest, _ := strings.Cut(rel, "/")
	_, r := s.v.root(name)
	if r == nil {
		return Dir{}, false
	}
	if rest == "" {
		rest = "." // the root's own
	}
	return Dir{Root: r, Rel: rest}, true
}

// walkDone records the first walk's outcome and wakes Repos.
func (s *Server) walkDone(repos, unlisted []Dir, ok bool) {
	s.walkedOnce.Do(func() {
		s.repos, s.unlisted, s.walkedOK = repos, unlisted, ok
		close(s.walked)
	})
}

// Walked waits for the first warm walk to end (see Warm) and returns the
// directories it met that hold a .git directory (git working trees, so
// the history check need not walk the tree again) and the directories it
// did not list (it stopped at its byte budget), for the check to walk.
// ok is false when there was no walk or it stopped before it could say:
// the check walks the whole tree. A tree hidden from the view is not met,
// and needs no warning: the agent cannot run git on it. Once the mount is
// gone, or ctx is done, there is nothing to warn about (none, ok).
func (s *Server) Walked(ctx context.Context) (found, unlisted []Dir, ok bool) {
	select {
	case <-s.walked:
		return s.repos, s.unlisted, s.walkedOK
	case <-s.stopRoots:
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
func (s *Server) keepWarm(ctx context.Context, budget int64) {
	stop := ctx.Done()
	// The child dies with this thread (Pdeathsig): it stays locked to
	// it, and the child lives as long as the walks.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ls, err := startLister(s.mp)
	if err != nil {
		s.log.Warn("no warm walk: its lister process did not start", "err", err.Error())
		s.walkDone(nil, nil, false)
		return
	}
	defer ls.Close()
	s.v.active.walker.Store(ls.Tid()) // its requests are not an agent's
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for walks := 0; ; walks++ {
		if walks > 0 {
			s.log.Info("warm walk again: the kernel forgot part of the view", "forgotten_nodes", s.v.forgotten.Load())
		}
		s.v.forgotten.Store(0)
		s.walkDone(s.warm(stop, budget, ls)) // the first walk's counts
		for s.v.forgotten.Load() < rewarmForgets || s.v.active.idleFor() < rewarmIdle {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}
}
