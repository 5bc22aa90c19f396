package admit

import (
	"fmt"

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
		return refusal.Cannot(refusal.Denied, f.Name, fmt.Sprintf("the file has %d names (hard links) and the policy shows no such file ([deny] hard_links = \"strict\"); read it under its only name, or set hard_links = \"inside\"", f.Stat.Nlink))
	}
	if d.Links == nil {
		return refusal.Cannot(refusal.Denied, f.Name, fmt.Sprintf("the file has %d names (hard links), and only the fsguard daemon keeps the index that shows they are all inside the roots and allowed; read it through the daemon (--socket), or set [deny] hard_links = \"allow\" (e.g. for pnpm's node_modules, whose files are links into a store)", f.Stat.Nlink))
	}
	names, complete := d.Links.OtherNames(g, f)
	if !complete {
		return refusal.Cannot(refusal.Denied, f.Name, "another name (hard link) of this file lies outside the allowed roots; the policy shows it under none ([deny] hard_links)")
	}
	for _, n := range names {
		if g.Denied(n.Root, n.Rel) {
			return refusal.Cannot(refusal.Denied, f.Name, "another name (hard link) of this file is denied by policy; the policy shows it under none ([deny] hard_links)")
		}
	}
	return nil
}
