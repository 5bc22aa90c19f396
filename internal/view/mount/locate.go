package mount

import (
	"github.com/fsguard/fsguard/internal/decide/roots"
)

// Target is the backing file an inode of the mount stands for now.
type Target struct {
	Root *roots.Root
	Rel  string // relative to Root
	Real string // real absolute path, as observations name it
	// Dev and Ino are the backing file's identity (the mount's inode
	// numbers are its own).
	Dev, Ino uint64
}

// Locate names the backing file of the mount's inode number ino (as
// st_ino shows it), for a process's open seen outside any FUSE request.
// It makes no system call. ok is false when the kernel holds no such
// node of this mount.
func (s *Server) Locate(ino uint64) (Target, bool) {
	n := s.v.held(ino)
	if n == nil {
		return Target{}, false
	}
	_, p, errno := n.resolve()
	if errno != 0 {
		return Target{}, false
	}
	return Target{Root: p.Root, Rel: p.Rel, Real: p.Real(), Dev: n.key.dev, Ino: n.key.ino}, true
}
