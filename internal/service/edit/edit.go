// Package edit plans an edit of a file without touching it: the one anchor
// grammar every front end accepts, the mapping of a version the session
// held onto the file as it is now, the new lines of an anchored or
// exact-text edit, and what the session holds afterwards. It reads and
// writes nothing; session does the I/O and the bookkeeping around it.
package edit

import (
	"errors"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/diff"
	"github.com/fsguard/fsguard/internal/concept/held"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
)

// Edit is one change to a file, named by the anchors of the lines it
// replaces (from an --anchors read) or by exact text.
type Edit struct {
	// Op is "replace" (lines From..To with Text), "insert" (Text after
	// From; From "0" inserts before line 1) or "delete" (lines From..To);
	// empty for the exact-text form.
	Op   string `json:"op,omitempty"`
	From string `json:"from,omitempty"` // "N#hh", as an --anchors read showed it
	To   string `json:"to,omitempty"`   // the range's last line; empty: From alone
	Text string `json:"text,omitempty"` // the new lines; a final newline is optional
	// The exact-text form: Old must occur exactly once, and becomes New.
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}

// AnchorPattern is the one grammar of the lines an edit names, for every
// front end (the CLI's flags, the MCP tools' schema): a line "N#hh" as an
// --anchors read shows it, or a range "N#hh..M#hh" (lines.RefRange), or "0"
// (insert before line 1); a copied ": text" after it is allowed and
// ignored, so an agent may paste a whole shown line.
const AnchorPattern = `^(0|` + lines.RefRangePattern + `)(:.*)?$`

// splitAnchors parses a value of AnchorPattern into its first and last
// line ("" when it names one line).
func splitAnchors(v string) (from, to string, err error) {
	v, _, _ = strings.Cut(v, ":")
	if v == "0" {
		return v, "", nil
	}
	r, err := lines.ParseRefRange(v)
	switch {
	case errors.Is(err, lines.ErrNoLine):
		return "", "", refusal.Of(refusal.AnchorNoLine, refusal.OpEdit, "", refusal.Facts{Anchor: v})
	case err != nil:
		return "", "", refusal.Of(refusal.SpecNotAnchor, refusal.OpEdit, "", refusal.Facts{Anchor: v})
	case r.One():
		return r.From.String(), "", nil
	}
	return r.From.String(), r.To.String(), nil
}

// Spec is an edit as a front end takes it (flags, tool arguments):
// each field set or not. Edit checks that it names exactly one edit.
type Spec struct {
	Replace, InsertAfter, Delete *string // an anchor, or a range N#hh..M#hh
	Text                         *string
	Old, New                     *string
}

// Edit returns the one edit the spec names.
func (sp Spec) Edit() (Edit, error) {
	bad := func(r refusal.Reason, f refusal.Facts) (Edit, error) {
		return Edit{}, refusal.Of(r, refusal.OpEdit, "", f)
	}
	var ed Edit
	n := 0
	for _, op := range []struct {
		op    string
		value *string
	}{{"replace", sp.Replace}, {"insert", sp.InsertAfter}, {"delete", sp.Delete}} {
		if op.value != nil {
			n++
			ed.Op = op.op
			var err error
			if ed.From, ed.To, err = splitAnchors(*op.value); err != nil {
				return Edit{}, err
			}
		}
	}
	if sp.Old != nil || sp.New != nil {
		n++
		if sp.Old == nil || sp.New == nil {
			return bad(refusal.OldNewApart, refusal.Facts{})
		}
		ed.Old, ed.New = *sp.Old, *sp.New
	}
	switch {
	case n != 1:
		return bad(refusal.NotOneEdit, refusal.Facts{})
	case (ed.Op == "replace" || ed.Op == "insert") && sp.Text == nil:
		return bad(refusal.SpecNeedsText, refusal.Facts{Arg: ed.Op})
	case sp.Text != nil && (ed.Op == "delete" || ed.Op == ""):
		return bad(refusal.TextAlone, refusal.Facts{})
	}
	if sp.Text != nil {
		ed.Text = *sp.Text
	}
	return ed, nil
}

// editContext is how many unchanged lines an edit's answer shows around
// the change.
const editContext = 2

// Basis is the version the session last held of a file, and how its lines
// map onto the file as it is now.
type Basis struct {
	Lines []string    // its texts; nil when it is no longer kept
	Held  held.Lines  // what the session holds of it
	toCur []int       // its line index -> the current index, or -1 (changed)
	from  map[int]int // the inverse: current index -> its line index
	Same  bool        // it is the current version
}

// Current is the basis when the version the session last held is the
// current one.
func Current(cur []string, h held.Lines) *Basis {
	b := &Basis{Lines: cur, Held: h, Same: true, toCur: make([]int, len(cur))}
	for i := range b.toCur {
		b.toCur[i] = i
	}
	return b
}

// Older is the basis of an older version old the session held (h), mapped
// onto the current lines through a line diff; nil when the two are too
// different to map (as good as not kept).
func Older(old, cur []string, h held.Lines) *Basis {
	ops, ok := diff.Lines(old, cur, 20000)
	if !ok {
		return nil
	}
	b := &Basis{Lines: old, Held: h, toCur: make([]int, len(old)), from: map[int]int{}}
	for i := range b.toCur {
		b.toCur[i] = -1
	}
	for _, op := range ops {
		if op.Kind == diff.Equal {
			b.toCur[op.Old], b.from[op.New] = op.New, op.Old
		}
	}
	return b
}

// knows reports whether the session holds current line j (0-based) as it
// is now: through the current version's own record, or as an unchanged
// line of the version it last held.
func (b *Basis) knows(cur held.Lines, j int) bool {
	if cur.Has(int64(j) + 1) {
		return true
	}
	if b.Same {
		return false
	}
	i, ok := b.from[j]
	return ok && b.Held.Has(int64(i)+1)
}

// parseAnchor parses one line an edit names; "0" is insert's line before
// line 1.
func parseAnchor(name, s string, op string) (lines.Ref, error) {
	if s == "0" && op == "insert" {
		return lines.Ref{}, nil
	}
	r, err := lines.ParseRef(s)
	switch {
	case errors.Is(err, lines.ErrNoLine):
		return r, refusal.Of(refusal.AnchorNoLine, refusal.OpEdit, name, refusal.Facts{Anchor: s})
	case err != nil:
		return r, refusal.Of(refusal.EditNotAnchor, refusal.OpEdit, name, refusal.Facts{Anchor: s})
	}
	return r, nil
}

// anchored applies a replace, insert or delete named by anchors of the
// version the session last held, mapped onto the current lines.
func anchored(name string, cur []lines.RawLine, b *Basis, ed Edit) ([]lines.RawLine, error) {
	switch ed.Op {
	case "replace", "insert", "delete":
	default:
		return nil, refusal.Of(refusal.UnknownEdit, refusal.OpEdit, name, refusal.Facts{Got: ed.Op})
	}
	from, err := parseAnchor(name, ed.From, ed.Op)
	if err != nil {
		return nil, err
	}
	to := from
	if ed.To != "" {
		if ed.Op == "insert" {
			return nil, refusal.Of(refusal.InsertOneAnchor, refusal.OpEdit, name, refusal.Facts{})
		}
		if to, err = parseAnchor(name, ed.To, ed.Op); err != nil {
			return nil, err
		}
	}
	if ed.Op != "delete" && ed.Text == "" {
		return nil, refusal.Of(refusal.NeedsLines, refusal.OpEdit, name, refusal.Facts{Arg: ed.Op})
	}
	if ed.Op == "insert" && from.Line == 0 {
		return splice(cur, 0, 0, ed.Text, true), nil
	}
	if b.Lines == nil {
		return nil, refusal.Of(refusal.VersionGone, refusal.OpEdit, name, refusal.Facts{})
	}
	if to.Line < from.Line {
		return nil, refusal.Of(refusal.RangeBackwards, refusal.OpEdit, name, refusal.Facts{Anchor: from.String(), AnchorTo: to.String()})
	}
	if to.Line > int64(len(b.Lines)) {
		return nil, refusal.Of(refusal.PastEnd, refusal.OpEdit, name, refusal.Facts{Anchor: to.String(), Total: int64(len(b.Lines))})
	}
	for _, a := range []lines.Ref{from, to} {
		if now := (lines.Ref{Line: a.Line, Hash: lines.Anchor(b.Lines[a.Line-1])}); now != a {
			return nil, refusal.Of(refusal.AnchorMismatch, refusal.OpEdit, name, refusal.Facts{Anchor: a.String(), Line: a.Line, Now: now.String()})
		}
	}
	if !b.Held.Covers(from.Line, to.Line) {
		return nil, refusal.Of(refusal.LinesNotShown, refusal.OpModify, name, refusal.Facts{Line: from.Line, End: to.Line})
	}
	f, t := int(from.Line), int(to.Line)
	j := b.toCur[f-1]
	for i := f; i <= t; i++ {
		if c := b.toCur[i-1]; c < 0 || c != j+(i-f) {
			return nil, refusal.Of(refusal.AnchoredChanged, refusal.OpEdit, name, refusal.Facts{Line: int64(i)})
		}
	}
	k := t - f + 1
	switch ed.Op {
	case "replace":
		return splice(cur, j, j+k, ed.Text, true), nil
	case "delete":
		return splice(cur, j, j+k, "", false), nil
	}
	return splice(cur, j+1, j+1, ed.Text, true), nil // insert after
}

// splice replaces cur[i:k] with text's lines, ending them as the file
// ends its lines (so a CRLF file stays CRLF), and keeps the file's last
// line without a terminator if it had none.
func splice(cur []lines.RawLine, i, k int, text string, withText bool) []lines.RawLine {
	eol := dominantEOL(cur)
	var add []lines.RawLine
	if withText {
		_, tl := lines.Split([]byte(text))
		for _, l := range tl {
			add = append(add, lines.RawLine{Text: l.Text, EOL: eol})
		}
	}
	out := make([]lines.RawLine, 0, len(cur)-(k-i)+len(add))
	out = append(out, cur[:i]...)
	out = append(out, add...)
	out = append(out, cur[k:]...)
	// Whatever is now last keeps the old file's ending (none, or one);
	// every other line needs a terminator.
	hadFinal := len(cur) == 0 || cur[len(cur)-1].EOL != ""
	for n := range out {
		if n < len(out)-1 && out[n].EOL == "" {
			out[n].EOL = eol
		}
	}
	if len(out) > 0 && !hadFinal {
		out[len(out)-1].EOL = ""
	} else if len(out) > 0 && out[len(out)-1].EOL == "" {
		out[len(out)-1].EOL = eol
	}
	return out
}

// dominantEOL is the terminator most of the file's lines end with.
func dominantEOL(cur []lines.RawLine) string {
	count := map[string]int{}
	for _, l := range cur {
		if l.EOL != "" {
			count[l.EOL]++
		}
	}
	best := "\n"
	for _, e := range []string{"\r\n", "\r"} {
		if count[e] > count[best] {
			best = e
		}
	}
	return best
}

// exact applies the old/new text form: old must occur exactly once, and
// every line it touches must be one the session holds as it is now.
func exact(name, bom string, cur []lines.RawLine, data []byte, b *Basis, curHeld held.Lines, ed Edit) ([]lines.RawLine, error) {
	if ed.Old == "" {
		return nil, refusal.Of(refusal.EmptyOld, refusal.OpEdit, name, refusal.Facts{})
	}
	old, repl := ed.Old, ed.New
	if eol := dominantEOL(cur); eol != "\n" && !strings.Contains(old, eol) {
		// The agent saw lines, not terminators: its "\n" is the file's.
		old, repl = strings.ReplaceAll(old, "\n", eol), strings.ReplaceAll(repl, "\n", eol)
	}
	text := string(data)
	at := strings.Index(text, old)
	if at < 0 {
		return nil, refusal.Of(refusal.NoMatch, refusal.OpEdit, name, refusal.Facts{})
	}
	if n := countOverlapping(text, old); n > 1 {
		return nil, refusal.Of(refusal.Ambiguous, refusal.OpEdit, name, refusal.Facts{Total: int64(n)})
	}
	first, last := lineAt(bom, cur, at), lineAt(bom, cur, at+len(old)-1)
	for j := first; j <= last; j++ {
		if !b.knows(curHeld, j) {
			// Unchanged since the version the session holds, or that
			// version: the line was never shown. Otherwise it changed.
			if _, unchanged := b.from[j]; b.Same || unchanged {
				return nil, refusal.Of(refusal.LineNotShown, refusal.OpModify, name, refusal.Facts{Line: int64(j + 1)})
			}
			return nil, refusal.Of(refusal.LineChanged, refusal.OpEdit, name, refusal.Facts{Line: int64(j + 1)})
		}
	}
	_, out := lines.Split([]byte(text[:at] + repl + text[at+len(old):]))
	return out, nil
}

func countOverlapping(s, sub string) int {
	n := 0
	for i := strings.Index(s, sub); i >= 0; {
		n++
		j := strings.Index(s[i+1:], sub)
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return n
}

// lineAt returns the index of the line holding byte off of the file (a
// terminator belongs to its line).
func lineAt(bom string, cur []lines.RawLine, off int) int {
	pos := len(bom)
	for i, l := range cur {
		pos += len(l.Text) + len(l.EOL)
		if off < pos {
			return i
		}
	}
	return len(cur) - 1
}

// Plan is an edit planned: the new content, what the session holds of it
// afterwards, and the answer to show.
type Plan struct {
	Content []byte
	// Held is the lines of the new version the session holds afterwards;
	// ShownStart..ShownEnd the lines its answer shows.
	Held                 [][2]int64
	ShownStart, ShownEnd int64
	// Start..End are the changed lines in the new version (End < Start:
	// only lines were deleted, after line End).
	Start, End int64
	Moved      int64  // how far the lines after them moved (+ down)
	Shown      string // the changed lines with context, anchored
	// Elsewhere: the file had also changed, where the edit did not touch,
	// since the session's last read.
	Elsewhere bool
}

// Make plans ed on the file whose content is data (its BOM bom, its lines
// cur), named name in messages: b is the version the session last held,
// curHeld what it holds of the current version, maxChars the line clamp of
// the answer.
func Make(name string, data []byte, bom string, cur []lines.RawLine, b *Basis, curHeld held.Lines, ed Edit, maxChars int) (*Plan, error) {
	var out []lines.RawLine
	var err error
	switch {
	case ed.Op != "" && (ed.Old != "" || ed.New != ""):
		return nil, refusal.Of(refusal.BothForms, refusal.OpEdit, name, refusal.Facts{})
	case ed.Op != "":
		out, err = anchored(name, cur, b, ed)
	default:
		out, err = exact(name, bom, cur, data, b, curHeld, ed)
	}
	if err != nil {
		return nil, err
	}
	return describe(bom, cur, out, b, curHeld, maxChars), nil
}

// describe turns the new lines into the plan: the content, what the
// session holds of it afterwards, and the anchored answer.
func describe(bom string, before, after []lines.RawLine, b *Basis, curHeld held.Lines, maxChars int) *Plan {
	bt, at := lines.Texts(before), lines.Texts(after)
	p, q := diff.Ends(bt, at)
	delta := len(at) - len(bt)
	changedEnd := len(at) - q // the changed lines are at[p:changedEnd]
	lo, hi := max(0, p-editContext), min(len(at), changedEnd+editContext)
	var shown strings.Builder
	clamped := map[int]bool{}
	for j := lo; j < hi; j++ {
		l := lines.LineOf(int64(j+1), at[j], maxChars)
		clamped[j] = l.Truncated
		lines.Render(&shown, l, maxChars, true)
	}
	// Afterwards the session holds what it was shown, what it wrote, and
	// the lines it held of the version it edited, moved as it was told.
	// Lines it held of an older version are not counted even where they
	// are unchanged: it was not told where changes elsewhere moved them.
	holds := func(n int64) bool {
		j := int(n - 1)
		switch {
		case j >= lo && j < hi:
			return !clamped[j] // shown
		case j < p:
			return curHeld.Has(int64(j) + 1)
		case j >= changedEnd:
			return curHeld.Has(int64(j-delta) + 1)
		}
		return true // the session wrote it
	}
	return &Plan{
		Content: lines.Join(bom, after),
		Held:    held.SpansOf(int64(len(at)), holds), ShownStart: int64(lo + 1), ShownEnd: int64(hi),
		Start: int64(p + 1), End: int64(changedEnd), Moved: int64(delta), Shown: shown.String(), Elsewhere: !b.Same,
	}
}
