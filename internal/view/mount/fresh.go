package mount

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/view/watch"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// The kernel caches names, attributes, listings and pages for as long as
// the policy's timeouts allow, which keeps the mount near native speed.
// What keeps it fresh is invalidation: every change the watch reports in
// the backing tree, and every write the daemon makes itself, tells the
// kernel to forget exactly the entries, attributes and pages it held of
// what changed, before anyone can read them again.

// startWatch watches the guard's roots with the policy's backend.
func (s *Server) startWatch(g *roots.Guard) error {
	backend := g.Policy().Mount.Watch
	if backend == "off" {
		return errors.New(`mount.watch = "off"`)
	}
	var dirs []string
	for _, r := range g.Roots() {
		dirs = append(dirs, r.Real)
	}
	w, err := watch.Start(dirs, backend, watch.Options{Skip: s.mp}, s.apply)
	if err != nil {
		return err
	}
	s.watchMu.Lock()
	s.watcher = w
	s.watchMu.Unlock()
	s.blind.Store(nil)
	s.v.open.Store(&fds{max: keptFDs()}) // the watch can now drop what changed
	s.log.Info("watching the backing tree", "backend", w.Backend(), "roots", len(dirs))
	if b := w.Blind(); b != nil {
		s.sight(*b) // blind from the start: as if a directory became so
	}
	return nil
}

func (s *Server) stopWatch() {
	if c := s.v.open.Swap(nil); c != nil {
		c.clear() // nothing would drop a changed file's descriptor now
	}
	s.closeWatcher()
}

// closeWatcher stops the watch's events; once it returns, apply is called
// no more.
func (s *Server) closeWatcher() {
	s.watchMu.Lock()
	w := s.watcher
	s.watcher = nil
	s.watchMu.Unlock()
	if w != nil {
		w.Close()
	}
}

// Blind is a part of the tree the watch could not watch: the first
// directory of it reported, why, and since when.
type Blind struct {
	Dir, Err string
	Since    time.Time
}

// Unwatched returns what the watch cannot see now, or nil when it sees
// the whole tree (or there is no watch at all: see Watch).
func (s *Server) Unwatched() *Blind { return s.blind.Load() }

// Sighted is the last time the watch saw the whole tree again after part
// of it could not be watched: what was blind, since when, and when it was
// watched again (At).
type Sighted struct {
	Blind
	At time.Time
}

// WatchedAgain returns the last Sighted, nil when the watch was never
// blind.
func (s *Server) WatchedAgain() *Sighted { return s.sighted.Load() }

// sight follows whether the watch sees the whole tree. While a
// directory cannot be watched, nothing would tell the view of a change
// there, so the view is served as with no watch at all: short cache
// timeouts, no negative entries, no kept descriptors, no pushed pages;
// what the kernel holds is dropped at each change of state.
func (s *Server) sight(e watch.Event) {
	if e.Op == watch.Blind {
		if c := s.v.open.Swap(nil); c != nil {
			c.clear()
		}
		s.blind.Store(&Blind{Dir: e.Dir, Err: e.Name, Since: time.Now()})
		s.event("watch_blind")
		s.log.Warn("a directory beneath the roots cannot be watched: until it is (retried each second), the view is served with short cache timeouts and nothing kept or pushed",
			"dir", e.Dir, "err", e.Name, "entry_timeout", fallbackTimeout.String())
	} else {
		b := s.blind.Swap(nil)
		s.v.open.Store(&fds{max: keptFDs()})
		s.event("watch_sighted")
		args := []any{}
		if b != nil {
			args = append(args, "dir", b.Dir, "seconds", time.Since(b.Since).Seconds())
			s.sighted.Store(&Sighted{Blind: *b, At: time.Now()})
		}
		s.log.Info("every directory beneath the roots is watched again", args...)
	}
	if s.live.Load() {
		s.invalidate()
	}
}

// Watch names the watch in use ("fanotify", "inotify"), or "" when there
// is none and the short fallback timeouts keep the view fresh.
func (s *Server) Watch() string {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watcher == nil {
		return ""
	}
	return s.watcher.Backend()
}

// Refresh makes the kernel forget what it holds of the file at real (a
// real path beneath a root) and of its directory's listing. The daemon
// calls it after its own writes, before the write answers, so the writer
// never reads its old bytes back through the mount.
func (s *Server) Refresh(real string) {
	s.apply([]watch.Event{{Op: watch.Added, Dir: filepath.Dir(real), Name: filepath.Base(real)}})
}

// apply turns changes into invalidations of what the kernel holds, in
// the directories it knows: a directory it never looked up has nothing
// cached to be stale. Names in them are invalidated even where the
// kernel holds no node while a reply may be taking one to it (see
// Changed).
func (s *Server) apply(evs []watch.Event) {
	if !s.live.Load() {
		// Nothing is cached yet; only whether the watch sees the whole
		// tree is followed (a watch blind from its start may see again
		// before the mount exists).
		for _, e := range evs {
			if e.Op == watch.Blind || e.Op == watch.Sighted {
				s.sight(e)
			}
		}
		return
	}
	s.v.changes.Add(1)
	s.follow(evs)
	seen := make(map[watch.Event]bool, len(evs))
	tree := false // a change outside every .git directory
	defer func() {
		if tree {
			// It may hide or show a tracked file. What git writes in
			// .git cannot (it tracks no path there), and a new index
			// is a new file to the rewrite anyway.
			s.v.git.changed()
		}
	}()
	for _, e := range evs {
		if seen[e] || e.Op == watch.Moved { // a Moved was followed above; its names come as Removed and Added
			continue
		}
		seen[e] = true
		tree = tree || e.Op == watch.Lost || !s.inGitDir(e.Dir)
		if e.Op == watch.Lost {
			s.event("watch_overflow") // events were lost: forget everything
			s.invalidate()
			continue
		}
		if e.Op == watch.Blind || e.Op == watch.Sighted {
			s.sight(e)
			continue
		}
		for _, dir := range s.held(e.Dir) {
			c := dir.GetChild(e.Name)
			if cn, ok := nodeOf(c); ok {
				if kept := s.v.open.Load(); kept != nil {
					kept.drop(cn) // the name may mean another file now
				}
			}
			switch e.Op {
			case watch.Changed:
				// No node while a reply is being made (see replies), or a
				// number the kernel does not know yet (ENOENT): a LOOKUP
				// or listing may be handing the kernel this name right
				// now, decided before this change, with the hour's
				// timeouts. The kernel holds the directory's lock while it
				// takes such a reply in, and invalidating a name takes
				// that lock, so the name is dropped once it is in.
				if c == nil && s.v.replies.any() || c != nil && c.NotifyContent(0, 0) == syscall.ENOENT {
					dir.NotifyEntry(e.Name)
				}
				if c != nil {
					s.repush(c, filepath.Join(e.Dir, e.Name))
				}
			case watch.Added, watch.Removed:
				if c != nil && e.Op == watch.Removed {
					s.forgetBelow(c) // gone from this path: so is all beneath it
					if cn, ok := nodeOf(c); ok {
						s.v.bury(cn) // before the kernel is told: see bury
					}
					// The name no longer leads to the node: a path made
					// through it (see node.where) would name whatever
					// takes its place.
					dir.RmChild(e.Name)
					dir.NotifyDelete(e.Name, c)
				} else {
					dir.NotifyEntry(e.Name) // also drops a cached "not there"
				}
				if c != nil {
					c.NotifyContent(0, 0) // an open file's pages are of the old entry
				}
				dir.NotifyContent(0, 0) // the listing and the directory's times
				if dn, ok := nodeOf(dir); ok {
					dn.dropped.Store(true)
				}
			}
		}
	}
}

// follow moves, in the daemon's tree, each node the kernel holds that the
// watch reports renamed (Moved: the kernel named both places) within its
// root, before the batch is applied. The batch's Removed of the old name
// then finds no node there and only tells the kernel the name is gone,
// not that its file or directory is deleted; so whatever holds the node
// goes on reaching it, as natively: a shell whose directory was renamed
// lists it, a program reads on in a file renamed under it (their requests
// name the node; its path is made from the tree, see node.where). The
// kernel's next lookup of the new name finds the same inode and moves its
// cached entry there.
//
// A move decides nothing: every request on the node resolves and admits
// its new path afresh, so a node moved into a denied subtree is refused
// like any name there, and what the kernel caches beneath a moved
// directory is dropped (see forgetBelow). The entry at the new name must
// be the node's very file (device and inode), or it was renamed again or
// replaced since: then the batch applies as a removal and an addition. A
// rename reported as those alone (the inotify watch) is applied so too.
func (s *Server) follow(evs []watch.Event) {
	for _, e := range evs {
		if e.Op != watch.Moved {
			continue
		}
		for _, from := range s.held(e.FromDir) {
			c := from.GetChild(e.FromName)
			n, ok := nodeOf(c)
			if !ok {
				continue
			}
			for _, to := range s.held(e.Dir) {
				if tn, ok := nodeOf(to); !ok || tn.root != n.root || !s.stillIs(tn, e.Name, n.key) {
					continue
				}
				if from.MvChild(e.FromName, to, e.Name, true) {
					s.v.moved.Store(s.v.changes.Load())
					s.forgetBelow(c) // decided on the old path
				}
				break
			}
		}
	}
}

// stillIs reports whether name in the directory dir leads, now, to the
// backing file k stands for.
func (s *Server) stillIs(dir *node, name string, k idKey) bool {
	_, r := s.v.root(dir.root)
	rel, _, ok := dir.where()
	var st unix.Stat_t
	return r != nil && ok && r.StatNow(childRel(rel, name), &st) == nil && k.is(&st) && k.typ == st.Mode&unix.S_IFMT
}

// forgetBelow makes the kernel forget what it caches beneath the
// directory in, whose name was removed (deleted, or moved away) or which
// moved (see follow): the names in it and the attributes, pages and
// listings of the nodes they lead to, all the way down; the descriptors
// kept for its files go too. A shell or program holding a directory in it
// (its working directory, an open descriptor) was otherwise still
// answered from those caches: a file read before its directory moved into
// a denied subtree, or out of the root, read on. Every request beneath it
// now asks the daemon, which decides on the node's path now, or finds it
// has none.
func (s *Server) forgetBelow(in *fs.Inode) {
	if !in.IsDir() {
		return
	}
	open := s.v.open.Load()
	dirs := []*fs.Inode{in}
	for len(dirs) > 0 {
		d := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		for name, c := range d.Children() {
			if cn, ok := nodeOf(c); ok && open != nil {
				open.drop(cn)
			}
			d.NotifyEntry(name)
			c.NotifyContent(0, 0)
			if c.IsDir() {
				dirs = append(dirs, c)
			}
		}
	}
}

// inGitDir reports whether the real directory dir lies in a .git
// directory beneath a root (a change of .git itself is not: it is rare,
// and counted as the tree's). Only the path beneath a root counts (a root
// that is itself inside some .git still has a tree of its own), and it
// must lie in a .git beneath every root that holds it.
func (s *Server) inGitDir(dir string) bool {
	in := false
	for _, r := range s.v.guard.Load().Roots() {
		if rel, ok := roots.Within(r.Real, dir); ok {
			if !strings.Contains("/"+rel+"/", "/.git/") {
				return false
			}
			in = true
		}
	}
	return in
}

// held finds the kernel's node of a real directory path, in each root
// that contains it, or none when the kernel holds nothing of it.
func (s *Server) held(dir string) []*fs.Inode {
	var out []*fs.Inode
	for _, r := range s.v.guard.Load().Roots() {
		rel, ok := roots.Within(r.Real, dir)
		if !ok {
			continue
		}
		if rel == "." {
			rel = ""
		}
		n := s.root.EmbeddedInode()
		if _, multi := s.root.(*top); multi {
			n = n.GetChild(r.Name)
		}
		for _, name := range strings.Split(rel, "/") {
			if n == nil || name == "" {
				break
			}
			n = n.GetChild(name)
		}
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

// nodeOf is the view's node of a kernel inode, if it is one.
func nodeOf(in *fs.Inode) (*node, bool) {
	if in == nil {
		return nil, false
	}
	n, ok := in.Operations().(*node)
	return n, ok
}

// repush pushes a changed small file's new version into the page cache,
// as its listing did (the kernel knows the inode: it just dropped its
// pages). The push admits the version first, as every push does.
func (s *Server) repush(c *fs.Inode, real string) {
	n, ok := nodeOf(c)
	if !ok {
		return
	}
	var st unix.Stat_t
	if unix.Lstat(real, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return
	}
	if !n.key.is(&st) {
		return // the name now means another file: the kernel looks it up anew
	}
	if !n.index {
		s.v.warm.Offer(ref{c}, fileid.Of(&st), st.Size)
	}
}
