package read

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// A notebook is read as a stream of JSON, once, in bounded memory: the
// decoder keeps only what a window shows (each string up to the cap its
// caller gives, the rest counted and dropped), never the document's tree.
// Whatever the file holds — a million empty outputs, one output of 50 MiB,
// nesting a million deep — a read of it holds at most nbChunk bytes of the
// file, the captured text of one window, and maxNBDepth levels of nesting.

// nbChunk is how much of the file is read at a time.
const nbChunk = 64 << 10

// maxNBDepth bounds nesting: nbformat needs a handful of levels; deeper is
// not a notebook fsguard shows as cells.
const maxNBDepth = 64

// errNBSyntax is malformed JSON; the notebook is then shown as text.
var errNBSyntax = errors.New("not valid JSON")

// nbStream is a notebook's bytes read once from the start: it hashes the
// file's own bytes (the contentId), checks they are UTF-8, and gives the
// decoder the bytes with credentials masked.
type nbStream struct {
	r     io.ReaderAt
	masks []sniff.Mask
	h     hash.Hash
	off   int64 // file offset of buf's end
	buf   []byte
	pos   int
	eof   bool
	err   error // a read error (not EOF)
	carry []byte
	bad   bool // not UTF-8
}

func newNBStream(r io.ReaderAt, masks []sniff.Mask) *nbStream {
	return &nbStream{r: r, masks: masks, h: sha256.New(), buf: make([]byte, 0, nbChunk)}
}

// fill reads the next chunk; false at the end of the file or on an error.
func (s *nbStream) fill() bool {
	if s.eof || s.err != nil {
		return false
	}
	b := s.buf[:nbChunk]
	n, err := s.r.ReadAt(b, s.off)
	b = b[:n]
	s.h.Write(b)
	s.checkUTF8(b)
	sniff.ApplyMasks(s.masks, b, s.off)
	s.off += int64(n)
	s.buf, s.pos = b, 0
	switch {
	case err == io.EOF:
		s.eof = true
		if len(s.carry) > 0 {
			s.bad = true
		}
	case err != nil:
		s.err = err
	}
	return n > 0
}

// checkUTF8 checks b, the next bytes of the file, for valid UTF-8; a
// sequence cut at b's end is completed from the next chunk.
func (s *nbStream) checkUTF8(b []byte) {
	if s.bad || len(b) == 0 {
		return
	}
	if len(s.carry) > 0 {
		take := min(utf8.UTFMax-len(s.carry), len(b))
		seq := append(s.carry, b[:take]...)
		if !utf8.FullRune(seq) {
			s.carry = seq
			return
		}
		r, size := utf8.DecodeRune(seq)
		if r == utf8.RuneError && size <= 1 {
			s.bad = true
			return
		}
		b = b[size-len(s.carry):]
		s.carry = nil
	}
	cut := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				cut = i
			}
			break
		}
	}
	if !utf8.Valid(b[:cut]) {
		s.bad = true
		return
	}
	s.carry = append(s.carry[:0:0], b[cut:]...)
}

// peek is the next byte, without consuming it.
func (s *nbStream) peek() (byte, bool) {
	if s.pos >= len(s.buf) && !s.fill() {
		return 0, false
	}
	return s.buf[s.pos], true
}

func (s *nbStream) next() (byte, bool) {
	c, ok := s.peek()
	if ok {
		s.pos++
	}
	return c, ok
}

// drain reads the rest of the file, for its hash; what follows the
// document may only be white space.
func (s *nbStream) drain() error {
	for {
		for ; s.pos < len(s.buf); s.pos++ {
			if !isSpace(s.buf[s.pos]) {
				return errNBSyntax
			}
		}
		if !s.fill() {
			return s.err
		}
	}
}

// total is the number of bytes read.
func (s *nbStream) total() int64 { return s.off }

func (s *nbStream) sum() [sha256.Size]byte { return [sha256.Size]byte(s.h.Sum(nil)) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// nbDecoder decodes the JSON of a notebook from a stream.
type nbDecoder struct {
	s     *nbStream
	depth int
}

func (d *nbDecoder) fail() error {
	if d.s.err != nil {
		return d.s.err
	}
	return errNBSyntax
}

// ws skips white space and returns the next byte, unconsumed.
func (d *nbDecoder) ws() (byte, error) {
	for {
		c, ok := d.s.peek()
		if !ok {
			return 0, d.fail()
		}
		if !isSpace(c) {
			return c, nil
		}
		d.s.pos++
	}
}

func (d *nbDecoder) expect(want byte) error {
	c, err := d.ws()
	if err != nil {
		return err
	}
	if c != want {
		return errNBSyntax
	}
	d.s.pos++
	return nil
}

// enter and leave count nesting.
func (d *nbDecoder) enter() error {
	if d.depth++; d.depth > maxNBDepth {
		return fmt.Errorf("nested deeper than %d levels", maxNBDepth)
	}
	return nil
}

func (d *nbDecoder) leave() { d.depth-- }

// object calls field for each member of an object; field must consume the
// member's value. Keys are kept up to 64 bytes (longer ones match nothing
// nbformat names).
func (d *nbDecoder) object(field func(key string) error) error {
	return d.container('{', '}', func(int) error {
		var key nbText
		if err := d.str(&key, 64); err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		return field(key.s)
	})
}

// array calls elem for each element of an array; elem must consume it.
func (d *nbDecoder) array(elem func(i int) error) error {
	return d.container('[', ']', elem)
}

// container reads an object or an array, from open to close, one nesting
// level deeper, calling each for every member or element.
func (d *nbDecoder) container(open, close byte, each func(i int) error) error {
	if err := d.expect(open); err != nil {
		return err
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	if c, err := d.ws(); err != nil {
		return err
	} else if c == close {
		d.s.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := each(i); err != nil {
			return err
		}
		c, err := d.ws()
		if err != nil {
			return err
		}
		d.s.pos++
		switch c {
		case ',':
		case close:
			return nil
		default:
			return errNBSyntax
		}
	}
}

// nbText is text decoded from the notebook: at most a cap of it, and what
// the whole held (bytes, line ends), so what was cut can be described.
type nbText struct {
	s     string
	b     strings.Builder
	cut   bool  // more was there than was kept
	size  int64 // bytes of the whole text
	ends  int64 // '\n's in the whole text
	lastN bool  // the whole text ends with '\n'
}

// add appends decoded bytes, keeping at most keep bytes in all.
func (t *nbText) add(p []byte, keep int) {
	t.size += int64(len(p))
	for _, c := range p {
		if c == '\n' {
			t.ends++
		}
	}
	if len(p) > 0 {
		t.lastN = p[len(p)-1] == '\n'
	}
	if room := keep - t.b.Len(); room < len(p) {
		t.cut = true
		p = p[:max(room, 0)]
	}
	t.b.Write(p)
}

func (t *nbText) done() { t.s = t.b.String() }

// lines is the number of lines in the whole text.
func (t *nbText) lines() int64 {
	if t.size == 0 {
		return 0
	}
	if t.lastN {
		return t.ends
	}
	return t.ends + 1
}

// str decodes a JSON string into t, keeping at most keep bytes of it.
func (d *nbDecoder) str(t *nbText, keep int) error {
	defer t.done()
	if err := d.expect('"'); err != nil {
		return err
	}
	s := d.s
	for {
		if s.pos >= len(s.buf) && !s.fill() {
			return d.fail()
		}
		// The run of plain bytes up to a quote, a backslash or a control.
		run := s.buf[s.pos:]
		i := 0
		for i < len(run) && run[i] != '"' && run[i] != '\\' && run[i] >= 0x20 {
			i++
		}
		t.add(run[:i], keep)
		s.pos += i
		if i == len(run) {
			continue
		}
		c := run[i]
		s.pos++
		switch {
		case c == '"':
			return nil
		case c < 0x20:
			return errNBSyntax
		}
		e, ok := s.next()
		if !ok {
			return d.fail()
		}
		var r rune
		switch e {
		case '"', '\\', '/':
			r = rune(e)
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			u, err := d.hex4()
			if err != nil {
				return err
			}
			r = rune(u)
			if utf16.IsSurrogate(r) {
				r = utf8.RuneError
				if c, ok := s.peek(); ok && c == '\\' {
					s.pos++
					if c, ok := s.next(); !ok || c != 'u' {
						return errNBSyntax
					}
					lo, err := d.hex4()
					if err != nil {
						return err
					}
					r = utf16.DecodeRune(rune(u), rune(lo))
				}
			}
		default:
			return errNBSyntax
		}
		var enc [utf8.UTFMax]byte
		t.add(enc[:utf8.EncodeRune(enc[:], r)], keep)
	}
}

func (d *nbDecoder) hex4() (uint16, error) {
	var h [4]byte
	for i := range h {
		c, ok := d.s.next()
		if !ok {
			return 0, d.fail()
		}
		h[i] = c
	}
	v, err := strconv.ParseUint(string(h[:]), 16, 16)
	if err != nil {
		return 0, errNBSyntax
	}
	return uint16(v), nil
}

// text decodes nbformat's multiline string (a string, or a list of
// strings joined) into t, keeping at most keep bytes.
func (d *nbDecoder) text(t *nbText, keep int) error {
	c, err := d.ws()
	if err != nil {
		return err
	}
	if c == '"' {
		return d.str(t, keep)
	}
	if c != '[' {
		return errors.New("a multiline string is neither a string nor a list of strings")
	}
	return d.array(func(int) error { return d.str(t, keep) })
}

// lines decodes a list of strings into t, one line each, keeping at most
// keep bytes.
func (d *nbDecoder) lines(t *nbText, keep int) error {
	first := true
	return d.array(func(int) error {
		if !first {
			t.add([]byte{'\n'}, keep)
		}
		first = false
		return d.str(t, keep)
	})
}

// scalar reads a number, true, false or null, and returns its text (at
// most 32 bytes of it: longer is not a number nbformat uses).
func (d *nbDecoder) scalar() (string, error) {
	if _, err := d.ws(); err != nil {
		return "", err
	}
	var b []byte
	for {
		c, ok := d.s.peek()
		if !ok || !(c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == 'E') {
			break
		}
		d.s.pos++
		if len(b) > 32 {
			return "", errNBSyntax
		}
		b = append(b, c)
	}
	s := string(b)
	switch s {
	case "true", "false", "null":
		return s, nil
	}
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return "", errNBSyntax
	}
	return s, nil
}

// skip consumes one value of any kind, checking its syntax, and returns
// the bytes it took in the file.
func (d *nbDecoder) skip() (int64, error) {
	c, err := d.ws()
	if err != nil {
		return 0, err
	}
	start := d.s.off - int64(len(d.s.buf)) + int64(d.s.pos)
	switch c {
	case '{':
		err = d.object(func(string) error { _, err := d.skip(); return err })
	case '[':
		err = d.array(func(int) error { _, err := d.skip(); return err })
	case '"':
		var t nbText
		err = d.str(&t, 0)
	default:
		_, err = d.scalar()
	}
	return d.s.off - int64(len(d.s.buf)) + int64(d.s.pos) - start, err
}

// skipErr is skip for a caller that needs only its error.
func (d *nbDecoder) skipErr() error {
	_, err := d.skip()
	return err
}

// objectOr decodes an object member by member, or skips a value of
// another kind (metadata nbformat does not constrain).
func (d *nbDecoder) objectOr(field func(key string) error) error {
	if c, err := d.ws(); err != nil {
		return err
	} else if c != '{' {
		return d.skipErr()
	}
	return d.object(field)
}

// strOr decodes a string into t, or skips a value of another kind.
func (d *nbDecoder) strOr(t *nbText, keep int) error {
	if c, err := d.ws(); err != nil {
		return err
	} else if c != '"' {
		return d.skipErr()
	}
	return d.str(t, keep)
}
