// Package sniff classifies content: text, binary (with its MIME type),
// image, or text in an encoding fsguard does not serve, from a bounded
// sample; private keys anywhere in the whole content, in PEM and other
// encodings (keys.go, encoded.go); and what packed files (gzip, tar, zip)
// hold (packed.go). It decides from bytes, never from names, so a key file
// renamed notes.txt is still a key.
//
// Text means UTF-8, or UTF-16 or UTF-32 announced by a byte order mark
// (Result.Charset; shown decoded). A UTF-8 byte order mark is accepted (and
// skipped when lines are shown); UTF-16 and UTF-32 without a BOM, and text
// in a legacy 8-bit encoding, are refused as ENCODING rather than shown as
// mojibake.
package sniff

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"unicode/utf8"

	"github.com/fsguard/fsguard/internal/concept/charset"

	"github.com/gabriel-vasile/mimetype"
)

// Class is a content class.
type Class string

const (
	Text       Class = "text"
	Binary     Class = "binary"
	Image      Class = "image"
	PrivateKey Class = "private-key"
	// Encoding is text that is not UTF-8 (UTF-16, Latin-1, ...).
	Encoding Class = "encoding"
)

// Result is a classification.
type Result struct {
	Class Class
	MIME  string
	// BOM is the length of a UTF-8 byte order mark at the start (0 or 3).
	BOM int
	// Charset is the encoding of text that is not UTF-8 (UTF-16 or UTF-32
	// with its BOM): it is shown decoded.
	Charset charset.Encoding
	// BadByte is, for Encoding, the offset of the first byte that is not
	// valid UTF-8 (-1 when the whole sample is an encoding by its BOM).
	BadByte int
	// Masks are the credentials (tokens, passwords) found in the whole
	// file, sorted by Off and not overlapping: a version with masks is
	// served masked, through every door, never raw.
	Masks []Mask
	// Inside, for a packed file (gzip, tar, zip), is what it holds that
	// the view must not serve, or why it could not be checked: the
	// verdict refuses the file whole (see Unpacker).
	Inside *Inside
}

// utf8BOM is the UTF-8 byte order mark.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// images are the image types fsguard describes rather than refusing as
// binary.
var images = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
}

// Classify classifies a sample taken from the start of a file. atEOF says
// the sample is the whole file, so a rune cut at the sample's end is an
// error rather than an artefact of sampling.
func Classify(sample []byte, atEOF bool) Result {
	if HasKey(sample) {
		return Result{Class: PrivateKey, MIME: "application/x-pem-file"}
	}
	if len(sample) == 0 {
		return Result{Class: Text, MIME: "text/plain"}
	}
	if enc := charset.Detect(sample); enc != charset.UTF8 {
		return wideText(sample, atEOF, enc)
	}
	bom := 0
	if bytes.HasPrefix(sample, utf8BOM) {
		bom = len(utf8BOM)
	}
	body := sample[bom:]
	if bytes.IndexByte(body, 0) < 0 {
		if bad := InvalidUTF8(body, atEOF); bad < 0 {
			if mostlyControl(body) {
				// Valid UTF-8 but not text a person wrote: terminal
				// escapes, a binary format without NULs.
				return Result{Class: Binary, MIME: "application/octet-stream"}
			}
			return Result{Class: Text, MIME: "text/plain; charset=utf-8", BOM: bom}
		} else if m := mimetype.Detect(sample); isTextMIME(m) {
			return Result{Class: Encoding, MIME: m.String(), BadByte: bom + bad}
		}
	}
	m := mimetype.Detect(sample)
	if images[m.String()] {
		return Result{Class: Image, MIME: m.String()}
	}
	if isTextMIME(m) {
		// NULs in text: UTF-16/32 without a BOM.
		return Result{Class: Encoding, MIME: m.String(), BadByte: -1}
	}
	return Result{Class: Binary, MIME: m.String()}
}

// wideText classifies a sample of UTF-16 or UTF-32 text with its BOM: text
// when it decodes (a code unit cut by the sample's end aside) to text that
// is not mostly control characters.
func wideText(sample []byte, atEOF bool, enc charset.Encoding) Result {
	mime := "text/plain; charset=" + string(enc)
	text, err := io.ReadAll(charset.NewDecoder(bytes.NewReader(sample), enc))
	var de *charset.Error
	if errors.As(err, &de) && (atEOF || de.Offset+4 < int64(len(sample))) {
		return Result{Class: Encoding, MIME: mime, BadByte: int(de.Offset)}
	}
	if bytes.IndexByte(text, 0) >= 0 || mostlyControl(text) {
		return Result{Class: Binary, MIME: "application/octet-stream"}
	}
	return Result{Class: Text, MIME: mime, BOM: len(enc.BOM()), Charset: enc}
}

// mostlyControl reports whether more than 30% of b's bytes are control
// characters other than the whitespace ones (tab, newline, carriage
// return, form feed, vertical tab).
func mostlyControl(b []byte) bool {
	return countControl(b)*10 > len(b)*3
}

// countControl counts b's bytes that control marks. It runs over every
// byte a listing reads, so it counts eight at a time: each byte's high bit
// is set where it is a control character (below 0x09, 0x0e to 0x1f, or
// 0x7f), exactly, with no carry from one byte into the next.
func countControl(b []byte) int {
	n, i := 0, 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		ws := below(w, 0x0e) &^ below(w, 0x09) // tab, newline, vertical tab, form feed, return
		n += bits.OnesCount64(below(w, 0x20)&^ws | below(w^0x7f*ones, 1))
	}
	for _, c := range b[i:] {
		n += int(control[c])
	}
	return n
}

const ones, highs = 0x0101010101010101, 0x8080808080808080

// below sets the high bit of each byte of w that is below c (1 <= c <=
// 0x80) and clears every other bit: the low seven bits plus 0x80-c carry
// into the high bit exactly when they are at least c, and never beyond it.
func below(w uint64, c uint64) uint64 {
	return ^((w&^highs + (0x80-c)*ones) | w) & highs
}

// control is 1 for the bytes mostlyControl counts.
var control = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = 1
	}
	for _, c := range []byte{'\t', '\n', '\r', '\f', '\v'} {
		t[c] = 0
	}
	t[0x7f] = 1
	return t
}()

func isTextMIME(m *mimetype.MIME) bool {
	for ; m != nil; m = m.Parent() {
		if m.Is("text/plain") {
			return true
		}
	}
	return false
}

// InvalidUTF8 returns the offset of the first byte of b that is not valid
// UTF-8, or -1. Unless atEOF, an incomplete rune at the very end is not an
// error: the next bytes may complete it.
func InvalidUTF8(b []byte, atEOF bool) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			if !atEOF && !utf8.FullRune(b[i:]) {
				return -1
			}
			return i
		}
		i += size
	}
	return -1
}
