package roots

import (
	"fmt"
	"os"
	"path"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A hooks directory, or a config file a repository includes, need not lie
// in the repository's own work tree: core.hooksPath = ../common-hooks
// names a directory beside it, and a bare repository's relative hooks
// path is relative to its git directory (githooks(5): hooks run in the
// work tree's top, or in the git directory of a bare repository). A write
// into such a directory finds no work tree above it. So every write also
// looks at every repository under the roots, found by a walk of each
// root's directories with the daemon's own rights, never following a
// symbolic link nor leaving the root: the directories holding a .git
// entry (work trees) and the git directories recognised by what they hold
// (bare repositories, separate git directories: see gitdir.go). It looks
// inside neither a .git nor a git directory, and stops with an error (the
// write refused) past maxWalkDirs directories or maxWalkDepth levels.
//
// The walk is kept between writes and checked again at each: a directory
// whose identity and times (mtime, ctime) are those it was read at, and
// whose last change was settled (older than walkSettle when it was read,
// so a change after the read has a later time), holds the entries it
// held; any other is read again. So each write stats every directory
// under the roots and reads only those that changed, and a repository
// made while the daemon runs counts at the next write. Its configs are
// read afresh at every write. A repository outside the roots whose config
// names a directory under them is not found.

const (
	maxWalkDirs  = 1 << 17
	maxWalkDepth = 512
	walkSettle   = time.Second
)

// repoCache is what the last walk of a root found, by path relative to
// the root.
type repoCache struct {
	mu   sync.Mutex
	dirs map[string]*walkedDir
}

// walkedDir is one directory as the walk last read it.
type walkedDir struct {
	dev, ino     uint64
	mtime, ctime unix.Timespec
	settled      bool
	subdirs      []string
	top, gitDir  bool
}

// eachRepo calls fn for every repository under g's roots: with the
// directory of a work tree's top (bare false) or of a git directory not
// named .git (bare true), and the directory's owner. An error of fn ends
// the walk and is returned.
func (g *Guard) eachRepo(fn func(base int, owner uint32, bare bool) error) error {
	n := 0
	for _, r := range g.roots {
		if err := r.eachRepo(&n, fn); err != nil {
			return err
		}
	}
	return nil
}

func (r *Root) eachRepo(n *int, fn func(int, uint32, bool) error) error {
	rfd, err := unix.Open(r.Real, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(rfd)
	var st unix.Stat_t
	if err := unix.Fstat(rfd, &st); err != nil {
		return err
	}
	if st.Dev != r.Dev || st.Ino != r.Ino {
		return fmt.Errorf("%s is not the root it was", r.Real)
	}
	resolve := uint64(unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS)
	if !r.crossMounts {
		resolve |= unix.RESOLVE_NO_XDEV
	}
	open := func(rel string) (int, error) {
		if rel == "." {
			return unix.Dup(rfd)
		}
		return unix.Openat2(rfd, rel, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolve})
	}
	c := &r.walked
	c.mu.Lock()
	defer c.mu.Unlock()
	old, now := c.dirs, map[string]*walkedDir{}
	c.dirs = now // a walk that fails keeps what it read, no more
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		if *n++; *n > maxWalkDirs {
			return fmt.Errorf("more than %d directories under the roots to look for repositories in", maxWalkDirs)
		}
		if depth > maxWalkDepth {
			return fmt.Errorf("directories more than %d deep under the roots to look for repositories in", maxWalkDepth)
		}
		w := old[rel]
		var st unix.Stat_t
		if w != nil && (unix.Fstatat(rfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || !w.same(&st)) {
			w = nil
		}
		if w == nil {
			var err error
			if w, err = readDir(open, rel); err != nil {
				return nil // gone, replaced by a link, or a mount the root does not cross
			}
		}
		now[rel] = w
		if w.top || w.gitDir {
			fd, err := open(rel)
			if err != nil {
				return nil
			}
			var fst unix.Stat_t
			err = unix.Fstat(fd, &fst)
			if err == nil {
				err = fn(fd, fst.Uid, w.gitDir)
			}
			unix.Close(fd)
			if err != nil || w.gitDir {
				return err // a git directory's own files are not looked in
			}
		}
		for _, name := range w.subdirs {
			if err := walk(path.Join(rel, name), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(".", 0)
}

// same reports whether st is the directory w was read as, unchanged since.
func (w *walkedDir) same(st *unix.Stat_t) bool {
	return w.settled && st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Dev == w.dev && st.Ino == w.ino && st.Mtim == w.mtime && st.Ctim == w.ctime
}

// readDir reads the directory rel (opened by open): its identity, times,
// subdirectories and marks.
func readDir(open func(string) (int, error), rel string) (*walkedDir, error) {
	before := time.Now()
	fd, err := open(rel)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	w := &walkedDir{dev: st.Dev, ino: st.Ino, mtime: st.Mtim, ctime: st.Ctim}
	last := max(st.Mtim.Nano(), st.Ctim.Nano())
	w.settled = before.UnixNano()-last > int64(walkSettle)
	var m gitMark
	for {
		ents, err := f.ReadDir(1024)
		for _, e := range ents {
			name := e.Name()
			if name == ".git" {
				w.top = true
				continue
			}
			m |= markOf(name)
			if e.Type().IsDir() {
				w.subdirs = append(w.subdirs, name)
			}
		}
		if err != nil || len(ents) == 0 {
			break
		}
	}
	w.gitDir = m.gitDir()
	return w, nil
}
