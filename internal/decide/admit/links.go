package admit

import (
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
)

// links applies [deny] hard_links to a file with more than one name. A hard
// link is a second name for the same bytes: `notes.txt` linked to `.env`, or
// to a 0600 file outside the roots, must not show what the other name hides.
// Refusals never name the other names.
func (d *Decider) links(g *roots.Guard, f *roots.File) error {
	if f.Stat.Nlink <= 1 {
		return nil
	}
	switch g.Policy().Deny.HardLinks {
	case "allow":
		return nil
	case "strict":
		return refusal.Of(refusal.LinksStrict, refusal.OpRead, f.Shown, refusal.Facts{Total: int64(f.Stat.Nlink)})
	}
	if d.Links == nil {
		return refusal.Of(refusal.LinksNeedDaemon, refusal.OpRead, f.Shown, refusal.Facts{Total: int64(f.Stat.Nlink)})
	}
	names, complete := d.Links.OtherNames(g, f)
	if !complete {
		return refusal.Of(refusal.LinkOutsideRoots, refusal.OpRead, f.Shown, refusal.Facts{})
	}
	for _, n := range names {
		if g.Denied(n.Root, n.Rel) {
			return refusal.Of(refusal.LinkDenied, refusal.OpRead, f.Shown, refusal.Facts{})
		}
	}
	return nil
}
