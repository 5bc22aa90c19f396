package admit

import (
	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// The bytes served are the bytes checked. A verdict is remembered per
// version, and a version is known by its identity (size, times); but a
// store through a shared mapping changes a file's bytes and moves no
// ctime, and a writer can change them between a check and the read that
// serves them. So a door that serves bytes it read now, not the very
// bytes an admission scanned, checks them with the same detectors first
// (Check), in a window read in the same read, and a version found holding
// what its verdict did not see is decided afresh (Forget).

// Window is bytes of a file read in one read (from offset Base; AtEOF:
// the read reached the file's end), around the range [From, To) a door is
// about to serve of them, with sniff.Margins before and after it. Head is
// the file's first bytes (up to 4), which say its code units.
type Window struct {
	Bytes    []byte
	Base     int64
	AtEOF    bool
	Head     []byte
	From, To int64
}

// Check reports whether w's range may be served from f (admitted as
// version id, with masks) as its verdict serves it: w holds no private
// key where the policy refuses keys, and every credential in the range is
// under masks. False means the verdict is wrong for these bytes: the
// caller forgets it and decides afresh, and serves none of them.
func (d *Decider) Check(g *roots.Guard, f *roots.File, id fileid.Identity, masks []sniff.Mask, w Window) bool {
	pol := g.Policy()
	p := f.Path()
	if pol.Refuses(string(sniff.PrivateKey)) && !pol.Allowed(p.Root.Path, p.Root.Real, p.Rel) && sniff.KeyInWindow(w.Bytes, w.Base, w.AtEOF) {
		return false
	}
	if !pol.Secrets.Masks() || pol.SecretsShown(p.Root.Path, p.Root.Real, p.Rel) {
		return true
	}
	// A class that is not masked (binary, an image) is served as it is:
	// its verdict's class says so. One not remembered is checked.
	if res, ok := d.cached(key{id, pol}); ok && !maskable(res) {
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
	delete(d.cache, key{id, g.Policy()})
	d.mu.Unlock()
}
