package mount

import (
	"context"
	"iter"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/view/warm"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The view's side of the warming engine (internal/view/warm): the engine
// decides what to push into the page cache and when; the view hands it
// its nodes as warm.Node handles and answers it as a warm.Target, whose
// one way into the kernel is the gate's push (see view.Push). The mount
// makes the engine and tells it what the kernel was handed; the daemon
// starts its warm walk and joins it to the history check (see Warming).

// ref is the engine's handle of an inode the kernel holds. The engine
// cannot reach the inode in it: it knows ref only as a warm.Node.
type ref struct{ in *fs.Inode }

// refOf is in's handle, or nil for none.
func refOf(in *fs.Inode) warm.Node {
	if in == nil {
		return nil
	}
	return ref{in}
}

// Held is the node's mark; nil for the top of several roots, and for a
// git index (served rewritten: never pushed).
func (r ref) Held() *atomic.Pointer[warm.Held] {
	if n, ok := nodeOf(r.in); ok && !n.index {
		return &n.held
	}
	return nil
}

func (r ref) Dir() warm.Node {
	_, parent := r.in.Parent()
	return refOf(parent)
}

func (r ref) Child(name string) warm.Node { return refOf(r.in.GetChild(name)) }

func (r ref) Children() iter.Seq2[string, warm.Node] {
	return func(yield func(string, warm.Node) bool) {
		for name, c := range r.in.Children() {
			if !yield(name, ref{c}) {
				return
			}
		}
	}
}

func (r ref) IsDir() bool    { return r.in.IsDir() }
func (r ref) Top() warm.Node { return ref{r.in.Root()} }

// Path is the inode's path through the mount, by the names the kernel
// holds.
func (r ref) Path() (string, bool) {
	var mp string
	switch x := r.in.Root().Operations().(type) {
	case *node:
		mp = x.v.mountPoint
	case *top:
		mp = x.v.mountPoint
	default:
		return "", false
	}
	segs, ok := namesDown(r.in.Root(), r.in)
	return filepath.Join(append([]string{mp}, segs...)...), ok
}

// target is the view as the engine sees it (warm.Target).
type target struct {
	v *view
	s *Server
}

var _ warm.Target = target{}

func (t target) Push(n warm.Node, id fileid.Identity, data, buf []byte, wait bool) (int, string) {
	return t.v.push(n, id, data, buf, wait)
}

// Warming: only with the warming engine on in the policy in force, with
// a watch (which drops what changes) and in kernel open mode (where the
// page cache is what READs fill anyway).
func (t target) Warming() bool {
	return t.v.kernelOpen && t.v.watched() && t.v.policy().Mount.Warm
}

func (t target) Policy() *policy.Policy { return t.v.policy() }
func (t target) Changes() int64         { return t.v.changes.Load() }
func (t target) Root(name string) (*roots.Guard, *roots.Root) {
	return t.v.root(name)
}

func (t target) Shown(g *roots.Guard, dir roots.Path, list []roots.DirEntry, keep *admit.Keep) []roots.DirEntry {
	return t.v.admit.Shown(g, dir, list, func(crel string) bool { return t.v.hidesMountPoint(dir.Root, crel) }, keep)
}

func (t target) Busy(st *unix.Stat_t) bool { return busy(st) }
func (t target) WarmIndexes() int          { return t.v.warmIndexes() }
func (t target) Go(f func(context.Context)) bool {
	return t.v.work.Go(f)
}
func (t target) StartLister() (*warm.Lister, error) { return startLister(t.v.mountPoint) }

// Backing names d, a directory of the mount, as a root and a path in it
// ("." for the root's own); false for the top of a mount of several
// roots, which is no root's.
func (t target) Backing(d string) (warm.Dir, bool) {
	rel, err := filepath.Rel(t.v.mountPoint, d)
	if err != nil {
		return warm.Dir{}, false
	}
	g := t.v.guard.Load()
	if _, several := t.s.root.(*top); !several {
		return warm.Dir{Root: g.Roots()[0], Rel: rel}, true
	}
	// Several roots: the first name is the root's.
	name, rest, _ := strings.Cut(rel, "/")
	_, r := t.v.root(name)
	if r == nil {
		return warm.Dir{}, false
	}
	if rest == "" {
		rest = "." // the root's own
	}
	return warm.Dir{Root: r, Rel: rest}, true
}

// saw notes a request's caller (see warm.Engine.Saw).
func (v *view) saw(ctx context.Context) {
	if c, ok := fuse.FromContext(ctx); ok {
		v.warm.Saw(c.Pid)
	}
}

// Warming is the mount's warming engine: the daemon starts its warm walk
// (Walk) and joins what the walk met to the history check (Walked).
func (s *Server) Warming() *warm.Engine { return s.v.warm }

// Used notes that another process used the mount without a request (see
// warm.Engine.Used).
func (s *Server) Used() { s.v.warm.Used() }

// Own reports whether pid is a helper process of the daemon's (see
// warm.Engine.Own).
func (s *Server) Own(pid uint32) bool { return s.v.warm.Own(pid) }

// Quiet waits until no process but the daemon has used the mount for a
// moment (see warm.Engine.Quiet).
func (s *Server) Quiet(ctx context.Context) error { return s.v.warm.Quiet(ctx) }
