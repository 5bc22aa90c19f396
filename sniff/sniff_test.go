package sniff

import (
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
