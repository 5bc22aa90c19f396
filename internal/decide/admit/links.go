package admit

import (
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
)

// links applies [deny] hard_links to a file with more than one name. A hard
// link is a second name for the same bytes: `notes.txt` linked to `.env`
// must not show what the other name hides. Under "known", the default, a
// file one of whose other names under the roots is denied is hidden, and a
// file whose other names cannot be seen (outside the roots: a local clone's
// packs, pnpm's store) is judged like any file — by its name here, by its
// content, and by the caller's own rights, which are the same under every
// name (the inode's mode bits and ACL) — as the rest of the decision does.
// "inside" also hides a file with a name outside the roots or unknown.
// Refusals never name the other names.
func (d *Decider) links(g *roots.Guard, f *roots.File) error {
	if f.Stat.Nlink <= 1 {
		return nil
	}
	mode := g.Policy().Deny.HardLinks
	switch mode {
	case "allow":
		return nil
	case "strict":
		return refusal.Of(refusal.LinksStrict, refusal.OpRead, f.Shown, refusal.Facts{Total: int64(f.Stat.Nlink)})
	}
	if d.Links == nil {
		// Without the index no other name under the roots is known, so
		// none can be vouched for as not denied.
		return refusal.Of(refusal.LinksNeedDaemon, refusal.OpRead, f.Shown, refusal.Facts{Total: int64(f.Stat.Nlink)})
	}
	names, complete := d.Links.OtherNames(g, f)
	if !complete && mode == "inside" {
		return refusal.Of(refusal.LinkOutsideRoots, refusal.OpRead, f.Shown, refusal.Facts{})
	}
	for _, n := range names {
		if g.Denied(n.Root, n.Rel) {
			return refusal.Of(refusal.LinkDenied, refusal.OpRead, f.Shown, refusal.Facts{})
		}
	}
	return nil
}
