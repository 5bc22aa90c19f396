package session

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"fsguard/fileid"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"fsguard/diff"
	"fsguard/journal"
	"fsguard/refusal"
	"fsguard/roots"
	"fsguard/window"
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
// --anchors read shows it, or a range "N#hh..M#hh", or "0" (insert before
// line 1); a copied ": text" after it is allowed and ignored, so an agent
// may paste a whole shown line.
const AnchorPattern = `^(0|[0-9]+#[0-9a-f]{2})(\.\.[0-9]+#[0-9a-f]{2})?(:.*)?$`

var anchorsRe = regexp.MustCompile(AnchorPattern)

// splitAnchors parses a value of AnchorPattern into its first and last
// line ("" when it names one line).
func splitAnchors(v string) (from, to string, err error) {
	if !anchorsRe.MatchString(v) {
		return "", "", refusal.New(refusal.InvalidInput, "", "invalid input: %q is not an anchor; use N#hh (or N#hh..M#hh) as an --anchors read shows it, e.g. 12#a3", v)
	}
	v, _, _ = strings.Cut(v, ":")
	from, to, _ = strings.Cut(v, "..")
	return from, to, nil
}

// EditSpec is an edit as a front end takes it (flags, tool arguments):
// each field set or not. Edit checks that it names exactly one edit.
type EditSpec struct {
	Replace, InsertAfter, Delete *string // an anchor, or a range N#hh..M#hh
	Text                         *string
	Old, New                     *string
}

// Edit returns the one edit the spec names.
func (sp EditSpec) Edit() (Edit, error) {
	bad := func(msg string) (Edit, error) {
		return Edit{}, refusal.New(refusal.InvalidInput, "", "invalid input: %s", msg)
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
			return bad("the old text and the new text go together (an empty new text deletes the old)")
		}
		ed.Old, ed.New = *sp.Old, *sp.New
	}
	switch {
	case n != 1:
		return bad("give exactly one edit: replace, insert after, delete, or old and new text")
	case (ed.Op == "replace" || ed.Op == "insert") && sp.Text == nil:
		return bad(ed.Op + " needs the new lines (text)")
	case sp.Text != nil && (ed.Op == "delete" || ed.Op == ""):
		return bad("text goes with replace or insert after")
	}
	if sp.Text != nil {
		ed.Text = *sp.Text
	}
	return ed, nil
}

// EditResult describes a completed edit.
type EditResult struct {
	*WriteResult
	// Start..End are the changed lines in the new version (End < Start:
	// only lines were deleted, after line End).
	Start, End int64
	Moved      int64  // how far the lines after them moved (+ down)
	Shown      string // the changed lines with context, anchored
	// Elsewhere: the file had also changed, where the edit did not touch,
	// since the session's last read.
	Elsewhere bool
}

// maxEdit bounds the file an edit rewrites (the control socket's bound).
const maxEdit = 64 << 20

// editContext is how many unchanged lines an edit's answer shows around
// the change.
const editContext = 2

// Edit applies one edit atomically through the write path. What it checks
// is narrower than a write: only that the lines it touches are lines the
// session was handed and that they have not changed since. The file may
// have changed elsewhere; those changes are kept, and line numbers are
// mapped through them from the version the session last read.
func (s *Service) Edit(name, cwd, session string, ed Edit) (*EditResult, error) {
	var out EditResult
	res, err := s.replace(name, cwd, session, func(f *roots.File) (io.Reader, *edited, error) {
		if f == nil {
			return nil, nil, refusal.New(refusal.NotFound, name, "cannot edit %q: no such file; create it with fsguard write", name)
		}
		p, err := s.planEdit(f, session, ed)
		if err != nil {
			return nil, nil, err
		}
		out = p.result
		return bytes.NewReader(p.content), &p.edited, nil
	})
	if res == nil {
		return nil, s.view.Err(err)
	}
	res.Path = s.shown(res.Path)
	out.WriteResult = res
	return &out, err // written; err says it was not recorded
}

type editPlan struct {
	content []byte
	edited  edited
	result  EditResult
}

// basis is the version the session last held of a file, and how its lines
// map onto the file as it is now.
type basis struct {
	lines []string     // its texts; nil when it is no longer kept
	held  journal.Held // what the session holds of it
	toCur []int        // its line index -> the current index, or -1 (changed)
	from  map[int]int  // the inverse: current index -> its line index
	same  bool         // it is the current version
}

func (s *Service) basis(session string, f *roots.File, last *journal.Record, curID string, cur []string) (*basis, error) {
	if last.ContentID == curID {
		held, err := s.Journal.Holding(s.sess(session), f.Real, curID, int64(len(cur)), false)
		b := &basis{lines: cur, held: held, same: true, toCur: make([]int, len(cur))}
		for i := range b.toCur {
			b.toCur[i] = i
		}
		return b, err
	}
	b := &basis{}
	if s.Held == nil || last.ContentID == "" {
		return b, nil
	}
	data, err := s.Held.Get(last.ContentID)
	if err != nil || data == nil {
		return b, err
	}
	_, lines := window.Split(data)
	texts := window.Texts(lines)
	ops, ok := diff.Lines(texts, cur, 20000)
	if !ok {
		return b, nil // too different to map: as good as not kept
	}
	if b.held, err = s.Journal.Holding(s.sess(session), f.Real, last.ContentID, int64(len(lines)), false); err != nil {
		return b, err
	}
	b.lines, b.toCur = texts, make([]int, len(texts))
	for i := range b.toCur {
		b.toCur[i] = -1
	}
	b.from = map[int]int{}
	for _, op := range ops {
		if op.Kind == diff.Equal {
			b.toCur[op.Old], b.from[op.New] = op.New, op.Old
		}
	}
	return b, nil
}

// knows reports whether the session holds current line j (0-based) as it
// is now: through the current version's own record, or as an unchanged
// line of the version it last held.
func (b *basis) knows(cur journal.Held, j int) bool {
	if cur.Has(int64(j) + 1) {
		return true
	}
	if b.same {
		return false
	}
	i, ok := b.from[j]
	return ok && b.held.Has(int64(i)+1)
}

func (s *Service) planEdit(f *roots.File, session string, ed Edit) (*editPlan, error) {
	if s.Journal == nil {
		return nil, refusal.New(refusal.IOError, f.Name, "cannot edit %q: %s", f.Name, s.notRecorded())
	}
	// An edit's answer shows lines of the file: the file must be one the
	// policy lets this caller see, as for a read.
	if _, err := s.admit().Decide(s.Guard, f); err != nil {
		return nil, err
	}
	data, err := wholeText(f)
	if err != nil {
		return nil, err
	}
	curID := fileid.ContentID(sha256.Sum256(data))
	bom, lines := window.Split(data)
	cur := window.Texts(lines)
	last, err := s.Journal.LastObservation(s.sess(session), f.Real)
	if err != nil {
		return nil, err
	}
	if last == nil {
		return nil, notObserved(f.Name, "file has not been read")
	}
	b, err := s.basis(session, f, last, curID, cur)
	if err != nil {
		return nil, err
	}
	curHeld := b.held // the version it last held is the current one
	if !b.same {
		if curHeld, err = s.Journal.Holding(s.sess(session), f.Real, curID, int64(len(cur)), false); err != nil {
			return nil, err
		}
	}
	var out []window.RawLine
	switch {
	case ed.Op != "" && (ed.Old != "" || ed.New != ""):
		return nil, refusal.New(refusal.InvalidInput, f.Name, "invalid input: give either an anchored edit (replace, insert or delete) or old and new text, not both")
	case ed.Op != "":
		out, err = anchored(f.Name, lines, b, ed)
	default:
		out, err = exact(f.Name, bom, lines, data, b, curHeld, ed)
	}
	if err != nil {
		return nil, err
	}
	return s.describe(bom, lines, out, b, curHeld), nil
}

// wholeText reads the open file whole, and refuses one that changed while
// it was read or that is not UTF-8 text.
func wholeText(f *roots.File) ([]byte, error) {
	if f.Stat.Size > maxEdit {
		return nil, refusal.New(refusal.TooLarge, f.Name, "cannot edit %q: it is larger than %d bytes, the most fsguard edit rewrites", f.Name, maxEdit)
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, maxEdit+1))
	if err != nil {
		return nil, refusal.New(refusal.IOError, f.Name, "cannot edit %q: I/O error while reading (%v); try again", f.Name, err)
	}
	if now, err := f.Restat(); err != nil || now != f.Identity() || int64(len(data)) != f.Stat.Size {
		return nil, refusal.New(refusal.ChangedDuringRead, f.Name, "cannot edit %q: the file changed while it was being read; retry", f.Name)
	}
	if !utf8.Valid(data) {
		return nil, refusal.New(refusal.Encoding, f.Name, "cannot edit %q: it is not UTF-8 text", f.Name)
	}
	return data, nil
}

// anchorRe is one line's anchor, as splitAnchors leaves it.
var anchorRe = regexp.MustCompile(`^([0-9]+)#([0-9a-f]{2})$`)

type anchor struct {
	n    int // 1-based
	hash string
	text string // as named
}

func parseAnchor(name, s string, op string) (anchor, error) {
	if s == "0" && op == "insert" {
		return anchor{text: s}, nil
	}
	m := anchorRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return anchor{}, refusal.New(refusal.InvalidInput, name, "invalid input: %q is not an anchor; use N#hh as an --anchors read shows it (e.g. 12#a3)", s)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 {
		return anchor{}, refusal.New(refusal.InvalidInput, name, "invalid input: anchor %q names no line", s)
	}
	return anchor{n: n, hash: m[2], text: m[1] + "#" + m[2]}, nil
}

// anchored applies a replace, insert or delete named by anchors of the
// version the session last held, mapped onto the current lines.
func anchored(name string, lines []window.RawLine, b *basis, ed Edit) ([]window.RawLine, error) {
	switch ed.Op {
	case "replace", "insert", "delete":
	default:
		return nil, refusal.New(refusal.InvalidInput, name, "invalid input: unknown edit %q; use replace, insert or delete", ed.Op)
	}
	from, err := parseAnchor(name, ed.From, ed.Op)
	if err != nil {
		return nil, err
	}
	to := from
	if ed.To != "" {
		if ed.Op == "insert" {
			return nil, refusal.New(refusal.InvalidInput, name, "invalid input: insert takes one anchor, the line to insert after")
		}
		if to, err = parseAnchor(name, ed.To, ed.Op); err != nil {
			return nil, err
		}
	}
	if ed.Op != "delete" && ed.Text == "" {
		return nil, refusal.New(refusal.InvalidInput, name, "invalid input: %s needs the new lines (text); to remove lines use delete", ed.Op)
	}
	if ed.Op == "insert" && from.n == 0 {
		return splice(lines, 0, 0, ed.Text, true), nil
	}
	if b.lines == nil {
		return nil, refusal.New(refusal.StaleVersion, name, "cannot edit %q: it changed since your last read, and the version you read is no longer kept; read the lines again with --anchors, then retry", name)
	}
	if to.n < from.n {
		return nil, refusal.New(refusal.InvalidInput, name, "invalid input: the range %s..%s runs backwards", from.text, to.text)
	}
	if to.n > len(b.lines) {
		return nil, refusal.New(refusal.InvalidInput, name, "invalid input: anchor %s is past the end of the version you last read (%d lines)", to.text, len(b.lines))
	}
	for _, a := range []anchor{from, to} {
		if h := window.Anchor(b.lines[a.n-1]); h != a.hash {
			return nil, refusal.New(refusal.StaleVersion, name, "cannot edit %q: anchor %s does not match line %d of the version you last read (it is %d#%s); read the lines again with --anchors, then retry", name, a.text, a.n, a.n, h)
		}
	}
	if !b.held.Covers(int64(from.n), int64(to.n)) {
		return nil, notObserved(name, fmt.Sprintf("lines %d-%d were not all shown to you", from.n, to.n))
	}
	j := b.toCur[from.n-1]
	for i := from.n; i <= to.n; i++ {
		if c := b.toCur[i-1]; c < 0 || c != j+(i-from.n) {
			return nil, refusal.New(refusal.StaleVersion, name, "cannot edit %q: line %d changed since you read it; read it again with --anchors, then retry", name, i)
		}
	}
	k := to.n - from.n + 1
	switch ed.Op {
	case "replace":
		return splice(lines, j, j+k, ed.Text, true), nil
	case "delete":
		return splice(lines, j, j+k, "", false), nil
	}
	return splice(lines, j+1, j+1, ed.Text, true), nil // insert after
}

// splice replaces lines[i:k] with text's lines, ending them as the file
// ends its lines (so a CRLF file stays CRLF), and keeps the file's last
// line without a terminator if it had none.
func splice(lines []window.RawLine, i, k int, text string, withText bool) []window.RawLine {
	eol := dominantEOL(lines)
	var add []window.RawLine
	if withText {
		_, tl := window.Split([]byte(text))
		for _, l := range tl {
			add = append(add, window.RawLine{Text: l.Text, EOL: eol})
		}
	}
	out := make([]window.RawLine, 0, len(lines)-(k-i)+len(add))
	out = append(out, lines[:i]...)
	out = append(out, add...)
	out = append(out, lines[k:]...)
	// Whatever is now last keeps the old file's ending (none, or one);
	// every other line needs a terminator.
	hadFinal := len(lines) == 0 || lines[len(lines)-1].EOL != ""
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
func dominantEOL(lines []window.RawLine) string {
	count := map[string]int{}
	for _, l := range lines {
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
func exact(name, bom string, lines []window.RawLine, data []byte, b *basis, curHeld journal.Held, ed Edit) ([]window.RawLine, error) {
	if ed.Old == "" {
		return nil, refusal.New(refusal.InvalidInput, name, "invalid input: the text to replace is empty; give an anchored insert to add lines")
	}
	old, repl := ed.Old, ed.New
	if eol := dominantEOL(lines); eol != "\n" && !strings.Contains(old, eol) {
		// The agent saw lines, not terminators: its "\n" is the file's.
		old, repl = strings.ReplaceAll(old, "\n", eol), strings.ReplaceAll(repl, "\n", eol)
	}
	text := string(data)
	at := strings.Index(text, old)
	if at < 0 {
		return nil, refusal.New(refusal.EditNoMatch, name, "cannot edit %q: the text to replace was not found; read the lines again and copy them exactly, whitespace included", name)
	}
	if n := countOverlapping(text, old); n > 1 {
		return nil, refusal.New(refusal.EditAmbiguous, name, "cannot edit %q: the text to replace occurs %d times; include more of the surrounding lines so it occurs once", name, n)
	}
	first, last := lineAt(bom, lines, at), lineAt(bom, lines, at+len(old)-1)
	for j := first; j <= last; j++ {
		if !b.knows(curHeld, j) {
			// Unchanged since the version the session holds, or that
			// version: the line was never shown. Otherwise it changed.
			if _, unchanged := b.from[j]; b.same || unchanged {
				return nil, notObserved(name, fmt.Sprintf("line %d was not shown to you", j+1))
			}
			return nil, refusal.New(refusal.StaleVersion, name, "cannot edit %q: line %d changed since you read it; read it again, then retry", name, j+1)
		}
	}
	_, out := window.Split([]byte(text[:at] + repl + text[at+len(old):]))
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
func lineAt(bom string, lines []window.RawLine, off int) int {
	pos := len(bom)
	for i, l := range lines {
		pos += len(l.Text) + len(l.EOL)
		if off < pos {
			return i
		}
	}
	return len(lines) - 1
}

// describe turns the new lines into the plan: the content, what the
// session holds of it afterwards, and the anchored answer.
func (s *Service) describe(bom string, before, after []window.RawLine, b *basis, curHeld journal.Held) *editPlan {
	bt, at := window.Texts(before), window.Texts(after)
	p, q := diff.Ends(bt, at)
	delta := len(at) - len(bt)
	changedEnd := len(at) - q // the changed lines are at[p:changedEnd]
	lo, hi := max(0, p-editContext), min(len(at), changedEnd+editContext)
	maxChars := s.Guard.Policy().Limits.MaxLineChars
	var shown strings.Builder
	clamped := map[int]bool{}
	for j := lo; j < hi; j++ {
		l := window.LineOf(int64(j+1), at[j], maxChars)
		clamped[j] = l.Truncated
		window.Render(&shown, l, maxChars, true)
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
	elsewhere := !b.same
	return &editPlan{
		content: window.Join(bom, after),
		edited:  edited{held: journal.SpansOf(int64(len(at)), holds), start: int64(lo + 1), end: int64(hi)},
		result:  EditResult{Start: int64(p + 1), End: int64(changedEnd), Moved: int64(delta), Shown: shown.String(), Elsewhere: elsewhere},
	}
}
