package sniff

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		class Class
	}{
		{"empty", "", Text},
		{"ascii", "hello\n", Text},
		{"utf8", "héllo wörld ✓\n", Text},
		{"bom", "\xef\xbb\xbfhi\n", Text},
		{"rune cut by the sample end", "abc\xe2\x82", Text},
		{"pem key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n", PrivateKey},
		{"header without material", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n", Text},
		{"prose mentioning the marker", "keys are found by `PRIVATE KEY-----` headers\n", Text},
		{"certificate", "-----BEGIN CERTIFICATE-----\nMIIB\n", Text},
		{"utf16 bom", "\xff\xfeh\x00i\x00", Text},
		{"utf16be bom", "\xfe\xff\x00h\x00i", Text},
		{"utf32 bom", "\xff\xfe\x00\x00h\x00\x00\x00", Text},
		{"utf16 lone surrogate", "\xff\xfe\x00\xdch\x00", Encoding},
		{"utf16 control characters", "\xff\xfe\x1b\x00\x01\x00\x02\x00", Binary},
		{"latin1", "caf\xe9\n", Encoding},
		{"elf", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00", Binary},
		{"png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", Image},
		{"gif", "GIF89a\x01\x00\x01\x00\x00\x00\x00", Image},
		{"nul in text", "abc\x00def", Binary},
	}
	for _, tt := range tests {
		atEOF := tt.name != "rune cut by the sample end"
		if got := Classify([]byte(tt.in), atEOF); got.Class != tt.class {
			t.Errorf("%s: got %s (%s), want %s", tt.name, got.Class, got.MIME, tt.class)
		}
	}
	if r := Classify([]byte("abc\xe2\x82"), true); r.Class != Encoding || r.BadByte != 3 {
		t.Errorf("rune cut at EOF: %+v", r)
	}
}

// TestControlCharactersAreBinary: a file mostly of control characters is
// binary, though it is valid UTF-8 with no NUL; a log with a few colour
// escapes is still text.
func TestControlCharactersAreBinary(t *testing.T) {
	t.Parallel()
	var ctl []byte
	for i := range 4096 {
		ctl = append(ctl, byte(1+i%30))
	}
	if c := Classify(ctl, true); c.Class != Binary {
		t.Errorf("4 KB of control characters: %s", c.Class)
	}
	if c := Classify([]byte("\x1b[31merror\x1b[0m: disk full\nok\n"), true); c.Class != Text {
		t.Errorf("a coloured log line: %s", c.Class)
	}
}

// TestCountControl: the word-at-a-time count is the byte-at-a-time one,
// for every byte value at every position of a word, beside any other,
// and on random text and binary of every length up to a few words.
func TestCountControl(t *testing.T) {
	t.Parallel()
	slow := func(b []byte) int {
		n := 0
		for _, c := range b {
			n += int(control[c])
		}
		return n
	}
	for c := range 256 {
		for pos := range 16 {
			for _, fill := range []byte{'a', 0x80, 0xff, ' ', '\n', 0x1f} {
				b := bytes.Repeat([]byte{fill}, 16)
				b[pos] = byte(c)
				if got, want := countControl(b), slow(b); got != want {
					t.Fatalf("byte %#x at %d among %#x: counted %d, want %d", c, pos, fill, got, want)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 20000 {
		b := make([]byte, rng.IntN(40))
		for j := range b {
			if i%2 == 0 {
				b[j] = byte(rng.IntN(256))
			} else {
				b[j] = "ab \n\t\x00\x1b\x7f\x80\xc3\xa9"[rng.IntN(11)]
			}
		}
		if got, want := countControl(b), slow(b); got != want {
			t.Fatalf("%q: counted %d, want %d", b, got, want)
		}
	}
}
