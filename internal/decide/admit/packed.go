package admit

import (
	"io"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// Packed files (gzip, tar, zip: by their magic) are part of the verdict:
// what they hold is checked as the files of the tree are (sniff.Unpacker),
// once per version, and a version whose members cannot all be checked
// within the bounds is refused, never served unchecked. [sniff] archives
// says whether they are looked into ("scan"), refused ("deny") or served
// as they are ("allow").

// maxUnpacking bounds the packed files looked into at once: each holds up
// to a member per depth in memory (sniff.MaxPackedMember).
const maxUnpacking = 2

// packedKind is the packing of the file r of size bytes whose first
// bytes are head, when the policy looks into packed files ("" otherwise):
// by its head, or a zip by its end record, whatever is before it (a zip
// behind a self-extractor's stub or appended to an image is one to every
// zip reader).
func packedKind(pol *policy.Policy, head []byte, r io.ReaderAt, size int64) (string, error) {
	if pol.Sniff.Archives == policy.ArchivesAllow {
		return "", nil
	}
	return sniff.PackedKindIn(head, r, size)
}

// unpack fills res.Inside for a packed file of kind (r, size bytes): what
// it holds that the view must not serve. A file already refused as a key
// is not looked into.
func (d *Decider) unpack(pol *policy.Policy, kind string, r io.ReaderAt, size int64, res sniff.Result) (sniff.Result, error) {
	if kind == "" || res.Class == sniff.PrivateKey {
		return res, nil
	}
	if pol.Sniff.Archives == policy.ArchivesDeny {
		res.Inside = &sniff.Inside{Why: sniff.InsideRefused}
		return res, nil
	}
	det, err := d.detector(pol)
	if err != nil {
		return res, err
	}
	d.unpacking <- struct{}{}
	defer func() { <-d.unpacking }()
	u := &sniff.Unpacker{Deny: pol.Deny.Globs, Fold: pol.Folds(), Creds: det}
	in, err := u.Inspect(r, size, kind)
	if err != nil {
		return res, err
	}
	res.Inside = in
	return res, nil
}

// insideVerdict is the refusal of a packed file for what it holds (nil:
// none). The places [sniff] allow_globs names are exempt, as from every
// content refusal; a key inside is refused where keys are; a credential
// inside where credentials are masked.
func insideVerdict(pol *policy.Policy, p roots.Path, in *sniff.Inside) error {
	if in == nil || pol.Allowed(p.Root.Path, p.Root.Real, p.Rel) {
		return nil
	}
	facts := refusal.Facts{Member: in.Member}
	reason := refusal.PackedUnchecked
	switch in.Why {
	case sniff.InsideKey:
		if !pol.Refuses(string(sniff.PrivateKey)) {
			return nil
		}
		reason = refusal.PackedKey
	case sniff.InsideName:
		reason, facts.Rule = refusal.PackedName, in.Rule
	case sniff.InsideCredential:
		if !pol.Secrets.Masks() || pol.SecretsShown(p.Root.Path, p.Root.Real, p.Rel) {
			return nil
		}
		reason, facts.Family = refusal.PackedCredential, in.Family
	case sniff.InsideRefused:
		reason = refusal.PackedRefused
	case sniff.InsideTwoWays:
		reason, facts.Detail = refusal.PackedTwoWays, in.Detail
	default:
		facts.Detail = in.Detail
	}
	return refusal.Of(reason, refusal.OpRead, p.Shown, facts)
}
