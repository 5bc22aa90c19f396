package sniff

import "bytes"

// Credentials written with escapes — a webhook URL behind JSON's escaped
// slashes (https:\/\/hooks.slack.com\/services\/...), a token with a
// letter as \u0067, \x67, &#103; or %67 (URL-encoded, '+' for a space in
// a form) — are found by decoding the text
// around the escapes and looking into it with the same rules; the mask
// covers the escaped bytes the credential was written with, keeping the
// escaped form of its public prefix, so it has the length and shape of any
// other.
//
// The escapes of a text are taken in blocks of escBlock code units (from
// the file's start, so every scan of a file cuts them alike): the first
// escape of each block leads, and its window — escBack units before it,
// through escAhead units past its block's end — is decoded once (nested
// escapes, \\u0067, up to escRounds times). Every escape lies in one
// block, every block's escapes in its leader's window, so a credential
// holding an escape is decoded whole from the first escape it holds if it
// is no longer than escBack before that escape and escAhead after it.
// Windows cost at most escBack+escBlock+escAhead units decoded per block
// holding an escape: linear in the text, whatever it holds (a line of a
// gigabyte of backslashes, escapes of escapes).
const (
	escBlock  = 640
	escBack   = 128
	escAhead  = 512
	escRounds = 3
)

// A chunk holds credBack units before the part it owns: a leader's block
// starts at most escBlock-1 before it and its window escBack before it;
// its window ends escBlock+escAhead after it, within the credAhead after
// the owned part.
var _ = [1]int{}[max(0, escBlock-credBack, escBack-credBack, escBlock+escAhead-credAhead)]

// escapeAt reports whether c[i:] starts an escape a credential may be
// written with.
func escapeAt(c []byte, i int) bool {
	if i+1 >= len(c) {
		return false
	}
	switch {
	case c[i] == '\\':
		switch c[i+1] {
		case '/':
			return true
		case 'u':
			return hexRun(c, i+2, 4)
		case 'x':
			return hexRun(c, i+2, 2)
		}
	case c[i] == '&' && c[i+1] == '#':
		return i+2 < len(c) && (isDigit(c[i+2]) || (c[i+2] == 'x' || c[i+2] == 'X') && hexRun(c, i+3, 1))
	case c[i] == '%':
		return hexRun(c, i+1, 2)
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func hexNibble(c byte) int {
	switch {
	case isDigit(c):
		return int(c - '0')
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return int(c|0x20-'a') + 10
	}
	return -1
}

// hexRun reports whether c[i:i+n] are hex digits.
func hexRun(c []byte, i, n int) bool {
	if i+n > len(c) {
		return false
	}
	for k := range n {
		if hexNibble(c[i+k]) < 0 {
			return false
		}
	}
	return true
}

// escapes walks the escapes of c[:to) in order: the next backslash, the
// next ampersand and the next percent sign are each looked for once, so a
// walk is linear in the text whatever it holds.
type escapes struct {
	c               []byte
	to              int
	bs, amp, pct, i int // the next '\\', '&' and '%' at or after i (to: none)
}

func newEscapes(c []byte, from, to int) *escapes {
	e := &escapes{c: c, to: to, i: from}
	e.bs, e.amp, e.pct = e.find('\\', from), e.find('&', from), e.find('%', from)
	return e
}

func (e *escapes) find(b byte, from int) int {
	if from >= e.to {
		return e.to
	}
	if k := bytes.IndexByte(e.c[from:e.to], b); k >= 0 {
		return from + k
	}
	return e.to
}

// next is the next escape (-1: none).
func (e *escapes) next() int {
	for {
		q := min(e.bs, e.amp, e.pct)
		if q >= e.to {
			return -1
		}
		switch q {
		case e.bs:
			e.bs = e.find('\\', q+1)
		case e.amp:
			e.amp = e.find('&', q+1)
		default:
			e.pct = e.find('%', q+1)
		}
		if escapeAt(e.c, q) {
			return q
		}
	}
}

// findEscaped finds, with inner, the credentials written with escapes whose
// leading escape lies in c[lo:hi]; c's unit 0 is the file's unit abs.
func findEscaped(inner *Detector, c []byte, lo, hi int, abs int64, spans []span) []span {
	block := func(q int) int64 { return (abs + int64(q)) / escBlock }
	last := int64(-1)
	var sc scratch
	from := max(0, lo-escBlock)
	es := newEscapes(c, from, hi)
	for q := es.next(); q >= 0; q = es.next() {
		b := block(q)
		if b == last {
			continue
		}
		last = b
		if q < lo {
			continue // a block led from before this chunk's part
		}
		end := q + int(escBlock-(abs+int64(q))%escBlock)
		ws, we := max(0, q-escBack), min(len(c), end+escAhead)
		spans = sc.decodeWindow(inner, c, ws, we, spans)
	}
	return spans
}

// scratch holds a scan's decoding buffers, reused window to window.
type scratch struct {
	b    [2][]byte
	pos  [2][]int32
	init []int32
}

// decodeWindow decodes c[ws:we], looks into it with inner, and appends
// what it finds as spans of c. A further round decodes only what the
// last one left escaped.
func (sc *scratch) decodeWindow(inner *Detector, c []byte, ws, we int, spans []span) []span {
	sc.init = sc.init[:0]
	for i := ws; i <= we; i++ {
		sc.init = append(sc.init, int32(i))
	}
	// A form's '+' is a space, anywhere else a '+' is itself: a window
	// holding both a percent escape and a '+' is decoded both ways.
	forms := 1
	if bytes.IndexByte(c[ws:we], '%') >= 0 && bytes.IndexByte(c[ws:we], '+') >= 0 {
		forms = 2
	}
	for form := range forms {
		dec, pos := c[ws:we], sc.init
		for k := range escRounds {
			var changed bool
			dec, pos, changed = unescape(sc.b[k%2][:0], sc.pos[k%2][:0], dec, pos, form == 1)
			sc.b[k%2], sc.pos[k%2] = dec, pos
			if !changed || newEscapes(dec, 0, len(dec)).next() < 0 {
				break
			}
		}
		for _, m := range inner.chunk(dec, 0, len(dec), 0, 1, false, nil) {
			s, e := int(m.Off), int(m.Off)+m.Len
			spans = append(spans, span{s: int(pos[s]), e: int(pos[e]), keep: int(pos[s+m.Keep] - pos[s]), family: m.Family})
		}
	}
	return spans
}

// unescape decodes one level of escapes in b, whose byte i came from c at
// pos[i] (pos[len(b)]: where b ends), into out, their places into op: JSON's and JavaScript's backslash
// escapes, \xHH, HTML's numeric character references, and URLs' %XX (and
// '+' as a space, when plus). A character beyond ASCII is decoded as 0x80,
// which no credential holds (as narrow does).
//
// out and op are appended to (and returned); b and pos are not changed.
func unescape(out []byte, op []int32, b []byte, pos []int32, plus bool) ([]byte, []int32, bool) {
	changed := false
	for i := 0; i < len(b); {
		r, n := rune(b[i]), 1
		switch {
		case b[i] == '\\' && i+1 < len(b):
			switch c := b[i+1]; c {
			case '/', '\\', '"', '\'':
				r, n = rune(c), 2
			case 'n':
				r, n = '\n', 2
			case 't':
				r, n = '\t', 2
			case 'r':
				r, n = '\r', 2
			case 'u':
				if hexRun(b, i+2, 4) {
					r, n = hexOf(b[i+2:i+6]), 6
				}
			case 'x':
				if hexRun(b, i+2, 2) {
					r, n = hexOf(b[i+2:i+4]), 4
				}
			}
		case b[i] == '&' && i+2 < len(b) && b[i+1] == '#':
			r, n = charRef(b, i)
		case b[i] == '%' && hexRun(b, i+1, 2):
			r, n = hexOf(b[i+1:i+3]), 3
		case b[i] == '+' && plus:
			r, changed = ' ', true
		}
		if n > 1 {
			changed = true
		}
		if r >= 0x80 {
			r = 0x80
		}
		out = append(out, byte(r))
		op = append(op, pos[i])
		i += n
	}
	return out, append(op, pos[len(b)]), changed
}

func hexOf(h []byte) rune {
	var r rune
	for _, c := range h {
		r = r<<4 | rune(hexNibble(c))
	}
	return r
}

// charRef decodes the numeric character reference at b[i:] ("&#103;",
// "&#x67;"; the semicolon may be left out, as browsers allow): the
// character and the bytes it took, or '&' and 1 when there is none.
func charRef(b []byte, i int) (rune, int) {
	j, base := i+2, 10
	if b[j] == 'x' || b[j] == 'X' {
		j, base = j+1, 16
	}
	var r rune
	k := j
	for ; k < len(b) && k-j < 7; k++ {
		v := hexNibble(b[k])
		if v < 0 || v >= base {
			break
		}
		r = r*rune(base) + rune(v)
	}
	if k == j {
		return '&', 1
	}
	if k < len(b) && b[k] == ';' {
		k++
	}
	return r, k - i
}
