package admit

// LinkIndex is the daemon's index of hard links (its Linker): for every
// regular file under the roots with more than one name, all the names it
// has there. A name the index does not hold lies outside the roots (or
// appeared since the walk). The index is built by a walk of the roots and
// rebuilt when a file it is asked about no longer matches what the walk
// saw: a link made, removed or renamed changes the inode's link count or
// ctime.

import (
	"os"
	"path/filepath"
	"sync"

	"github.com/fsguard/fsguard/internal/decide/roots"

	"golang.org/x/sys/unix"
)

type linkInode struct{ dev, ino uint64 }

// linkEntry is what the walk saw of one multi-link inode.
type linkEntry struct {
	nlink   uint64
	ctimeNs int64
	names   []Name
}

// LinkIndex holds the multi-link inodes under a guard's roots.
type LinkIndex struct {
	mu    sync.Mutex
	guard *roots.Guard
	m     map[linkInode]*linkEntry
	// walking is closed when the walk under way ends; nil when none is.
	walking chan struct{}
	// Walks counts completed walks (for tests and metrics).
	Walks int
}

// NewLinkIndex returns an empty index; the first question walks the roots.
func NewLinkIndex() *LinkIndex { return &LinkIndex{} }

// OtherNames implements Linker: every name of f's inode under the
// roots, and whether they are all its names.
func (x *LinkIndex) OtherNames(g *roots.Guard, f *roots.File) ([]Name, bool) {
	k := linkInode{f.Stat.Dev, f.Stat.Ino}
	for attempt := 0; attempt < 2; attempt++ {
		x.mu.Lock()
		e, ok := x.m[k]
		fresh := x.guard == g && ok && e.nlink == uint64(f.Stat.Nlink) && e.ctimeNs == f.Stat.Ctim.Nano()
		x.mu.Unlock()
		if fresh {
			return e.names, uint64(len(e.names)) == e.nlink
		}
		if attempt == 0 {
			x.rebuild(g)
		}
	}
	return nil, false
}

// rebuild walks the roots again, or waits for the walk under way.
func (x *LinkIndex) rebuild(g *roots.Guard) {
	x.mu.Lock()
	if w := x.walking; w != nil {
		x.mu.Unlock()
		<-w
		return
	}
	done := make(chan struct{})
	x.walking = done
	x.mu.Unlock()
	m := walkLinks(g)
	x.mu.Lock()
	x.m, x.guard, x.walking = m, g, nil
	x.Walks++
	x.mu.Unlock()
	close(done)
}

// walk finds every regular file with more than one link beneath the roots,
// denied places included (a denied name is a name). Each directory is opened
// by name beneath its parent's descriptor with O_NOFOLLOW, so a directory
// swapped for a symlink mid-walk is skipped, never followed. It stays on each
// root's device unless the root crosses mounts, as resolution does. Nested
// roots name one file once.
func walkLinks(g *roots.Guard) map[linkInode]*linkEntry {
	m := map[linkInode]*linkEntry{}
	seen := map[string]bool{}
	for _, r := range g.Roots() {
		r.Use(func(rfd int) error {
			fd, err := unix.Openat(rfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err == nil {
				walkDir(r, fd, ".", m, seen)
			}
			return err
		})
	}
	return m
}

// walkDir walks the open directory fd (rel beneath r), and closes it.
func walkDir(r *roots.Root, fd int, rel string, m map[linkInode]*linkEntry, seen map[string]bool) {
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	for {
		ents, err := d.ReadDir(1024)
		for _, de := range ents {
			child := de.Name()
			if rel != "." {
				child = rel + "/" + de.Name()
			}
			var st unix.Stat_t
			if unix.Fstatat(fd, de.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				if st.Dev != r.Dev && !r.CrossMounts() {
					continue
				}
				cfd, err := unix.Openat(fd, de.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err == nil {
					walkDir(r, cfd, child, m, seen)
				}
			case unix.S_IFREG:
				if st.Nlink <= 1 {
					continue
				}
				real := filepath.Join(r.Real, child)
				if seen[real] {
					continue
				}
				seen[real] = true
				k := linkInode{st.Dev, st.Ino}
				e := m[k]
				if e == nil {
					e = &linkEntry{nlink: uint64(st.Nlink), ctimeNs: st.Ctim.Nano()}
					m[k] = e
				}
				e.names = append(e.names, Name{Root: r, Rel: child})
			}
		}
		if err != nil || len(ents) == 0 {
			return
		}
	}
}
