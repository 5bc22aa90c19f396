package charset

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestEncoderIsEncode: the streaming encoder makes what Encode makes of
// the whole text, whatever the reads split (a rune across two reads
// included), and refuses text that is not UTF-8 with where.
func TestEncoderIsEncode(t *testing.T) {
	t.Parallel()
	text := []byte(strings.Repeat("alpha ✓ gamma 𝄞 é\r\n", 5000))
	for _, e := range []Encoding{UTF16LE, UTF16BE, UTF32LE, UTF32BE} {
		want, _ := Encode(text, e)
		for _, r := range []io.Reader{bytes.NewReader(text), iotest.OneByteReader(bytes.NewReader(text)), iotest.DataErrReader(bytes.NewReader(text))} {
			got, err := io.ReadAll(NewEncoder(r, e))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %d bytes, %v; want %d bytes", e, len(got), err, len(want))
			}
		}
		for _, bad := range []string{"ok \xff after", "cut at the end \xe2\x9c"} {
			_, err := io.ReadAll(NewEncoder(strings.NewReader(bad), e))
			var ce *Error
			if !errors.As(err, &ce) || ce.Offset != int64(strings.IndexAny(bad, "\xff\xe2")) {
				t.Errorf("%s: %q: %v, want an *Error at the bad byte", e, bad, err)
			}
		}
	}
}
