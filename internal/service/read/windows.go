package read

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/charset"
	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
)

// MaxWindows bounds the windows of one read.
const MaxWindows = 16

// DefaultRadius is how many lines either side of an anchor a read around
// it shows.
const DefaultRadius = 10

// windowPlan is what a request asks to see, checked before the file is
// opened: the windows in file order, and what names the first line in
// messages ("offset", "window", "around", "block").
type windowPlan struct {
	windows   []span
	startName string
	anchor    string // Around's "hh", checked against the line shown
	anchorN   int64
	notes     []string
	mode      string // "", "windows", "around" or "block"
}

// span is one window: from Start, at most limit lines, ending at End when
// the window has its own end (0: it runs to the limit).
type span struct {
	Range
	limit int64
}

// plain reports whether the request is a plain read (no windows, anchor
// or block): the only kind a directory or a notebook answers.
func (p *windowPlan) plain() bool { return p.mode == "" }

var aroundRe = regexp.MustCompile(`^([0-9]+)#([0-9a-f]{2})$`)

// plan checks a request's window options and fills in its defaults.
func plan(req *Request, maxLines int) (*windowPlan, error) {
	p := &windowPlan{startName: "offset"}
	for _, c := range []struct {
		name string
		v    int64
	}{{"offset", req.Offset}, {"limit", req.Limit}} {
		if c.v != 0 { // 0: the default
			if err := CheckCount(c.name, strconv.FormatInt(c.v, 10), req.Path); err != nil {
				return nil, err
			}
		}
	}
	modes := 0
	for _, set := range []bool{req.Offset != 0, len(req.Windows) > 0, req.Around != "", req.Block != 0} {
		if set {
			modes++
		}
	}
	if modes > 1 {
		return nil, refusal.New(refusal.InvalidInput, req.Path, "invalid input: give one of offset, windows, around and block, not several")
	}
	if req.Limit == 0 {
		req.Limit = int64(maxLines)
	}
	if req.Limit > int64(maxLines) {
		p.notes = append(p.notes, fmt.Sprintf("limit %d was clamped to max_lines %d", req.Limit, maxLines))
		req.Limit = int64(maxLines)
	}
	switch {
	case len(req.Windows) > 0:
		if len(req.Windows) > MaxWindows {
			return nil, refusal.New(refusal.InvalidInput, req.Path, "invalid input: %d windows; at most %d in one read", len(req.Windows), MaxWindows)
		}
		ws := slices.Clone(req.Windows)
		for _, w := range ws {
			if w.Start < MinCount || w.End < w.Start {
				return nil, refusal.New(refusal.InvalidInput, req.Path, "invalid input: window %d:%d; a window is START:END with 1 <= START <= END", w.Start, w.End)
			}
		}
		slices.SortFunc(ws, func(a, b Range) int { return int(min(max(a.Start-b.Start, -1), 1)) })
		for _, w := range ws {
			if n := len(p.windows); n > 0 && w.Start <= p.windows[n-1].End+1 {
				p.windows[n-1].End = max(p.windows[n-1].End, w.End)
				continue
			}
			p.windows = append(p.windows, span{Range: w})
		}
		p.mode, p.startName = "windows", "window start"
	case req.Around != "":
		m := aroundRe.FindStringSubmatch(strings.TrimSpace(req.Around))
		if m == nil {
			return nil, refusal.New(refusal.InvalidInput, req.Path, "invalid input: around %q is not an anchor; use N#hh as an --anchors read shows it (e.g. 12#a3)", req.Around)
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || n < 1 {
			return nil, refusal.New(refusal.InvalidInput, req.Path, "invalid input: around %q names no line", req.Around)
		}
		r := req.Radius
		if r == 0 {
			r = DefaultRadius
		}
		if r < 0 {
			return nil, refusal.New(refusal.InvalidInput, req.Path, "invalid input: radius must not be negative, got %d", r)
		}
		p.windows = []span{{Range: Range{Start: max(1, n-r), End: n + r}}}
		p.anchor, p.anchorN, p.mode, p.startName = m[2], n, "around", "around line"
	case req.Block != 0:
		if req.Block < 1 {
			return nil, refusal.New(refusal.InvalidInput, req.Path, "invalid input: block must be a line number (1 or more), got %d", req.Block)
		}
		p.mode, p.startName = "block", "block line"
		p.windows = []span{{Range: Range{Start: req.Block}}} // placed by block()
	default:
		if req.Offset == 0 {
			req.Offset = 1
		}
		p.windows = []span{{Range: Range{Start: req.Offset}, limit: req.Limit}}
	}
	if req.Radius != 0 && req.Around == "" {
		return nil, refusal.New(refusal.InvalidInput, req.Path, "invalid input: radius goes with around")
	}
	for i := range p.windows {
		if w := &p.windows[i]; w.End > 0 {
			w.limit = min(w.End-w.Start+1, req.Limit)
		}
	}
	return p, nil
}

// block places the block window: the smallest block by indentation around
// the requested line, from one pass over the whole text (which must fit in
// max_scan_bytes).
func (p *windowPlan) block(src *source, req Request, maxScan int64) error {
	text, err := io.ReadAll(io.LimitReader(src.open(), maxScan+1))
	if err != nil {
		return refusal.Cannot(refusal.IOError, src.f.Name, fmt.Sprintf("I/O error while reading (%v); try again", err))
	}
	if int64(len(text)) > maxScan {
		return refusal.Cannot(refusal.TooLarge, src.f.Name, fmt.Sprintf("block needs the whole file, and it is larger than max_scan_bytes (%d); read a window with offset and limit", maxScan))
	}
	_, split := lines.Split(text)
	if req.Block > int64(len(split)) {
		return refusal.New(refusal.OffsetOutOfRange, src.f.Name, "block line %d is out of range for %q (%d lines)", req.Block, src.f.Name, len(split))
	}
	a, b := lines.Block(lines.Texts(split), int(req.Block))
	p.windows = []span{{Range: Range{Start: int64(a), End: int64(b)}, limit: min(int64(b-a+1), req.Limit)}}
	return nil
}

// checkAnchor notes when the line an around-read was centred on no longer
// has the anchor the agent named: the file changed since it saw the line.
func (p *windowPlan) checkAnchor(part *Result) {
	for _, l := range part.Lines {
		if l.N != p.anchorN {
			continue
		}
		if now := lines.Anchor(l.Text); l.Truncated || now != p.anchor {
			if l.Truncated {
				now = lines.NoAnchor
			}
			p.notes = append(p.notes, fmt.Sprintf("line %d is now %d#%s, not %d#%s: it changed since you read it; the window is around line %d as it is now", p.anchorN, p.anchorN, now, p.anchorN, p.anchor, p.anchorN))
		}
		return
	}
}

// source opens the file's text for one pass: its bytes, or for UTF-16 and
// UTF-32 its text decoded to UTF-8 (the contentId still names the file's
// bytes, whatever is shown).
type source struct {
	f   *roots.File
	enc charset.Encoding
	cur *charset.Reader
}

func (s *source) open() io.Reader {
	s.cur = charset.NewReader(io.NewSectionReader(s.f, 0, 1<<62), s.enc)
	return s.cur
}

// settle makes a complete scan of decoded text describe the file's bytes.
func (s *source) settle(scan *lines.Result) {
	if scan.Complete {
		s.cur.Settle(&scan.Sum, &scan.Bytes)
	}
}

// join makes one answer of a read's windows: a single window is its own
// answer; several are shown in file order, each with its own footer, and
// the whole is one observation of the version.
func join(f *roots.File, parts []*Result, notes []string) *Result {
	if len(parts) == 1 {
		parts[0].Notes = append(notes, parts[0].Notes...)
		return parts[0]
	}
	first, last := parts[0], parts[len(parts)-1]
	res := &Result{Path: f.Name, Parts: parts, Totals: first.Totals, Notes: notes,
		Range: Range{Start: first.Range.Start, End: last.Range.End}, Anchors: first.Anchors,
		Truncation: Truncation{Reason: "none", ClampedLines: []int64{}, MaxLineChars: first.Truncation.MaxLineChars}}
	var body strings.Builder
	whole := first.Totals.Complete
	next := int64(1)
	for i, p := range parts {
		if i > 0 {
			body.WriteString("\n")
		}
		body.WriteString(p.Body)
		res.Truncation.ClampedLines = append(res.Truncation.ClampedLines, p.Truncation.ClampedLines...)
		if p.Truncation.Reason != "none" && res.Truncation.Reason == "none" {
			res.Truncation.Reason = p.Truncation.Reason
		}
		whole = whole && p.Range.Start <= next && len(p.Truncation.ClampedLines) == 0
		next = max(next, p.Range.End+1)
		res.Notes = append(res.Notes, p.Notes...)
	}
	whole = whole && next > first.Totals.Lines
	res.Body = body.String()
	o := first.Observation
	o.Range, o.ViewID = res.Range, fileid.Hash(res.Body)
	content := ""
	if o.ContentID != nil {
		content = *o.ContentID
	}
	o.ID = fileid.Hash(o.StatID, content, o.ViewID)
	o.WholeFileVisible = whole
	res.Observation = o
	return res
}
