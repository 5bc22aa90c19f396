package session

import (
	"bytes"
	"io"

	"github.com/fsguard/fsguard/internal/concept/charset"
	"github.com/fsguard/fsguard/internal/concept/diff"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// A write must never replace a credential with its mask. The agent was
// shown the file masked (see sniff.Mask), so what it sends back holds masks
// where the file holds secrets. restore carries each secret back:
//
//   - a line that reaches the write exactly as it was shown, at a place the
//     line diff maps to its old line, is written with its original bytes;
//   - in a line the write changed, a mask that is still there unchanged
//     (with the bytes just before it) exactly once among the lines that
//     replaced it gets its original bytes back;
//   - anything mask-shaped left after that (a mask altered, duplicated,
//     moved within the file or carried in from another file) refuses the
//     whole write with FS_MASKED_SPAN: the file is not touched.
//
// raw and shown are the old version's text (decoded) and the same text
// masked: the same length, line for line.

// maskRun is the least run of fill characters that reads as a mask.
const maskRun = 8

// keyContext is how many shown bytes before a mask's fill name it in a
// changed line (with the fill, once among the lines that replaced it).
const keyContext = 4

// maxRestoreEdits bounds the line diff between what was shown and what is
// written; past it, lines are matched by their text alone.
const maxRestoreEdits = 4000

// segment is one masked span of a shown line: key (the bytes before the
// fill and the fill) in the shown text, and the same bytes unmasked.
type segment struct {
	key, raw []byte
	fill     int // where the fill starts in key
}

func restore(name string, raw, shown, next []byte) ([]byte, [][]byte, error) {
	if bytes.Equal(raw, shown) {
		return next, nil, maskShaped(name, next)
	}
	if lineCount(raw) > maxEditLines || lineCount(shown) > maxEditLines || lineCount(next) > maxEditLines {
		return nil, nil, refusal.Of(refusal.MasksTooManyLines, refusal.OpWrite, name, refusal.Facts{Limit: maxEditLines})
	}
	_, rl := lines.Split(raw)
	_, sl := lines.Split(shown)
	bom, nl := lines.Split(next)
	if len(rl) != len(sl) {
		return nil, nil, maskedSpan(refusal.MasksUnplaced, name, 0, 0)
	}
	var restored [][]byte // the secrets put back, for keptMasked
	masked := make([]bool, len(sl))
	any := false
	for i := range sl {
		masked[i] = rl[i].Text != sl[i].Text
		any = any || masked[i]
	}
	out := make([]string, len(nl))
	for j := range nl {
		out[j] = nl[j].Text
	}
	old, cur := lines.Texts(sl), lines.Texts(nl)
	ops, ok := diff.Lines(old, cur, maxRestoreEdits)
	if !ok {
		ops = matchUnique(old, cur)
	}
	// Walk the script: equal lines are restored whole; a run of deleted
	// and inserted lines is a hunk, where single masks are looked for.
	var gone []int // masked old lines of the hunk under way
	var added []int
	flush := func() {
		for _, i := range gone {
			for _, sg := range segments([]byte(sl[i].Text), []byte(rl[i].Text)) {
				n, at, where := 0, -1, -1
				for _, j := range added {
					if c := bytes.Count([]byte(out[j]), sg.key); c > 0 {
						n += c
						at, where = j, bytes.Index([]byte(out[j]), sg.key)
					}
				}
				if n == 1 {
					line := []byte(out[at])
					copy(line[where+sg.fill:], sg.raw[sg.fill:])
					out[at] = string(line)
					restored = append(restored, sg.raw[sg.fill:])
				}
			}
		}
		gone, added = gone[:0], added[:0]
	}
	for _, o := range ops {
		switch o.Kind {
		case diff.Equal:
			flush()
			if masked[o.Old] {
				out[o.New] = rl[o.Old].Text
				for _, sg := range segments([]byte(sl[o.Old].Text), []byte(rl[o.Old].Text)) {
					restored = append(restored, sg.raw[sg.fill:])
				}
			}
		case diff.Delete:
			if masked[o.Old] {
				gone = append(gone, o.Old)
			}
		case diff.Insert:
			added = append(added, o.New)
		}
	}
	flush()
	var b bytes.Buffer
	b.Grow(len(next))
	b.WriteString(bom)
	for j, l := range nl {
		b.WriteString(out[j])
		b.WriteString(l.EOL)
	}
	res := b.Bytes()
	if any {
		// This file's own masks, anywhere they still are: a mask's fill
		// (its run of fill characters, whatever comes before it) found
		// more often than the file held it is a mask written as a value.
		for i := range sl {
			if !masked[i] {
				continue
			}
			for _, sg := range segments([]byte(sl[i].Text), []byte(rl[i].Text)) {
				fill := sg.key[sg.fill:]
				if bytes.Count(res, fill) > bytes.Count(raw, fill) {
					ln, col := lineCol(res, bytes.Index(res, fill))
					return nil, nil, maskedSpan(refusal.MaskAltered, name, ln, col)
				}
			}
		}
	}
	return res, restored, maskShaped(name, res)
}

// keptMasked refuses a write whose result would show a secret it put back
// (restored) unmasked: the agent changed what stands around a mask so that
// the detector no longer takes it for a credential (a letter glued to it,
// its name changed), or made the file something other than text, whose
// bytes the mount serves as they are. out is the content to be written,
// in the file's own encoding.
func (s *Service) keptMasked(name string, out []byte, restored [][]byte) error {
	if len(restored) == 0 {
		return nil
	}
	head := out[:min(len(out), s.Guard.Policy().Limits.SampleBytes)]
	if c := sniff.Classify(head, len(head) == len(out)); c.Class != sniff.Text && c.Class != sniff.Encoding {
		return maskedSpan(refusal.SecretExposed, name, 0, 0)
	}
	shown, ok := s.admit().ShownBytes(s.Guard.Policy(), out)
	if !ok {
		return maskedSpan(refusal.SecretExposed, name, 0, 0)
	}
	if text, err := charset.Decode(shown, charset.Detect(shown)); err == nil {
		shown = text
	}
	for _, secret := range restored {
		if k := bytes.Index(shown, secret); k >= 0 {
			ln, col := lineCol(shown, k)
			return maskedSpan(refusal.SecretExposed, name, ln, col)
		}
	}
	return nil
}

// matchUnique is an edit script for two versions too far apart to diff:
// an old line whose text appears exactly once in each is equal to that new
// line; everything else is deleted and inserted.
func matchUnique(old, cur []string) []diff.Op {
	count := func(ls []string) map[string]int {
		m := make(map[string]int, len(ls))
		for _, l := range ls {
			m[l]++
		}
		return m
	}
	co, cn := count(old), count(cur)
	where := make(map[string]int, len(cur))
	for j, l := range cur {
		where[l] = j
	}
	var ops []diff.Op
	for i, l := range old {
		if co[l] == 1 && cn[l] == 1 {
			ops = append(ops, diff.Op{Kind: diff.Equal, Old: i, New: where[l]})
		} else {
			ops = append(ops, diff.Op{Kind: diff.Delete, Old: i})
		}
	}
	for j, l := range cur {
		if !(co[l] == 1 && cn[l] == 1) {
			ops = append(ops, diff.Op{Kind: diff.Insert, New: j})
		}
	}
	return ops
}

// segments are the masked spans of one shown line against its raw text:
// each maximal run of bytes where they differ, runs joined across fill
// bytes the secret itself held, keyed with up to keyContext bytes before it.
func segments(shown, raw []byte) []segment {
	var out []segment
	for i := 0; i < len(shown); {
		if shown[i] == raw[i] {
			i++
			continue
		}
		j := i
		for j < len(shown) && (shown[j] != raw[j] || shown[j] == sniff.Fill) {
			j++
		}
		// Trailing fill equal in both was the secret's own: keep it in.
		from := max(0, i-keyContext)
		out = append(out, segment{key: shown[from:j], raw: raw[from:j], fill: i - from})
		i = j
	}
	return out
}

// maskShaped refuses content holding a run of fill characters that reads
// as a mask: maskRun or more, right after a token's character (a family's
// public prefix: ghp_, xoxb-, eyJ) or after '=' or ':' (a connection
// string's value, a URL's password). A run after a space, a quote, '/' or
// '*' is prose, a comment rule or a placeholder, not a mask.
func maskShaped(name string, b []byte) error {
	for i := 0; i < len(b); {
		k := bytes.IndexByte(b[i:], sniff.Fill)
		if k < 0 {
			return nil
		}
		at := i + k
		j := at
		for j < len(b) && b[j] == sniff.Fill {
			j++
		}
		if j-at >= maskRun && at > 0 && tokenByte(b[at-1]) {
			ln, col := lineCol(b, at)
			return maskedSpan(refusal.MaskWritten, name, ln, col)
		}
		i = j
	}
	return nil
}

func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == '=' || c == ':'
}

// lineCol is the 1-based line and byte column of offset at in b.
func lineCol(b []byte, at int) (int, int) {
	ln := 1 + bytes.Count(b[:at], []byte("\n"))
	return ln, at - (bytes.LastIndexByte(b[:at], '\n') + 1) + 1
}

func maskedSpan(reason refusal.Reason, name string, line, col int) error {
	return refusal.Of(reason, refusal.OpWrite, name, refusal.Facts{Line: int64(line), At: int64(col)})
}

// texts is a version's text as it is and as it was shown.
type texts struct{ raw, shown []byte }

// maskedText decodes raw, a whole version, and the same version with masks
// applied: both UTF-8 text, line for line alike.
func maskedText(name string, raw []byte, masks []sniff.Mask) (texts, error) {
	enc := charset.Detect(raw)
	text, err := charset.Decode(raw, enc)
	if err != nil {
		return texts{}, refusal.Of(refusal.EncodingFailed, refusal.OpEdit, name, refusal.Facts{Detail: err.Error()})
	}
	if len(masks) == 0 {
		return texts{text, text}, nil
	}
	m := make([]byte, len(raw))
	copy(m, raw)
	sniff.ApplyMasks(masks, m, 0)
	shown, err := charset.Decode(m, enc)
	if err != nil {
		return texts{}, refusal.Of(refusal.EncodingFailed, refusal.OpEdit, name, refusal.Facts{Detail: err.Error()})
	}
	return texts{text, shown}, nil
}

// restoreWrite is a whole-content write to f, whose version has masks:
// the content is read whole (as an edit reads the file), the secrets are
// put back where their masks came back unchanged, and the result is
// written in the file's own encoding.
func (s *Service) restoreWrite(f *roots.File, masks []sniff.Mask, content io.Reader) (io.Reader, *edited, error) {
	raw, err := wholeText(f)
	if err != nil {
		return nil, nil, err
	}
	m, err := maskedText(f.Shown, raw, masks)
	if err != nil {
		return nil, nil, err
	}
	next, err := io.ReadAll(io.LimitReader(content, maxEdit+1))
	if err != nil {
		return nil, nil, writeErr(f.Shown, err)
	}
	if len(next) > maxEdit {
		return nil, nil, refusal.Of(refusal.MasksTooLarge, refusal.OpWrite, f.Shown, refusal.Facts{Limit: maxEdit})
	}
	enc := charset.Detect(raw)
	if sent := charset.Detect(next); sent != charset.UTF8 {
		// Sent in an encoding of its own: compared as its text.
		if next, err = charset.Decode(next, sent); err != nil {
			return nil, nil, refusal.Of(refusal.EncodingFailed, refusal.OpWrite, f.Shown, refusal.Facts{Detail: err.Error()})
		}
	}
	out, restored, err := restore(f.Shown, m.raw, m.shown, next)
	if err != nil {
		return nil, nil, err
	}
	if enc != charset.UTF8 {
		if out, err = charset.Encode(bytes.TrimPrefix(out, []byte("\xef\xbb\xbf")), enc); err != nil {
			return nil, nil, err
		}
	}
	if err := s.keptMasked(f.Shown, out, restored); err != nil {
		return nil, nil, err
	}
	return bytes.NewReader(out), nil, nil
}

// unmasked passes content through, failing the read (and so the write)
// where it holds something mask-shaped (see maskShaped): a mask carried
// in from another file would replace nothing, but is never a value to
// write. The check spans reads: a run split across them is still one run.
func unmasked(name string, content io.Reader) io.Reader {
	return &maskCheck{name: name, r: content}
}

type maskCheck struct {
	name  string
	r     io.Reader
	prev  byte // the byte before the current run of fill
	run   int  // fill bytes in the current run
	lines int  // newlines before off, for the message
	col   int
}

func (c *maskCheck) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for _, b := range p[:n] {
		if b == sniff.Fill {
			c.run++
			if c.run == maskRun && tokenByte(c.prev) {
				return 0, maskedSpan(refusal.MaskWritten, c.name, c.lines+1, c.col-maskRun+2)
			}
		} else {
			c.run = 0
			c.prev = b
		}
		if b == '\n' {
			c.lines, c.col = c.lines+1, 0
		} else {
			c.col++
		}
	}
	return n, err
}
