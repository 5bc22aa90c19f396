package session

import (
	"path/filepath"

	"github.com/fsguard/fsguard/internal/decide/roots"
)

// Base is the directory a relative name resolves against for a door
// whose caller cannot know the process's working directory (MCP: the
// model names src/main.go, not the server's cwd): cwd itself when it lies
// in what the caller can see (the mount in its view, or a root), else the
// mount's top in the caller's view, or the only root. With several roots
// and a cwd outside them all it stays cwd, and the name is refused as
// outside the roots, the refusal naming them.
func (s *Service) Base(cwd string) string {
	if s.view != nil {
		if _, in := roots.Within(s.view.Prefix, filepath.Clean(cwd)); in && filepath.IsAbs(cwd) {
			return cwd
		}
		return s.view.Prefix
	}
	rs := s.Guard.Roots()
	if filepath.IsAbs(cwd) {
		for _, r := range rs {
			for _, base := range []string{r.Path, r.Real} {
				if _, in := roots.Within(base, filepath.Clean(cwd)); in {
					return cwd
				}
			}
		}
	}
	if len(rs) == 1 {
		return rs[0].Path
	}
	return cwd
}
