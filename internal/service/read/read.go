// Package read owns one agent read from start to finish: validate the
// request, open through roots, classify through sniff, scan through window,
// verify that the file did not change underneath, and describe what was
// shown as an observation. The result renders to the exact text envelope
// or to JSON (format.go).
package read

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/charset"
	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// Request is one read as the agent asked for it. Zero Offset means line 1,
// zero Limit means the policy's max_lines.
type Request struct {
	Path   string
	Offset int64
	Limit  int64
	Cwd    string
	// Anchors renders each line as "N#hh: text" (see lines.Anchor).
	Anchors bool
	// Keep returns the file's bytes in Result.Content when it is at most
	// this big (a scan reads them all anyway, for the hash).
	Keep int64
	// Windows asks for several windows of one version in one answer
	// (--window A:B), each with its own footer; the line and byte caps
	// hold over the whole answer. At most MaxWindows; overlapping and
	// adjacent ones are merged.
	Windows []Range
	// Around asks for the window centred on the line an anchor names
	// ("N#hh", as an --anchors read shows it), Radius lines either side
	// (0: DefaultRadius).
	Around string
	Radius int64
	// Block asks for the smallest block by indentation around this line
	// (lines.Block), at most Limit lines of it.
	Block int64
	// Pages selects a document's pages, "N" or "A-B" (at most MaxPages);
	// "" is its first MaxPages. Only a document (a PDF) has pages.
	Pages string
	// AsDocument asks for a document itself (Result.Document.Data) as
	// well as its text.
	AsDocument bool
}

// Range is an inclusive span of line numbers; zero when nothing was shown.
type Range struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Totals describe the whole file as far as it was scanned.
type Totals struct {
	Lines    int64 `json:"lines"`
	Bytes    int64 `json:"bytes"`
	Complete bool  `json:"complete"`
}

// Truncation says what was cut from the view.
type Truncation struct {
	Reason       string  `json:"reason"` // "none", "lines", "bytes" or "scan"
	ClampedLines []int64 `json:"clampedLines"`
	MaxLineChars int     `json:"maxLineChars"`
}

// Continuation is a complete next input that continues the read.
type Continuation struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset"`
	Limit  int64  `json:"limit"`
	// Pages, for a document, is the next pages to read ("A-B").
	Pages string `json:"pages,omitempty"`
}

// Observation identifies what this read showed of which file version.
type Observation struct {
	StatID           string  `json:"statId"`
	ContentID        *string `json:"contentId"`
	ViewID           string  `json:"viewId"`
	ID               string  `json:"id"`
	WholeFileVisible bool    `json:"wholeFileVisible"`
	Range            Range   `json:"range"`

	// The file identity behind StatID, kept for the journal's fast path.
	Identity fileid.Identity `json:"-"`
	RealPath string          `json:"-"`
	// Masked says the version holds masked credentials: see MarshalJSON.
	Masked bool `json:"-"`
}

// MarshalJSON writes the observation as an answer shows it. A version with
// masked credentials is not named there by its content's hash: the agent
// knows every byte of it but the masks', so the sha256 of the file (and
// the id made from it) would confirm a guessed password offline. The
// journal keeps both; preconditions are decided from it, not from what an
// answer said.
func (o Observation) MarshalJSON() ([]byte, error) {
	type plain Observation
	if o.Masked {
		o.ContentID = nil
		o.ID = fileid.Hash(o.StatID, "masked", o.ViewID)
	}
	return json.Marshal(plain(o))
}

// ContentIDString is the contentId, or "" when the scan was partial.
func (o *Observation) ContentIDString() string {
	if o.ContentID == nil {
		return ""
	}
	return *o.ContentID
}

// Result is a successful read.
type Result struct {
	Path         string
	Lines        []lines.Line
	Range        Range
	Totals       Totals
	Truncation   Truncation
	Continuation *Continuation
	Footer       string
	Observation  Observation
	Notes        []string
	// Body is exactly what goes between <content> and </content>.
	Body string
	// Image is set for an image file: Body then describes it.
	Image *Image
	// Anchors: the lines were shown with their anchors.
	Anchors bool
	// Diff, set by the ledger, replaces Lines in JSON.
	Diff *Diff
	// Content is the whole file, when Request.Keep allowed it and the
	// scan reached the end; it is exactly what ContentID names.
	Content []byte
	// Parts, for a read of several windows, are the windows' own results
	// (lines, range, footer, continuation, observation) in file order;
	// Body then holds them all, and Observation is of the whole answer.
	Parts []*Result
	// Listing is set for a directory read: Body lists its entries, and
	// Observation is empty but for ViewID (a listing observes no file).
	Listing *Listing
	// Notebook is set for a notebook read: Body shows its cells, Range
	// counts cells, and the observation is of the file's bytes.
	Notebook *Notebook
	// Document is set for a document (PDF) read: Body shows the text of
	// its pages, Range and Totals.Lines count pages.
	Document *Document
	// Masked are the credentials masked in the lines shown (of a
	// document: Line is the page).
	Masked []Masked
}

// Diff is a changed re-read's answer: a unified diff (file headers and
// hunks) against the version, contentId Against, the session holds.
type Diff struct {
	Against string `json:"against"`
	Unified string `json:"unified"`
}

// MinCount is the least offset or limit: both are 1-based line counts. The
// MCP tools' schemas state the same bound.
const MinCount = 1

// Reader performs reads under one guard.
type Reader struct {
	Guard *roots.Guard
	// Admit decides whether a file version may be shown (the one decision
	// the mount makes too); nil decides afresh for each read.
	Admit *admit.Decider
}

// Read performs one read: a directory's listing, an image's description,
// a notebook's cells, or windows of a text file.
func (r *Reader) Read(req Request) (*Result, error) {
	res, err := r.read(req)
	return res, r.Guard.Suggest(err) // a read shows its refusal: near names help
}

func (r *Reader) read(req Request) (*Result, error) {
	lim := r.Guard.Policy().Limits
	p, err := plan(&req, lim.MaxLines)
	if err != nil {
		return nil, err
	}
	f, err := r.Guard.Open(req.Path, req.Cwd)
	if errors.Is(err, roots.ErrDirectory) && p.plain() {
		return r.list(req)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if isDocument(f) {
		return r.document(f, req, p)
	}
	if req.Pages != "" || req.AsDocument {
		return nil, refusal.Of(refusal.PagesNotDocument, refusal.OpRead, f.Shown, refusal.Facts{})
	}
	class, admission, err := r.classify(f)
	defer admission.Wait() // before f is closed
	if err != nil {
		return nil, err
	}
	if class.Class == sniff.Image {
		return r.image(f, class.MIME, p.notes)
	}
	if isNotebook(f.Shown) && class.Charset == charset.UTF8 && p.plain() {
		return r.notebook(f, req, p, admission)
	}
	return r.text(f, class, req, p, admission)
}

// text shows the planned windows of a text file: one pass over the file
// per window, each counting and hashing to the end, all of one version.
func (r *Reader) text(f *roots.File, class sniff.Result, req Request, p *windowPlan, admission *admit.Pending) (*Result, error) {
	lim := r.Guard.Policy().Limits
	src := &source{f: f, enc: class.Charset}
	if req.Block > 0 {
		if err := p.block(src, req, lim.MaxScanBytes); err != nil {
			return nil, err
		}
	}
	var kept *bytes.Buffer
	var parts []*Result
	var first *lines.Result
	var rawSum [32]byte
	linesLeft, bytesLeft := int64(lim.MaxLines), lim.MaxBytes
	for i, w := range p.windows {
		if linesLeft <= 0 || bytesLeft <= 0 {
			p.notes = append(p.notes, fmt.Sprintf("windows from line %d on were left out: the answer reached its cap (max_lines %d, max_bytes %d); read them in another call", w.Start, lim.MaxLines, lim.MaxBytes))
			break
		}
		limit := min(w.limit, linesLeft)
		opts := lines.Options{
			Offset: w.Start, Limit: int(limit),
			MaxLineChars: lim.MaxLineChars, MaxBytes: bytesLeft,
			MaxScanBytes: lim.MaxScanBytes, SkipBOM: class.BOM > 0 && class.Charset == charset.UTF8, Anchors: req.Anchors,
			SizeHint: f.Stat.Size,
		}
		in := src.open()
		if i == 0 && f.Stat.Size <= req.Keep && class.Charset == charset.UTF8 {
			// Kept for diffs; a decoded file's bytes are not its lines.
			kept = bytes.NewBuffer(make([]byte, 0, f.Stat.Size))
			in = io.TeeReader(in, kept)
		}
		scan, err := scanText(f, in, opts) // while admission scans for keys
		if err != nil {
			return nil, err
		}
		src.settle(scan)
		if i == 0 {
			verdict, err := admission.Wait()
			if err != nil {
				return nil, err // nothing of the window is shown
			}
			rawSum = scan.Sum
			if len(verdict.Masks) > 0 {
				// Credentials: the window is scanned again, masked; the
				// contentId stays the file's own (a write checks it).
				src.masks = verdict.Masks
				if scan, err = scanText(f, src.open(), opts); err != nil {
					return nil, err
				}
				src.settle(scan)
				if kept != nil {
					sniff.ApplyMasks(verdict.Masks, kept.Bytes(), 0)
				}
			}
			first = scan
		} else if scan.Complete != first.Complete || scan.Sum != first.Sum {
			return nil, refusal.Of(refusal.ChangedReading, refusal.OpRead, f.Shown, refusal.Facts{})
		}
		scan.Sum = rawSum
		if scan.BadUTF8At >= 0 {
			return nil, refusal.Of(refusal.BadUTF8, refusal.OpRead, f.Shown, refusal.Facts{At: scan.BadUTF8At})
		}
		total := scan.TotalLines
		if w.Start > total && !(total == 0 && w.Start == 1) {
			if !scan.Complete {
				return nil, refusal.Of(refusal.BeyondScan, refusal.OpRead, f.Shown, refusal.Facts{Line: w.Start, Limit: lim.MaxScanBytes})
			}
			return nil, refusal.Of(refusal.OutOfRange, refusal.OpRead, f.Shown, refusal.Facts{Arg: p.startName, Line: w.Start, Total: total, Unit: "line"})
		}
		part := build(f, req, scan, nil, lim.MaxLineChars)
		if part.Continuation != nil && w.End > 0 && part.Continuation.Offset <= w.End {
			// Cut inside its window: the rest of the window is next.
			part.Continuation.Limit = w.End - part.Continuation.Offset + 1
		}
		parts = append(parts, part)
		linesLeft -= int64(len(scan.Lines))
		bytesLeft -= scan.ViewBytes
	}
	scanned := int64(-1) // a partial scan says nothing about the size
	if first.Complete {
		scanned = first.Bytes
	}
	if err := verify(f, scanned); err != nil {
		return nil, err
	}
	if p.anchor != "" {
		p.checkAnchor(parts[0])
	}
	if len(src.masks) > 0 {
		if err := markMasked(src, parts, p); err != nil {
			return nil, err
		}
	}
	res := join(f, parts, p.notes)
	if kept != nil && first.Complete && int64(kept.Len()) == first.Bytes {
		res.Content = kept.Bytes()
	}
	res.Masked = collectMasked(parts)
	if len(src.masks) > 0 {
		res.Observation.Masked = true
		for _, p := range parts {
			p.Observation.Masked = true
		}
	}
	return res, nil
}

// scanText is one pass of lines.Scan, its failures as refusals.
func scanText(f *roots.File, in io.Reader, opts lines.Options) (*lines.Result, error) {
	scan, err := lines.Scan(in, opts)
	if err != nil {
		var de *charset.Error
		if errors.As(err, &de) {
			return nil, refusal.Of(refusal.Undecodable, refusal.OpRead, f.Shown, refusal.Facts{Detail: de.Error()})
		}
		return nil, refusal.Of(refusal.IOFailedReading, refusal.OpRead, f.Shown, refusal.Facts{Detail: err.Error()})
	}
	return scan, nil
}

// classify starts the admission decision and refuses to render what is
// not text. The caller must Wait on the decision before it shows anything.
func (r *Reader) classify(f *roots.File) (sniff.Result, *admit.Pending, error) {
	d := r.Admit
	if d == nil {
		d = admit.New(1)
	}
	p := d.Start(r.Guard, f)
	c := p.Sample
	switch c.Class {
	case sniff.PrivateKey:
		// Refused or allowed: the verdict says which; allowed keys are text.
		_, err := p.Wait()
		c.Class = sniff.Text
		return c, p, err
	case sniff.Binary:
		if _, err := p.Wait(); err != nil {
			return c, p, err
		}
		return c, p, refusal.Of(refusal.BinaryFile, refusal.OpRead, f.Shown, refusal.Facts{MIME: c.MIME})
	case sniff.Image:
		_, err := p.Wait() // described, not refused (see image), once admitted
		return c, p, err
	case sniff.Encoding:
		if _, err := p.Wait(); err != nil {
			return c, p, err
		}
		if c.BadByte >= 0 {
			return c, p, refusal.Of(refusal.BadUTF8, refusal.OpRead, f.Shown, refusal.Facts{At: int64(c.BadByte), MIME: c.MIME})
		}
		return c, p, refusal.Of(refusal.NotUTF8, refusal.OpRead, f.Shown, refusal.Facts{MIME: c.MIME})
	}
	return c, p, nil
}

// image answers a read of an image: its description, and its bytes when
// they fit in max_media_bytes. The observation covers the whole file only
// when the bytes were returned.
func (r *Reader) image(f *roots.File, mime string, notes []string) (*Result, error) {
	img, sum, err := readImage(f, mime, r.Guard.Policy().Limits.MaxMediaBytes)
	if err != nil {
		return nil, err
	}
	if err := verify(f, f.Stat.Size); err != nil {
		return nil, err
	}
	res := &Result{Path: f.Shown, Image: img, Body: imageBody(img), Notes: notes,
		Totals: Totals{Bytes: f.Stat.Size, Complete: true}, Truncation: Truncation{Reason: "none", ClampedLines: []int64{}}}
	st := f.Identity()
	o := Observation{StatID: fileid.StatID(f.Real, st), ViewID: fileid.Hash(res.Body), Identity: st, RealPath: f.Real, ContentID: &sum, WholeFileVisible: false}
	// A media result is never a whole-file view: even when its bytes travel
	// (JSON, MCP), a text answer shows a description, and what the agent
	// took in of the image is not lines a write could be checked against.
	o.ID = fileid.Hash(o.StatID, sum, o.ViewID)
	res.Observation = o
	return res, nil
}

// verify refuses a read during which the file changed: its identity moved,
// or the bytes read to EOF (scanned >= 0) disagree with its size.
func verify(f *roots.File, scanned int64) error {
	now, err := f.Restat()
	if err != nil {
		return refusal.Of(refusal.IOFailedRechecking, refusal.OpRead, f.Shown, refusal.Facts{Detail: err.Error()})
	}
	if now != f.Identity() || (scanned >= 0 && scanned != f.Stat.Size) {
		return refusal.Of(refusal.ChangedReading, refusal.OpRead, f.Shown, refusal.Facts{})
	}
	return nil
}

func build(f *roots.File, req Request, scan *lines.Result, notes []string, maxLineChars int) *Result {
	res := &Result{
		Path:    f.Shown,
		Lines:   scan.Lines,
		Totals:  Totals{Lines: scan.TotalLines, Bytes: scan.Bytes, Complete: scan.Complete},
		Notes:   notes,
		Anchors: req.Anchors,
		Truncation: Truncation{
			Reason: "none", ClampedLines: []int64{}, MaxLineChars: maxLineChars,
		},
	}
	var body strings.Builder
	for _, l := range scan.Lines {
		lines.Render(&body, l, maxLineChars, req.Anchors)
		if l.Truncated {
			res.Truncation.ClampedLines = append(res.Truncation.ClampedLines, l.N)
		}
	}
	if n := len(scan.Lines); n > 0 {
		res.Range = Range{Start: scan.Lines[0].N, End: scan.Lines[n-1].N}
	}
	a, b := res.Range.Start, res.Range.End
	next := b + 1
	switch {
	case scan.Cut == lines.CutBytes:
		res.Truncation.Reason = "bytes"
		res.Footer = fmt.Sprintf("(Output capped. Showing lines %d-%d. Use offset=%d to continue.)", a, b, next)
	case scan.Cut == lines.CutLines && scan.Complete:
		res.Truncation.Reason = "lines"
		res.Footer = fmt.Sprintf("(Showing lines %d-%d of %d. Use offset=%d to continue.)", a, b, scan.TotalLines, next)
	case !scan.Complete:
		// The scan bound ended the count: there is no honest total.
		res.Truncation.Reason = "scan"
		if scan.Cut == lines.CutLines {
			res.Truncation.Reason = "lines"
		}
		res.Footer = fmt.Sprintf("(Output capped. Showing lines %d-%d. Use offset=%d to continue.)", a, b, next)
		res.Notes = append(res.Notes, fmt.Sprintf("the file is larger than max_scan_bytes (%d): the total line count and contentId are unknown", scan.Bytes))
	default:
		res.Footer = fmt.Sprintf("(End of file - total %d lines)", scan.TotalLines)
	}
	if scan.TotalLines == 0 {
		res.Notes = append(res.Notes, "the file is empty")
	}
	if res.Truncation.Reason != "none" {
		res.Continuation = &Continuation{Path: req.Path, Offset: next, Limit: req.Limit}
	}
	body.WriteString("\n")
	body.WriteString(res.Footer)
	body.WriteString("\n")
	res.Body = body.String()

	st := f.Identity()
	o := Observation{
		StatID:   fileid.StatID(f.Real, st),
		ViewID:   fileid.Hash(res.Body),
		Range:    res.Range,
		Identity: st,
		RealPath: f.Real,
	}
	content := ""
	if scan.Complete {
		content = fileid.ContentID(scan.Sum)
		o.ContentID = &content
	}
	o.ID = fileid.Hash(o.StatID, content, o.ViewID)
	o.WholeFileVisible = (a == 1 || scan.TotalLines == 0) && res.Truncation.Reason == "none" &&
		len(res.Truncation.ClampedLines) == 0 && scan.Complete
	res.Observation = o
	return res
}

// StatID is the hash of a file version's real path, device, inode, size
// and mtime.
