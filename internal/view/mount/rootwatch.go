package mount

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// A root is held by its descriptor, which follows the directory wherever
// it goes: renamed, the old directory would go on being served under the
// configured name; deleted and made again, the view would show the dead
// one. So the daemon also looks at each root's configured path, once a
// second (one stat per root), and when the directory there is no longer
// the one it holds, re-opens the roots by path — the view follows the
// configuration. A root that is missing is said once; its names answer
// ENOENT until it is back.

const rootCheckEvery = time.Second

// watchRoots runs until ctx ends.
func (s *Server) watchRoots(ctx context.Context) {
	missing := map[string]bool{}
	t := time.NewTicker(rootCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g := s.v.guard.Load()
		moved := false
		for _, r := range g.Roots() {
			var there, held unix.Stat_t
			if err := unix.Stat(r.Real, &there); err != nil {
				if !missing[r.Path] {
					missing[r.Path] = true
					s.log.Warn("a root is missing; its names answer ENOENT until it is back", "root", r.Path, "err", err.Error())
					s.event("root_missing")
				}
				continue
			}
			if missing[r.Path] {
				delete(missing, r.Path)
				moved = true // back: open it again
			}
			if r.Use(func(fd int) error { return unix.Fstat(fd, &held) }) == nil && (held.Dev != there.Dev || held.Ino != there.Ino) {
				moved = true
			}
		}
		if !moved {
			continue
		}
		if err := s.Reload(g.Policy()); err != nil {
			s.log.Warn("a root changed but could not be opened again", "err", err.Error())
			continue
		}
		s.log.Warn("a root was replaced, renamed or recreated; the view follows its configured path")
		s.event("root_reopened")
	}
}
