package admit

import (
	"errors"
	"io"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// Credentials in text are part of the verdict: a version's masks (see
// sniff.Mask) are found by the same decision that admits it, once per
// version, and remembered with its class, so every door serves the same
// masked bytes. A version whose credentials cannot all be found within the
// bounds is refused, never shown raw.

// detectorOf is the credential detector of one policy (a reload brings a
// new policy, and its rules with it).
type detectorOf struct {
	pol *policy.Policy
	det *sniff.Detector
	err error
}

// detector is pol's credential detector, nil when the policy masks none.
// Every admission of text asks for it: the one in force is read without a
// lock, and a new policy's is built once it is first asked for (two
// decisions racing to build it build the same detector twice, harmlessly).
func (d *Decider) detector(pol *policy.Policy) (*sniff.Detector, error) {
	if !pol.Secrets.Masks() {
		return nil, nil
	}
	if cur := d.dets.Load(); cur != nil && cur.pol == pol {
		return cur.det, cur.err
	}
	det, err := sniff.NewDetector(pol.Secrets)
	d.dets.Store(&detectorOf{pol, det, err})
	return det, err
}

// maskable reports whether a version of class res is looked into for
// credentials: every one but a key (refused whole, or allowed whole where
// keys are). A token is a token in any file: text in any encoding (the
// mount serves it as it is, so an ISO-8859-1 config file is masked as a
// UTF-8 one), and a file the classifier calls binary too (text with a NUL
// byte, UTF-16 without a byte order mark, a binary holding a token), whose
// masks keep every length, as a text file's do.
func maskable(res sniff.Result) bool {
	return res.Class != sniff.PrivateKey
}

// wide reports whether a version of class res is also read as UTF-16
// without a byte order mark for credentials (see sniff.FindWide): one that
// is not text to the classifier.
func wide(res sniff.Result) bool {
	return res.Class != sniff.Text && res.Class != sniff.Encoding
}

// findIn fills res.Masks from data, the whole file shown as shown.
func (d *Decider) findIn(pol *policy.Policy, shown string, res sniff.Result, data []byte) (sniff.Result, error) {
	if !maskable(res) {
		return res, nil
	}
	det, err := d.detector(pol)
	if det == nil || err != nil {
		return res, credErr(shown, err)
	}
	if wide(res) {
		res.Masks = det.FindBinary(data)
	} else {
		res.Masks = det.Find(data)
	}
	if len(res.Masks) > sniff.MaxMasks {
		return res, credErr(shown, sniff.ErrTooManyMasks)
	}
	return res, nil
}

// scanFor fills res.Masks from the whole of rec's file (shown as shown),
// read through buf.
func (d *Decider) scanFor(pol *policy.Policy, shown string, rec *recorder, res sniff.Result, buf []byte) (sniff.Result, error) {
	if !maskable(res) {
		return res, nil
	}
	det, err := d.detector(pol)
	if det == nil || err != nil {
		return res, credErr(shown, err)
	}
	masks, err := wholeScan(d, rec, buf, det.Scan, det.ScanHalves)
	if err == nil && wide(res) {
		var more []sniff.Mask
		if more, err = det.ScanWide(rec, rec.size, buf); err == nil {
			masks, err = sniff.MergeMasks(masks, more)
		}
	}
	if err != nil {
		return res, credErr(shown, err)
	}
	res.Masks = masks
	return res, nil
}

// credErr is a refusal for a version whose credentials could not all be
// found: shown raw, one could reach the agent.
func credErr(shown string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sniff.ErrTooManyMasks):
		return refusal.Of(refusal.TooManyMasks, refusal.OpRead, shown, refusal.Facts{Limit: sniff.MaxMasks})
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errChangedScanning):
		return refusal.Of(refusal.ChangedChecking, refusal.OpRead, shown, refusal.Facts{})
	}
	return ioErr(shown, err)
}

// masked gives keep the bytes a door may serve of data (the version's
// whole content): a masked copy when the version has masks.
func masked(keep func([]byte), res sniff.Result) func([]byte) {
	if keep == nil || len(res.Masks) == 0 {
		return keep
	}
	return func(data []byte) {
		out := make([]byte, len(data))
		copy(out, data)
		sniff.ApplyMasks(res.Masks, out, 0)
		keep(out)
	}
}

// ShownBytes returns data, a whole version's bytes, as a door may show them
// under pol: its credentials masked (a copy), or data itself when it holds
// none; ok is false when they cannot all be found (then nothing of it may
// be shown). For bytes that are not a file under the roots yet: what a
// write keeps as the version its session holds.
func (d *Decider) ShownBytes(pol *policy.Policy, data []byte) (out []byte, ok bool) {
	det, err := d.detector(pol)
	if err != nil {
		return nil, false
	}
	if det == nil {
		return data, true
	}
	masks := det.Find(data)
	if len(masks) > sniff.MaxMasks {
		return nil, false
	}
	if len(masks) == 0 {
		return data, true
	}
	out = make([]byte, len(data))
	copy(out, data)
	sniff.ApplyMasks(masks, out, 0)
	return out, true
}

// tell hands a version's masks, freshly found, to OnMasks.
func (d *Decider) tell(f *roots.File, res sniff.Result) {
	if d.OnMasks != nil && len(res.Masks) > 0 {
		d.OnMasks(f, res.Masks)
	}
}
