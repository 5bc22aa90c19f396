package lines

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// Split must divide a file exactly as the scanner numbers it, and Join must
// give back the same bytes: edits and diffs rely on both.
func TestSplitAgreesWithScan(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(7))
	inputs := []string{"", "abc", "abc\n", "\n\n", "a\r\nb\r\n", "a\rb\rc", "a\r\n\rb\n\r\n", "\r\n\r", "\xEF\xBB\xBFbom\r\nx"}
	alphabet := []byte("ab\r\n ")
	for i := 0; i < 300; i++ {
		b := make([]byte, r.Intn(40))
		for j := range b {
			b[j] = alphabet[r.Intn(len(alphabet))]
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		bom, lines := Split([]byte(in))
		if got := Join(bom, lines); !bytes.Equal(got, []byte(in)) {
			t.Fatalf("%q: Join(Split) = %q", in, got)
		}
		want := reference([]byte(in), true)
		if fmt.Sprint(Texts(lines)) != fmt.Sprint(want) {
			t.Fatalf("%q: Split texts %q, scanner's %q", in, Texts(lines), want)
		}
		res, err := Scan(bytes.NewReader([]byte(in)), Options{Offset: 1, Limit: 1000, MaxLineChars: 2000, MaxBytes: 1 << 20, SkipBOM: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.TotalLines != int64(len(lines)) {
			t.Fatalf("%q: Split has %d lines, the scanner counts %d", in, len(lines), res.TotalLines)
		}
	}
}

// TestControlCharactersShownVisibly: no control byte but the tab reaches
// the agent raw; the byte cap counts what is shown.
func TestControlCharactersShownVisibly(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain\ttext":        "plain\ttext",
		"\x1b[31mred\x1b[0m": "␛[31mred␛[0m",
		"bell\x07 del\x7f":   "bell␇ del␡",
		"c1 \u009b csi":      `c1 \u009b csi`,
		"é ✓":                "é ✓",
	} {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
		var b strings.Builder
		l := Line{N: 1, Text: in}
		Render(&b, l, 100, false)
		if b.Len() != RenderedSize(l, 100, false) || strings.ContainsAny(b.String(), "\x1b\x07\x7f") {
			t.Errorf("Render(%q) = %q (%d bytes, RenderedSize %d)", in, b.String(), b.Len(), RenderedSize(l, 100, false))
		}
	}
}
