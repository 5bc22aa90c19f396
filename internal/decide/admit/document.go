package admit

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/document"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// Documents (PDFs, known by their content) are part of the verdict: what
// an agent takes in of one is its text, and a PDF's text is compressed
// inside it, where no scan of its bytes finds a key. So the text is
// extracted (in document's sandbox) and searched for keys and
// credentials as a file's bytes are, once per version, and the finding
// kept in the verdict's Inside, which every door obeys: a key refuses the
// file everywhere; a credential refuses the document's bytes (the mount,
// a read as a document), which cannot be masked, while the read of its
// text shows it masked (read service, DocumentCredential); a document
// that cannot be read within document's bounds is refused everywhere,
// never served unchecked. Its streams are searched too, decoded
// (pdfstreams.go): an attachment is served with the PDF's bytes. A
// finding in Inside is never saved across runs (Save), so it is found
// again.

// Why a document is refused, in sniff.Inside.Why.
const (
	insideDocKey        = "document-key"
	insideDocCredential = "document-credential" // Family
	insideDocUnreadable = "document-unreadable" // Detail
)

// maxDocumentText bounds the text of a document searched whole.
const maxDocumentText = 16 << 20

// documentOf fills res.Inside for a PDF (r, size bytes, its header at
// offset at, -1 when none) with what its text holds that the view must
// not serve. A file whose header is not at its very start and that the
// parser cannot read is not taken for a document (a text that quotes a
// PDF's first line); one that starts as a PDF and cannot be read is
// refused.
func (d *Decider) documentOf(pol *policy.Policy, at int, r io.ReaderAt, size int64, res sniff.Result) (sniff.Result, error) {
	if res.Class == sniff.PrivateKey || res.Inside != nil || at < 0 ||
		!pol.Refuses(string(sniff.PrivateKey)) && !pol.Secrets.Masks() {
		return res, nil
	}
	if size > document.MaxBytes {
		res.Inside = &sniff.Inside{Why: insideDocUnreadable, Detail: "it is larger than the documents fsguard reads"}
		return res, nil
	}
	d.unpacking <- struct{}{}
	defer func() { <-d.unpacking }()
	data := make([]byte, size)
	if n, err := r.ReadAt(data, 0); int64(n) != size {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return res, err
	}
	det, err := d.detector(pol)
	if err != nil {
		return res, err
	}
	var unpacker *sniff.Unpacker
	if pol.Sniff.Archives != policy.ArchivesAllow {
		unpacker = &sniff.Unpacker{Deny: pol.Deny.Globs, Fold: pol.Folds(), Creds: det}
	}
	if in, err := d.streamFinding(data, det, unpacker); err != nil || in != nil {
		res.Inside = in
		return res, err
	}
	p, err := document.Text(context.Background(), data, 1, document.MaxBytes, maxDocumentText)
	if de, ok := errors.AsType[*document.Error](err); ok && de.Busy {
		return res, err // not a verdict: the next decision tries again
	}
	if err != nil {
		if at == 0 {
			res.Inside = &sniff.Inside{Why: insideDocUnreadable, Detail: err.Error()}
		}
		return res, nil
	}
	text := []byte(strings.Join(p.Text, "\n"))
	if sniff.HasKey(text) {
		res.Inside = &sniff.Inside{Why: insideDocKey}
		return res, nil
	}
	if det != nil {
		if ms := det.Find(text); len(ms) > 0 {
			res.Inside = &sniff.Inside{Why: insideDocCredential, Family: ms[0].Family}
		}
	}
	return res, nil
}

// isDocumentFinding reports whether in is a document's finding.
func isDocumentFinding(in *sniff.Inside) bool {
	return in != nil && strings.HasPrefix(in.Why, "document-")
}

// documentVerdict is the refusal of a document for what its text holds
// (nil: none), as insideVerdict is a packed file's: the places
// [sniff] allow_globs names are exempt.
func documentVerdict(pol *policy.Policy, p roots.Path, in *sniff.Inside) error {
	if pol.Allowed(p.Root.Path, p.Root.Real, p.Rel) {
		return nil
	}
	switch in.Why {
	case insideDocKey:
		if !pol.Refuses(string(sniff.PrivateKey)) {
			return nil
		}
		return refusal.Of(refusal.DocumentKey, refusal.OpRead, p.Shown, refusal.Facts{})
	case insideDocCredential:
		if !pol.Secrets.Masks() || pol.SecretsShown(p.Root.Path, p.Root.Real, p.Rel) {
			return nil
		}
		return refusal.Of(refusal.DocumentCredential, refusal.OpRead, p.Shown, refusal.Facts{Family: in.Family})
	}
	return refusal.Of(refusal.DocumentUnreadable, refusal.OpRead, p.Shown, refusal.Facts{Detail: in.Detail})
}

// Detector is the credential detector of pol (nil when it masks none),
// for a door that searches text it makes from a file (a document's).
func (d *Decider) Detector(pol *policy.Policy) (*sniff.Detector, error) { return d.detector(pol) }

// TextOnly reports whether err refuses a document's bytes for a credential
// in its text: its text may still be shown, masked.
func TextOnly(err error) bool {
	var r *refusal.Error
	return errors.As(err, &r) && r.Reason == refusal.DocumentCredential
}
