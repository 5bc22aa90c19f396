package admit

import (
	"bytes"
	"strconv"
)

// The few PDF objects the stream search needs parsed: a stream's
// dictionary (its object number, which an encrypted PDF's object key is
// made from; its /Length; its /Filter chain and /DecodeParms) and the
// standard security handler's dictionary with the trailer's /ID. A reader
// finds objects through the cross-reference table; the search finds them
// by their "N G obj" headers wherever they are, so a header a table does
// not point to is one more candidate, never a stream missed: every
// candidate is searched. Values are parsed as a reader lexes them
// (strings, names, comments), so a "stream" or an "obj" inside a string
// is not taken for one. Parsing is bounded in depth and in the values it
// returns.

// pdfName is a name object, without its slash, #xx escapes decoded.
type pdfName string

// pdfRef is an indirect reference, N G R.
type pdfRef struct{ num, gen int64 }

// pdfKeyword is a bare keyword (obj, stream, R, endobj, ...).
type pdfKeyword string

// pdfDict is a dictionary; arrays are []any, strings []byte, numbers
// int64 or float64.
type pdfDict map[pdfName]any

// maxPDFDepth bounds how deep dictionaries and arrays nest in a parse.
const maxPDFDepth = 32

func isPDFSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0
}

func isPDFDelim(c byte) bool {
	return bytes.IndexByte([]byte("()<>[]{}/%"), c) >= 0
}

// skipPDFSpace skips white space and comments from i.
func skipPDFSpace(b []byte, i int) int {
	for i < len(b) {
		switch {
		case isPDFSpace(b[i]):
			i++
		case b[i] == '%':
			for i < len(b) && b[i] != '\n' && b[i] != '\r' {
				i++
			}
		default:
			return i
		}
	}
	return i
}

// maxPDFValues bounds the values one parse returns (each is held).
const maxPDFValues = 1 << 20

// pdfValue parses the value at b[i:] (after white space): it returns the
// value and where it ends, ok false when none parses.
func pdfValue(b []byte, i int) (v any, next int, ok bool) {
	p := &pdfParse{b: b, max: maxPDFSmall}
	return p.value(i, 0)
}

// maxPDFSmall bounds the values of a parse of a small object (an
// /Encrypt dictionary, a trailer's /ID).
const maxPDFSmall = 4096

// pdfValueOver is pdfValue, and whether the parse stopped at a bound
// (maxPDFValues, maxPDFDepth).
func pdfValueOver(b []byte, i int) (v any, next int, ok, over bool) {
	p := &pdfParse{b: b, max: maxPDFValues}
	v, next, ok = p.value(i, 0)
	return v, next, ok, p.over
}

// pdfParse is one parse, counting its values.
type pdfParse struct {
	b      []byte
	n, max int
	over   bool
}

func (p *pdfParse) value(i, depth int) (v any, next int, ok bool) {
	b := p.b
	i = skipPDFSpace(b, i)
	if p.n++; p.n > p.max || depth > maxPDFDepth {
		p.over = true
		return nil, i, false
	}
	if i >= len(b) {
		return nil, i, false
	}
	switch c := b[i]; {
	case c == '<' && i+1 < len(b) && b[i+1] == '<':
		d := pdfDict{}
		i += 2
		for {
			i = skipPDFSpace(b, i)
			if i+1 < len(b) && b[i] == '>' && b[i+1] == '>' {
				return d, i + 2, true
			}
			k, n, ok := p.value(i, depth+1)
			name, isName := k.(pdfName)
			if !ok || !isName {
				return nil, n, false
			}
			v, n, ok := p.value(n, depth+1)
			if !ok {
				return nil, n, false
			}
			d[name] = v
			i = n
		}
	case c == '[':
		var a []any
		i++
		for {
			i = skipPDFSpace(b, i)
			if i < len(b) && b[i] == ']' {
				return a, i + 1, true
			}
			v, n, ok := p.value(i, depth+1)
			if !ok {
				return nil, n, false
			}
			a = append(a, v)
			i = n
		}
	case c == '(':
		return pdfLiteral(b, i+1)
	case c == '<':
		var out []byte
		hi, half := byte(0), false
		for i++; i < len(b); i++ {
			c := b[i]
			if c == '>' {
				if half {
					out = append(out, hi<<4)
				}
				return out, i + 1, true
			}
			if isPDFSpace(c) {
				continue
			}
			h, ok := unhex(c)
			if !ok {
				return nil, i, false
			}
			if half {
				out = append(out, hi<<4|h)
			} else {
				hi = h
			}
			half = !half
		}
		return nil, i, false
	case c == '/':
		j := i + 1
		var name []byte
		for ; j < len(b) && !isPDFSpace(b[j]) && !isPDFDelim(b[j]); j++ {
			if b[j] == '#' && j+2 < len(b) {
				if h, ok := unhex(b[j+1]); ok {
					if l, ok := unhex(b[j+2]); ok {
						name = append(name, h<<4|l)
						j += 2
						continue
					}
				}
			}
			name = append(name, b[j])
		}
		return pdfName(name), j, true
	case c == '+' || c == '-' || c == '.' || c >= '0' && c <= '9':
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.') {
			j++
		}
		s := string(b[i:j])
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			f, _ := strconv.ParseFloat(s, 64)
			return f, j, true
		}
		// N G R is a reference.
		if k := skipPDFSpace(b, j); k > j && k < len(b) && b[k] >= '0' && b[k] <= '9' {
			e := k
			for e < len(b) && b[e] >= '0' && b[e] <= '9' {
				e++
			}
			if r := skipPDFSpace(b, e); r > e && r < len(b) && b[r] == 'R' && (r+1 == len(b) || isPDFSpace(b[r+1]) || isPDFDelim(b[r+1])) {
				g, _ := strconv.ParseInt(string(b[k:e]), 10, 64)
				return pdfRef{n, g}, r + 1, true
			}
		}
		return n, j, true
	case isPDFDelim(c):
		return nil, i, false
	default:
		j := i
		for j < len(b) && !isPDFSpace(b[j]) && !isPDFDelim(b[j]) {
			j++
		}
		switch w := string(b[i:j]); w {
		case "true", "false":
			return w == "true", j, true
		case "null":
			return nil, j, true
		default:
			return pdfKeyword(w), j, true
		}
	}
}

// pdfLiteral parses a literal string whose "(" is just before b[i:].
func pdfLiteral(b []byte, i int) (any, int, bool) {
	var out []byte
	for nest := 0; i < len(b); i++ {
		c := b[i]
		switch c {
		case '(':
			nest++
		case ')':
			if nest == 0 {
				return out, i + 1, true
			}
			nest--
		case '\\':
			i++
			if i >= len(b) {
				return nil, i, false
			}
			switch e := b[i]; e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r':
				if i+1 < len(b) && b[i+1] == '\n' {
					i++
				}
				continue
			case '\n':
				continue
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for k := 0; k < 2 && i+1 < len(b) && b[i+1] >= '0' && b[i+1] <= '7'; k++ {
						i++
						v = v*8 + int(b[i]-'0')
					}
					c = byte(v)
				} else {
					c = e
				}
			}
		}
		out = append(out, c)
	}
	return nil, i, false
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// pdfHeader is an object's "N G obj" header: where its value starts
// (after "obj") and the object numbers it may be. A header whose number
// is not at a token's start (a reader that follows its table to the
// middle of the digits reads a shorter number) may be any of the
// numbers its digits end with.
type pdfHeader struct {
	nums []int64
	gen  int64
	at   int
}

// maxPDFHeaders bounds the object headers one PDF's search looks at.
const maxPDFHeaders = 1 << 20

// pdfHeaders finds every object header in b, in order.
func pdfHeaders(b []byte) []pdfHeader {
	var hs []pdfHeader
	for i := 0; len(hs) < maxPDFHeaders; {
		k := bytes.Index(b[i:], []byte("obj"))
		if k < 0 {
			break
		}
		at := i + k
		i = at + 3
		if i < len(b) && !isPDFSpace(b[i]) && !isPDFDelim(b[i]) {
			continue
		}
		// Back over: space, generation digits, space, number digits.
		j := at
		for j > 0 && isPDFSpace(b[j-1]) {
			j--
		}
		ge := j
		for j > 0 && b[j-1] >= '0' && b[j-1] <= '9' && ge-j < 6 {
			j--
		}
		gs := j
		for j > 0 && isPDFSpace(b[j-1]) {
			j--
		}
		if gs == ge || j == gs || j == at {
			continue
		}
		ne := j
		for j > 0 && b[j-1] >= '0' && b[j-1] <= '9' && ne-j < 11 {
			j--
		}
		if j == ne {
			continue
		}
		gen, _ := strconv.ParseInt(string(b[gs:ge]), 10, 64)
		h := pdfHeader{gen: gen, at: i}
		clean := j == 0 || isPDFSpace(b[j-1]) || isPDFDelim(b[j-1])
		for s := j; s < ne; s++ {
			n, _ := strconv.ParseInt(string(b[s:ne]), 10, 64)
			if len(h.nums) == 0 || h.nums[len(h.nums)-1] != n {
				h.nums = append(h.nums, n)
			}
			if clean {
				break
			}
		}
		hs = append(hs, h)
	}
	return hs
}

// pdfStream is one stream object: its numbers, dictionary and body
// candidates (up to its first "endstream", and its /Length's extent when
// that differs).
type pdfStream struct {
	nums   []int64
	gen    int64
	dict   pdfDict
	start  int
	bodies [][]byte
}

// pdfStreamAt is the stream of the object whose header is h in b, whose
// value v parsed up to i: ok false when it is not one. length resolves an
// indirect /Length.
func pdfStreamAt(b []byte, h pdfHeader, v any, i int, length func(pdfRef) (int64, bool)) (st pdfStream, ok bool) {
	d, isDict := v.(pdfDict)
	if !isDict {
		return st, false
	}
	i = skipPDFSpace(b, i)
	if !bytes.HasPrefix(b[i:], []byte("stream")) {
		return st, false
	}
	i += len("stream")
	if i < len(b) && b[i] == '\r' {
		i++
	}
	if i < len(b) && b[i] == '\n' {
		i++
	}
	st = pdfStream{nums: h.nums, gen: h.gen, dict: d, start: i}
	rest := b[i:]
	end := bytes.Index(rest, []byte("endstream"))
	if end < 0 {
		end = len(rest)
	}
	st.bodies = append(st.bodies, rest[:end])
	var n int64 = -1
	switch l := d["Length"].(type) {
	case int64:
		n = l
	case pdfRef:
		if length != nil {
			if v, ok := length(l); ok {
				n = v
			}
		}
	}
	if n >= 0 && n <= int64(len(rest)) && n != int64(end) {
		st.bodies = append(st.bodies, rest[:n])
	}
	return st, true
}

// pdfObjects indexes b's object headers by number, for references.
type pdfObjects struct {
	b   []byte
	hs  []pdfHeader
	idx map[int64][]int
}

func newPDFObjects(b []byte) *pdfObjects {
	o := &pdfObjects{b: b, hs: pdfHeaders(b), idx: map[int64][]int{}}
	for k, h := range o.hs {
		for _, n := range h.nums {
			o.idx[n] = append(o.idx[n], k)
		}
	}
	return o
}

// maxPDFDefinitions bounds the definitions of one object number looked at.
const maxPDFDefinitions = 8

// values are the values object r is defined as, every definition (an
// updated PDF defines an object again), the last first, bounded.
func (o *pdfObjects) values(r pdfRef) []any {
	var vs []any
	ks := o.idx[r.num]
	for k := len(ks) - 1; k >= 0 && len(vs) < maxPDFDefinitions; k-- {
		h := o.hs[ks[k]]
		if h.gen != r.gen {
			continue
		}
		if v, _, ok := pdfValue(o.b, h.at); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// length is an indirect /Length's value: its last definition that is an
// integer (read as one, not parsed: a stream's length is looked up for
// each stream that refers to it).
func (o *pdfObjects) length(r pdfRef) (int64, bool) {
	ks := o.idx[r.num]
	for k, seen := len(ks)-1, 0; k >= 0 && seen < maxPDFDefinitions; k-- {
		h := o.hs[ks[k]]
		if h.gen != r.gen {
			continue
		}
		seen++
		i := skipPDFSpace(o.b, h.at)
		j := i
		for j < len(o.b) && j-i < 19 && o.b[j] >= '0' && o.b[j] <= '9' {
			j++
		}
		if j > i {
			n, err := strconv.ParseInt(string(o.b[i:j]), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
