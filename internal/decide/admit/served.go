package admit

import (
	"io"
	"slices"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// The bytes served are the bytes checked. A verdict is remembered per
// version, and a version is known by its identity (size, times); but a
// store through a shared mapping changes a file's bytes and moves no
// ctime, and a writer can change them between a check and the read that
// serves them. So a door that serves bytes it read now, not the very
// bytes an admission scanned, checks them first (Check), in a window read
// in the same read, and a version found holding what its verdict did not
// see is decided afresh (Forget).
//
// The check compares the window's blocks with the hashes of the bytes the
// verdict was made on (see blocks.go): bytes that are the ones checked
// are served by that verdict, whatever it found them to be (text, binary,
// packed, inside a long key's body whose header the window does not
// hold); any other bytes are a version it did not see. A verdict brought
// back from disk after a restart has no hashes (their key was the other
// daemon's): it serves a window that is the whole file, checked by the
// detectors, and any other window of a version hashes can be kept for
// only after the file is decided again (the first such READ after a
// restart reads the file whole). A version kept without hashes (too
// large, or decided without reading it whole because the policy looks for
// nothing past its start) is checked by the detectors, in the window
// alone.

// Window is bytes of a file read in one read (from offset Base; AtEOF:
// the read reached the file's end), around the range [From, To) a door is
// about to serve of them: with sniff.Margins before and after it, widened
// to whole blocks (Reach). Head is the file's first bytes (up to 4),
// which say its code units.
type Window struct {
	Bytes    []byte
	Base     int64
	AtEOF    bool
	Head     []byte
	From, To int64
}

// Check reports whether w's range may be served from f (admitted as
// version id, with masks) as its verdict serves it: w's blocks and head
// are the bytes the verdict was made on; or, for a version kept without
// their hashes, w holds no private key where the policy refuses keys, and
// every credential in the range is under masks. False means the verdict
// is not known to hold for these bytes: the caller forgets it and decides
// afresh, and serves none of them.
func (d *Decider) Check(g *roots.Guard, f *roots.File, id fileid.Identity, masks []sniff.Mask, w Window) bool {
	pol := g.Policy()
	d.mu.Lock()
	rem, ok := d.cache[key{id, pol}]
	d.mu.Unlock()
	p := f.Path()
	switch {
	case ok && rem.sums != nil:
		// The verdict remembered now must be the one served by: the
		// caller may hold an older one's admission (a kept handle) of
		// the same identity, which a fresher decision refused or masked
		// otherwise.
		res, err := verdict(pol, p, rem.res)
		return err == nil && slices.Equal(res.Masks, masks) && rem.sums.matches(w.Bytes, w.Base, w.Head) && rem.sums.leadUnchanged(f, w)
	case !ok:
		// Not remembered (dropped): decided afresh, the hashes are kept.
		if _, hashed := blockShift(id.Size); hashed {
			return false
		}
	case rem.loaded && (!maskable(rem.res) || packed(pol, w.Head, f, id.Size)):
		// Brought back from disk (no hashes: the key is this daemon's):
		// what a packed file holds is not in the window, and a key's
		// verdict is not checked by one. Decided afresh.
		return false
	case rem.loaded && (w.Base > 0 || !w.AtEOF):
		// Brought back from disk, and the window is not the whole file:
		// a key whose header lies outside it (a READ inside a long key's
		// body) is not seen by the detectors in the window. Decided
		// afresh when the version can be kept in hashes (the decision
		// keeps them, and later READs compare them); a version too
		// large for hashes is checked in the window, as one decided
		// by this daemon is.
		if _, hashed := blockShift(id.Size); hashed {
			return false
		}
	}
	if pol.Refuses(string(sniff.PrivateKey)) && !pol.Allowed(p.Root.Path, p.Root.Real, p.Rel) && sniff.KeyInWindow(w.Bytes, w.Base, w.AtEOF) {
		return false
	}
	if !pol.Secrets.Masks() || pol.SecretsShown(p.Root.Path, p.Root.Real, p.Rel) {
		return true
	}
	det, err := d.detector(pol)
	if err != nil {
		return false
	}
	if det == nil {
		return true
	}
	unit, be := sniff.Units(w.Head)
	return sniff.Covers(masks, det.FindInWindow(w.Bytes, w.Base, w.AtEOF, unit, be), w.From, w.To)
}

// Forget drops the verdict remembered for version id under g's policy: a
// door found bytes of it that the verdict did not see, so the next
// decision reads the file afresh.
func (d *Decider) Forget(g *roots.Guard, id fileid.Identity) {
	d.mu.Lock()
	k := key{id, g.Policy()}
	d.sumBytes -= d.cache[k].sums.bytes()
	delete(d.cache, k)
	d.mu.Unlock()
}

// packed reports whether the file r of size bytes, whose first bytes are
// head, is a packed file the policy looks into (or cannot be told).
func packed(pol *policy.Policy, head []byte, r io.ReaderAt, size int64) bool {
	kind, err := packedKind(pol, head, r, size)
	return err != nil || kind != ""
}
