package charset

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	text := []byte("héllo\r\nwörld 𝄞 ✓\n\tend")
	for _, e := range []Encoding{UTF16LE, UTF16BE, UTF32LE, UTF32BE} {
		enc, err := Encode(text, e)
		if err != nil {
			t.Fatal(err)
		}
		if Detect(enc) != e {
			t.Errorf("%s: detected as %q", e, Detect(enc))
		}
		// One byte at a time: a code unit or a surrogate pair split across
		// reads decodes the same.
		got, err := io.ReadAll(NewDecoder(iotest.OneByteReader(bytes.NewReader(enc)), e))
		if err != nil || !bytes.Equal(got, text) {
			t.Errorf("%s: decoded %q, %v; want %q", e, got, err, text)
		}
	}
	if Detect([]byte("plain")) != UTF8 || Detect([]byte{0xEF, 0xBB, 0xBF, 'a'}) != UTF8 {
		t.Error("UTF-8 detected as something else")
	}
}

func TestMalformedIsAnErrorWithItsOffset(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		data []byte
		enc  Encoding
		at   int64
	}{
		{"lone low surrogate", []byte{0xFF, 0xFE, 'a', 0, 0x00, 0xDC}, UTF16LE, 4},
		{"high surrogate then a letter", []byte{0xFE, 0xFF, 0xD8, 0x00, 0x00, 'a'}, UTF16BE, 2},
		{"odd length", []byte{0xFF, 0xFE, 'a', 0, 'b'}, UTF16LE, 4},
		{"beyond U+10FFFF", []byte{0xFF, 0xFE, 0, 0, 0, 0, 0x11, 0}, UTF32LE, 4},
		{"a surrogate in UTF-32", []byte{0, 0, 0xFE, 0xFF, 0, 0, 0xD8, 0}, UTF32BE, 4},
	} {
		_, err := Decode(c.data, c.enc)
		var de *Error
		if !errors.As(err, &de) || de.Offset != c.at {
			t.Errorf("%s: %v, want an error at byte %d", c.name, err, c.at)
		}
	}
	if _, err := Encode([]byte{0xff}, UTF16LE); err == nil {
		t.Error("invalid UTF-8 was encoded")
	}
}
