package caller

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
)

// View maps between a caller's own view of the mount and the host paths
// the guard works with. A caller in a container names /workspace/src/a.go;
// the guard resolves /srv/project/src/a.go; the caller must only ever see
// the first. Prefix is where the caller sees the mount; with one root the
// mount's top is that root, with several each root is a directory named
// by its name.
type View struct {
	Prefix string
	Roots  []*roots.Root
}

func (v *View) multi() bool { return len(v.Roots) > 1 }

// ToHost turns a caller's name (relative to its cwd, both in its view)
// into the host path, or refuses a name outside the mount.
func (v *View) ToHost(name, cwd string) (string, error) {
	if err := roots.ValidateName(name); err != nil {
		return "", err
	}
	abs := name
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(cwd, abs)
	}
	abs = filepath.Clean(abs)
	rel, ok := roots.Within(v.Prefix, abs)
	if !ok {
		return "", refusal.Of(refusal.OutsideMount, refusal.OpRead, abs, refusal.Facts{Detail: v.Prefix})
	}
	if rel == "." {
		rel = ""
	}
	if !v.multi() {
		return filepath.Join(v.Roots[0].Path, rel), nil
	}
	first, rest, _ := strings.Cut(rel, "/")
	for _, r := range v.Roots {
		if r.Name == first {
			return filepath.Join(r.Path, rest), nil
		}
	}
	return "", refusal.Of(refusal.TopHoldsRoots, refusal.OpRead, abs, refusal.Facts{})
}

// ToView turns a host path back into the caller's view.
func (v *View) ToView(host string) string {
	for _, r := range v.Roots {
		for _, base := range []string{r.Real, r.Path} {
			if rel, ok := roots.Within(base, host); ok {
				top := v.Prefix
				if v.multi() {
					top = filepath.Join(v.Prefix, r.Name)
				}
				return filepath.Join(top, rel)
			}
		}
	}
	return host
}

// Err puts a refusal into the caller's view: its path and every path
// among its facts (the suggestions, the roots), so each door renders its
// message in that view.
func (v *View) Err(err error) error {
	var r *refusal.Error
	if v == nil || !errors.As(err, &r) {
		return err
	}
	return r.In(v.ToView)
}
