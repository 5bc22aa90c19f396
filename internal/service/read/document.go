package read

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/document"
	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// MaxPages is the most pages one read shows (the agents' read tools ask
// for at most 20 a call).
const MaxPages = 20

// Document describes a document (PDF) read: its page count and the pages
// shown; Data is the document itself (or a new one of the pages asked
// for) when it was asked for as a document.
type Document struct {
	Pages int64  `json:"pages"`
	MIME  string `json:"mime"`
	Data  []byte `json:"base64,omitempty"`
}

// ParsePages parses a page range "N" or "A-B" (1-based).
func ParsePages(s string) (Range, bool) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	first, err := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	if err != nil || first < 1 {
		return Range{}, false
	}
	last := first
	if ok {
		if last, err = strconv.ParseInt(strings.TrimSpace(b), 10, 64); err != nil || last < first {
			return Range{}, false
		}
	}
	return Range{first, last}, true
}

// isDocument reports whether f is a PDF, by its content: its header at
// the very start, or later in the first KiB of a file whose sample is not
// text (a text that quotes a PDF's first line is shown as text).
func isDocument(f *roots.File) bool {
	head := make([]byte, 1024)
	n, _ := f.ReadAt(head, 0)
	at := document.At(head[:n])
	if at <= 0 {
		return at == 0
	}
	c := sniff.Classify(head[:n], int64(n) >= f.Stat.Size).Class
	return c != sniff.Text && c != sniff.Encoding
}

// document answers a read of a PDF: the text of a range of its pages (at
// most MaxPages), each after a "--- page N ---" marker, capped by lines and
// bytes as a text read is, with credentials masked; or, asked as a
// document, the PDF (or a new one of the pages asked for). Its admission
// was decided on the text of every page (admit: a key refuses it, a
// credential refuses only its bytes).
func (r *Reader) document(f *roots.File, req Request, p *windowPlan) (*Result, error) {
	if !p.plain() || req.Offset > 1 {
		return nil, refusal.Of(refusal.DocumentByPages, refusal.OpRead, f.Shown, refusal.Facts{Limit: MaxPages})
	}
	d := r.Admit
	if d == nil {
		d = admit.New(1)
	}
	pol := r.Guard.Policy()
	lim := pol.Limits
	if _, err := d.Start(r.Guard, f).Wait(); err != nil && (req.AsDocument || !admit.TextOnly(err)) {
		return nil, err
	}
	want := Range{1, MaxPages}
	if req.Pages != "" {
		var ok bool
		if want, ok = ParsePages(req.Pages); !ok {
			return nil, refusal.Of(refusal.BadPages, refusal.OpRead, f.Shown, refusal.Facts{Got: req.Pages})
		}
		if want.End-want.Start+1 > MaxPages {
			return nil, refusal.Of(refusal.TooManyPages, refusal.OpRead, f.Shown, refusal.Facts{Line: want.Start, End: want.End, Limit: MaxPages})
		}
	}
	unreadable := func(err error) error {
		var de *document.Error
		if errors.As(err, &de) {
			return refusal.Of(refusal.DocumentUnreadable, refusal.OpRead, f.Shown, refusal.Facts{Detail: de.Reason})
		}
		return refusal.Of(refusal.IOFailedReading, refusal.OpRead, f.Shown, refusal.Facts{Detail: err.Error()})
	}
	if f.Stat.Size > document.MaxBytes {
		return nil, unreadable(&document.Error{Reason: fmt.Sprintf("it is %d bytes; documents up to %d bytes are read", f.Stat.Size, document.MaxBytes)})
	}
	data := make([]byte, f.Stat.Size)
	if n, err := io.ReadFull(io.NewSectionReader(f, 0, f.Stat.Size), data); err != nil || int64(n) != f.Stat.Size {
		return nil, refusal.Of(refusal.IOFailedReading, refusal.OpRead, f.Shown, refusal.Facts{Detail: fmt.Sprint(err)})
	}
	if err := verify(f, f.Stat.Size); err != nil {
		return nil, err
	}
	sum := fileid.ContentID(sha256.Sum256(data))
	pages, err := document.Text(context.Background(), data, int(want.Start), int(want.End), max(lim.MaxBytes*4, 1<<20))
	if err != nil {
		return nil, unreadable(err)
	}
	count := int64(pages.Count)
	if want.Start > count {
		return nil, refusal.Of(refusal.OutOfRange, refusal.OpRead, f.Shown, refusal.Facts{Arg: "pages", Line: want.Start, Total: count, Unit: "page"})
	}
	want.End = min(want.End, count)
	res := &Result{Path: f.Shown, Notes: p.notes, Document: &Document{Pages: count, MIME: "application/pdf"},
		Totals:     Totals{Lines: count, Bytes: f.Stat.Size, Complete: true},
		Truncation: Truncation{Reason: "none", ClampedLines: []int64{}, MaxLineChars: lim.MaxLineChars}}
	if req.AsDocument {
		if err := r.documentBytes(res, data, want, req.Pages != "" || count > MaxPages, lim.MaxMediaBytes); err != nil {
			return nil, unreadable(err)
		}
	}
	det, err := d.Detector(pol)
	if err != nil {
		return nil, refusal.Of(refusal.IOFailedReading, refusal.OpRead, f.Shown, refusal.Facts{Detail: err.Error()})
	}
	if pp := f.Path(); pol.SecretsShown(pp.Root.Path, pp.Root.Real, pp.Rel) {
		det = nil
	}
	var body strings.Builder
	linesLeft, bytesLeft := lim.MaxLines, lim.MaxBytes
	last := want.Start - 1
	for i, t := range pages.Text {
		n := want.Start + int64(i)
		if det != nil {
			b := []byte(t)
			ms := det.Find(b)
			if len(ms) > 0 {
				sniff.ApplyMasks(ms, b, 0)
				t = string(b)
				res.Observation.Masked = true
				for _, m := range ms {
					res.Masked = append(res.Masked, Masked{Family: m.Family, Line: n, Length: int64(m.Len)})
				}
				res.Notes = append(res.Notes, fmt.Sprintf("%d credential(s) masked on page %d (%s)", len(ms), n, ms[0].Family))
			}
		}
		if sniff.HasKey([]byte(t)) && pol.Refuses(string(sniff.PrivateKey)) {
			// Admission searched the whole text: this is a decider that
			// did not (a policy reloaded between), and nothing is shown.
			return nil, refusal.Of(refusal.DocumentKey, refusal.OpRead, f.Shown, refusal.Facts{})
		}
		page := fmt.Sprintf("--- page %d ---\n", n)
		if strings.TrimSpace(t) == "" {
			page += fmt.Sprintf("(Page %d has no text that can be extracted: it may be a scanned image or drawings.)\n", n)
		} else {
			page += strings.TrimRight(t, "\n") + "\n"
		}
		nl := strings.Count(page, "\n")
		if i > 0 && (nl > linesLeft || len(page) > bytesLeft) {
			res.Truncation.Reason = "bytes"
			if nl > linesLeft {
				res.Truncation.Reason = "lines"
			}
			break
		}
		if nl > linesLeft || len(page) > bytesLeft {
			// One page beyond the caps: shown up to them.
			page = clip(page, linesLeft, bytesLeft)
			res.Truncation.ClampedLines = append(res.Truncation.ClampedLines, n)
			res.Notes = append(res.Notes, fmt.Sprintf("page %d's text is longer than max_lines %d or max_bytes %d: its start is shown", n, lim.MaxLines, lim.MaxBytes))
		}
		body.WriteString(page)
		linesLeft -= nl
		bytesLeft -= len(page)
		last = n
	}
	res.Range = Range{want.Start, last}
	switch {
	case last < count:
		next := Range{last + 1, min(last+MaxPages, count)}
		res.Footer = fmt.Sprintf("(Showing pages %d-%d of %d. Use --pages %d-%d to continue.)", want.Start, last, count, next.Start, next.End)
		res.Continuation = &Continuation{Path: req.Path, Pages: fmt.Sprintf("%d-%d", next.Start, next.End)}
		if res.Truncation.Reason == "none" {
			res.Truncation.Reason = "pages"
		}
	default:
		res.Footer = fmt.Sprintf("(End of document - %d pages)", count)
	}
	if req.AsDocument && res.Document.Data != nil {
		res.Footer += fmt.Sprintf("\n(The document itself, %d bytes, is attached as application/pdf.)", len(res.Document.Data))
	}
	body.WriteString("\n" + res.Footer + "\n")
	res.Body = body.String()
	st := f.Identity()
	o := Observation{StatID: fileid.StatID(f.Real, st), ContentID: &sum, ViewID: fileid.Hash(res.Body), Range: res.Range, Identity: st, RealPath: f.Real, Masked: res.Observation.Masked}
	o.ID = fileid.Hash(o.StatID, sum, o.ViewID)
	res.Observation = o
	return res, nil
}

// documentBytes attaches the document asked for as a document: the file
// itself, or (part, when pages were asked for or it has more than
// MaxPages) a new PDF of the pages want.
func (r *Reader) documentBytes(res *Result, data []byte, want Range, part bool, maxMedia int64) error {
	if !part {
		if int64(len(data)) > maxMedia {
			return &document.Error{Reason: fmt.Sprintf("it is %d bytes, more than max_media_bytes (%d); ask for fewer pages", len(data), maxMedia)}
		}
		res.Document.Data = data
		return nil
	}
	b, err := document.Extract(context.Background(), data, int(want.Start), int(want.End), maxMedia)
	if err != nil {
		return err
	}
	res.Document.Data = b
	return nil
}

// clip cuts s to at most n lines and b bytes, at a rune boundary.
func clip(s string, n, b int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		s = strings.Join(lines[:max(n, 1)], "")
	}
	if len(s) > b {
		cut := b
		for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut]
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}
