// Package charset knows the text encodings fsguard decodes besides UTF-8:
// UTF-16 and UTF-32, little- or big-endian, announced by a byte order mark
// at the start of the file. Without a BOM such text is ambiguous (and
// refused as ENCODING by sniff); with one it is as unambiguous as UTF-8.
//
// Decoding is strict: an unpaired surrogate, a code point beyond U+10FFFF
// or a trailing partial code unit is an error with its byte offset, never a
// replacement character, so what the agent is shown is exactly the file.
package charset

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// Encoding is a text encoding with a BOM; the zero value is UTF-8.
type Encoding string

const (
	UTF8    Encoding = ""
	UTF16LE Encoding = "utf-16le"
	UTF16BE Encoding = "utf-16be"
	UTF32LE Encoding = "utf-32le"
	UTF32BE Encoding = "utf-32be"
)

// boms in the order they must be tested: UTF-32LE's BOM begins with
// UTF-16LE's.
var boms = []struct {
	enc Encoding
	bom []byte
}{
	{UTF32LE, []byte{0xFF, 0xFE, 0x00, 0x00}},
	{UTF32BE, []byte{0x00, 0x00, 0xFE, 0xFF}},
	{UTF16LE, []byte{0xFF, 0xFE}},
	{UTF16BE, []byte{0xFE, 0xFF}},
}

// Detect names the encoding a file's first bytes announce by their BOM
// (UTF8 when none of UTF-16 and UTF-32 is there).
func Detect(head []byte) Encoding {
	for _, b := range boms {
		if bytes.HasPrefix(head, b.bom) {
			return b.enc
		}
	}
	return UTF8
}

// BOM returns the encoding's byte order mark.
func (e Encoding) BOM() []byte {
	for _, b := range boms {
		if b.enc == e {
			return b.bom
		}
	}
	return nil
}

func (e Encoding) unit() int {
	switch e {
	case UTF32LE, UTF32BE:
		return 4
	case UTF16LE, UTF16BE:
		return 2
	}
	return 1
}

// Error is a decoding failure at a byte offset of the encoded file.
type Error struct {
	Enc    Encoding
	Offset int64
	Why    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("invalid %s at byte %d (%s)", e.Enc, e.Offset, e.Why)
}

// NewDecoder returns a reader of r's text as UTF-8, without the BOM. r
// must start at the file's first byte. A malformed sequence ends the
// stream with an *Error.
func NewDecoder(r io.Reader, e Encoding) io.Reader {
	return &decoder{r: bufio.NewReaderSize(r, 64<<10), enc: e}
}

type decoder struct {
	r       *bufio.Reader
	enc     Encoding
	off     int64 // bytes of the encoded stream consumed
	started bool
	pending []byte // UTF-8 not yet returned
	err     error
}

func (d *decoder) Read(p []byte) (int, error) {
	for len(d.pending) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		d.fill()
	}
	n := copy(p, d.pending)
	d.pending = d.pending[n:]
	return n, nil
}

// fill decodes up to a few thousand characters into pending.
func (d *decoder) fill() {
	u := d.enc.unit()
	if !d.started {
		d.started = true
		bom := d.enc.BOM()
		head, err := d.r.Peek(len(bom))
		if err != nil || !bytes.Equal(head, bom) {
			d.err = &Error{d.enc, 0, "no byte order mark"}
			return
		}
		d.r.Discard(len(bom))
		d.off = int64(len(bom))
	}
	out := d.pending[:0]
	var unit [4]byte
	for i := 0; i < 4096; i++ {
		n, err := io.ReadFull(d.r, unit[:u])
		if err == io.EOF {
			d.err = io.EOF
			break
		}
		if err == io.ErrUnexpectedEOF {
			d.err = &Error{d.enc, d.off, "the file ends inside a code unit"}
			break
		}
		if err != nil {
			d.err = err
			break
		}
		at := d.off
		d.off += int64(n)
		var r rune
		switch d.enc {
		case UTF32LE:
			r = rune(uint32(unit[0]) | uint32(unit[1])<<8 | uint32(unit[2])<<16 | uint32(unit[3])<<24)
		case UTF32BE:
			r = rune(uint32(unit[3]) | uint32(unit[2])<<8 | uint32(unit[1])<<16 | uint32(unit[0])<<24)
		default:
			c := d.u16(unit[:2])
			if utf16.IsSurrogate(rune(c)) {
				if c >= 0xDC00 {
					d.err = &Error{d.enc, at, "a low surrogate without a high one"}
					break
				}
				if _, err := io.ReadFull(d.r, unit[2:4]); err != nil {
					d.err = &Error{d.enc, at, "a high surrogate at the end of the file"}
					break
				}
				d.off += 2
				r = utf16.DecodeRune(rune(c), rune(d.u16(unit[2:4])))
				if r == utf8.RuneError {
					d.err = &Error{d.enc, at, "a high surrogate without a low one"}
					break
				}
			} else {
				r = rune(c)
			}
		}
		if d.err != nil {
			break
		}
		if r < 0 || r > utf8.MaxRune || (r >= 0xD800 && r <= 0xDFFF) {
			d.err = &Error{d.enc, at, "not a Unicode code point"}
			break
		}
		out = utf8.AppendRune(out, r)
	}
	d.pending = out
}

func (d *decoder) u16(b []byte) uint16 {
	if d.enc == UTF16BE {
		return uint16(b[0])<<8 | uint16(b[1])
	}
	return uint16(b[0]) | uint16(b[1])<<8
}

// Decode decodes a whole encoded file (with its BOM) to UTF-8.
func Decode(data []byte, e Encoding) ([]byte, error) {
	if e == UTF8 {
		return data, nil
	}
	return io.ReadAll(NewDecoder(bytes.NewReader(data), e))
}

// Encode encodes UTF-8 text in e, with e's BOM first. Text that is not
// valid UTF-8 cannot be encoded.
func Encode(text []byte, e Encoding) ([]byte, error) {
	if e == UTF8 {
		return text, nil
	}
	if !utf8.Valid(text) {
		return nil, errors.New("the text is not valid UTF-8")
	}
	out := append([]byte{}, e.BOM()...)
	for _, r := range string(text) {
		switch e {
		case UTF32LE:
			out = append(out, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
		case UTF32BE:
			out = append(out, byte(r>>24), byte(r>>16), byte(r>>8), byte(r))
		default:
			units := []uint16{uint16(r)}
			if r >= 0x10000 {
				a, b := utf16.EncodeRune(r)
				units = []uint16{uint16(a), uint16(b)}
			}
			for _, c := range units {
				if e == UTF16BE {
					out = append(out, byte(c>>8), byte(c))
				} else {
					out = append(out, byte(c), byte(c>>8))
				}
			}
		}
	}
	return out, nil
}

// Reader decodes a file's bytes as e (UTF-8: passes them through) while
// hashing and counting the file's own bytes: a scan of the text it
// returns sees lines, and the sum it reports names the file.
type Reader struct {
	io.Reader
	enc  Encoding
	hash hash.Hash
	n    int64
}

// NewReader returns a Reader of r, which must start at the file's first
// byte.
func NewReader(r io.Reader, e Encoding) *Reader {
	if e == UTF8 {
		return &Reader{Reader: r}
	}
	cr := &Reader{enc: e, hash: sha256.New()}
	cr.Reader = NewDecoder(io.TeeReader(r, cr), e)
	return cr
}

// Write takes the file's bytes as the decoder reads them.
func (r *Reader) Write(p []byte) (int, error) {
	r.hash.Write(p)
	r.n += int64(len(p))
	return len(p), nil
}

// Settle makes what a scan of the decoded text found describe the file:
// sum and size become the file's bytes' (read to EOF). For UTF-8 text
// they already are, and are left alone.
func (r *Reader) Settle(sum *[sha256.Size]byte, size *int64) {
	if r.enc == UTF8 {
		return
	}
	copy(sum[:], r.hash.Sum(nil))
	*size = r.n
}

// encoder is NewEncoder's reader.
type encoder struct {
	r     io.Reader
	enc   Encoding
	carry []byte // the start of a rune split across reads
	out   []byte // encoded, not yet returned
	in    []byte
	off   int64 // text bytes consumed before carry
	err   error
}

// NewEncoder returns a reader of r's UTF-8 text encoded in e, e's BOM
// first, as Encode would make it of the whole text, in memory bounded
// whatever r's length. Text that is not valid UTF-8 fails the read with
// an *Error naming where.
func NewEncoder(r io.Reader, e Encoding) io.Reader {
	if e == UTF8 {
		return r
	}
	return &encoder{r: r, enc: e, out: append([]byte{}, e.BOM()...), in: make([]byte, 32<<10)}
}

func (d *encoder) Read(p []byte) (int, error) {
	for len(d.out) == 0 && d.err == nil {
		n, err := d.r.Read(d.in[len(d.carry):])
		copy(d.in, d.carry)
		text := d.in[:len(d.carry)+n]
		// Encode whole runes; keep a rune the read split for the next.
		whole := len(text)
		if err == nil {
			for i := len(text) - 1; i >= 0 && i >= len(text)-utf8.UTFMax; i-- {
				if utf8.RuneStart(text[i]) {
					if !utf8.FullRune(text[i:]) {
						whole = i
					}
					break
				}
			}
		}
		if !utf8.Valid(text[:whole]) || (err != nil && err != io.EOF) {
			if err == nil || err == io.EOF {
				at := d.off + int64(len(text[:whole]))
				for i := 0; i < whole; {
					r, size := utf8.DecodeRune(text[i:whole])
					if r == utf8.RuneError && size <= 1 {
						at = d.off + int64(i)
						break
					}
					i += size
				}
				err = &Error{d.enc, at, "the text is not valid UTF-8"}
			}
			d.err = err
			break
		}
		enc, _ := Encode(text[:whole], d.enc)
		d.out = enc[len(d.enc.BOM()):]
		d.off += int64(whole)
		d.carry = append(d.carry[:0], text[whole:]...)
		if err != nil {
			d.err = err
		}
	}
	n := copy(p, d.out)
	d.out = d.out[n:]
	if n > 0 {
		return n, nil
	}
	return 0, d.err
}
