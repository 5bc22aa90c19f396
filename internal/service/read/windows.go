package read

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/charset"
	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
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

// Arg is a window option of a read request, by the request's own name for
// it. A front end shows it in its own words (the CLI: --offset; MCP:
// offset) when it renders an InputError.
type Arg string

// The window options.
const (
	ArgOffset Arg = "offset"
	ArgLimit  Arg = "limit"
	ArgWindow Arg = "window"
	ArgAround Arg = "around"
	ArgRadius Arg = "radius"
	ArgBlock  Arg = "block"
)

// modeArgs are the options that each ask for windows in their own way: a
// read takes one of them.
var modeArgs = []Arg{ArgOffset, ArgWindow, ArgAround, ArgBlock}

// Problem is what is wrong with a read's window options.
type Problem int

// The problems an InputError names.
const (
	// NotPositive: a line number or count is not an integer of 1 or more.
	NotPositive Problem = iota
	// BadWindow: a window is not START:END with 1 <= START <= END.
	BadWindow
	// TooManyWindows: more than MaxWindows windows.
	TooManyWindows
	// NotAnchor, NoLine: around is not N#hh, or its N names no line.
	NotAnchor
	NoLine
	// Conflict: several options ask for windows in different ways.
	Conflict
	// Alone: the first option goes only with the second (radius, around).
	Alone
)

// InputError is a read's window options refused before any file is
// opened: what is wrong, the options at fault and the value as given.
// There is one check (Check) for every door; each door renders the refusal
// in its own words for the options (Refusal).
type InputError struct {
	Path string
	Why  Problem
	Args []Arg
	Got  string
}

func (e *InputError) Error() string { return e.Refusal().Error() }

// problems are the reasons of the problems.
var problems = map[Problem]refusal.Reason{
	NotPositive: refusal.NotPositive, BadWindow: refusal.BadWindow, TooManyWindows: refusal.TooManyWindows,
	NotAnchor: refusal.NotAnchorArg, NoLine: refusal.NoLineArg, Conflict: refusal.Conflict, Alone: refusal.Alone,
}

// Refusal is the INVALID_INPUT refusal that says e, with e as its cause;
// each door names the options in its own words.
func (e *InputError) Refusal() *refusal.Error {
	f := refusal.Facts{Got: e.Got, Options: make([]string, len(e.Args))}
	for i, a := range e.Args {
		f.Options[i] = string(a)
	}
	if len(e.Args) > 0 {
		f.Arg = f.Options[0]
	}
	if e.Why == TooManyWindows {
		f.Limit = MaxWindows
	}
	return refusal.Of(problems[e.Why], refusal.OpRead, e.Path, f).Because(e)
}

// ParseCount parses a line number or count as a front end received it (a
// flag's text): the rule Check applies to numbers.
func ParseCount(arg Arg, s, path string) (int64, *InputError) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < MinCount {
		return 0, &InputError{Path: path, Why: NotPositive, Args: []Arg{arg}, Got: s}
	}
	return v, nil
}

// ParseWindow parses a window as text, "START:END".
func ParseWindow(s, path string) (Range, *InputError) {
	a, b, ok := strings.Cut(s, ":")
	x, err1 := strconv.ParseInt(a, 10, 64)
	y, err2 := strconv.ParseInt(b, 10, 64)
	w := Range{Start: x, End: y}
	if !ok || err1 != nil || err2 != nil || !goodWindow(w) {
		return Range{}, &InputError{Path: path, Why: BadWindow, Args: []Arg{ArgWindow}, Got: s}
	}
	return w, nil
}

func goodWindow(w Range) bool { return w.Start >= MinCount && w.End >= w.Start }

// Check is the one check of a request's window options, for every door
// (the CLI's flags, MCP's arguments, a request to the control socket):
// each value first (the numbers, the windows, the anchor), then how they
// combine.
// Zero is an option not given.
func (req Request) Check() *InputError {
	bad := func(why Problem, got string, args ...Arg) *InputError {
		return &InputError{Path: req.Path, Why: why, Args: args, Got: got}
	}
	for _, c := range []struct {
		arg Arg
		v   int64
	}{{ArgOffset, req.Offset}, {ArgLimit, req.Limit}, {ArgRadius, req.Radius}, {ArgBlock, req.Block}} {
		if c.v < 0 {
			return bad(NotPositive, strconv.FormatInt(c.v, 10), c.arg)
		}
	}
	if len(req.Windows) > MaxWindows {
		return bad(TooManyWindows, strconv.Itoa(len(req.Windows)))
	}
	for _, w := range req.Windows {
		if !goodWindow(w) {
			return bad(BadWindow, fmt.Sprintf("%d:%d", w.Start, w.End), ArgWindow)
		}
	}
	if req.Around != "" {
		switch _, err := lines.ParseRef(req.Around); {
		case errors.Is(err, lines.ErrNoLine):
			return bad(NoLine, req.Around, ArgAround)
		case err != nil:
			return bad(NotAnchor, req.Around, ArgAround)
		}
	}
	var given []Arg
	for i, set := range []bool{req.Offset != 0, len(req.Windows) > 0, req.Around != "", req.Block != 0} {
		if set {
			given = append(given, modeArgs[i])
		}
	}
	if len(given) > 1 {
		return bad(Conflict, "", given...)
	}
	if req.Radius != 0 && req.Around == "" {
		return bad(Alone, "", ArgRadius, ArgAround)
	}
	return nil
}

// plan checks a request's window options and fills in its defaults.
func plan(req *Request, maxLines int) (*windowPlan, error) {
	if e := req.Check(); e != nil {
		return nil, e.Refusal()
	}
	p := &windowPlan{startName: "offset"}
	if req.Limit == 0 {
		req.Limit = int64(maxLines)
	}
	if req.Limit > int64(maxLines) {
		p.notes = append(p.notes, fmt.Sprintf("limit %d was clamped to max_lines %d", req.Limit, maxLines))
		req.Limit = int64(maxLines)
	}
	switch {
	case len(req.Windows) > 0:
		ws := slices.Clone(req.Windows)
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
		at, _ := lines.ParseRef(req.Around) // checked
		r := req.Radius
		if r == 0 {
			r = DefaultRadius
		}
		p.windows = []span{{Range: Range{Start: max(1, at.Line-r), End: at.Line + r}}}
		p.anchor, p.anchorN, p.mode, p.startName = at.Hash, at.Line, "around", "around line"
	case req.Block != 0:
		p.mode, p.startName = "block", "block line"
		p.windows = []span{{Range: Range{Start: req.Block}}} // placed by block()
	default:
		if req.Offset == 0 {
			req.Offset = 1
		}
		p.windows = []span{{Range: Range{Start: req.Offset}, limit: req.Limit}}
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
		return refusal.Of(refusal.IOFailedReading, refusal.OpRead, src.f.Shown, refusal.Facts{Detail: err.Error()})
	}
	if int64(len(text)) > maxScan {
		return refusal.Of(refusal.BlockTooLarge, refusal.OpRead, src.f.Shown, refusal.Facts{Limit: maxScan})
	}
	_, split := lines.Split(text)
	if req.Block > int64(len(split)) {
		return refusal.Of(refusal.OutOfRange, refusal.OpRead, src.f.Shown, refusal.Facts{Arg: "block line", Line: req.Block, Total: int64(len(split)), Unit: "line"})
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
	// masks, once the verdict is known, are applied to every byte read.
	masks []sniff.Mask
}

func (s *source) open() io.Reader {
	var r io.ReaderAt = s.f
	if len(s.masks) > 0 {
		r = sniff.MaskedReaderAt{R: s.f, Masks: s.masks}
	}
	s.cur = charset.NewReader(io.NewSectionReader(r, 0, 1<<62), s.enc)
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
	res := &Result{Path: f.Shown, Parts: parts, Totals: first.Totals, Notes: notes,
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
