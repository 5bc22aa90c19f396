package sniff

import (
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
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
		{"pem key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n", PrivateKey},
		{"openssh key after text", "notes\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n", PrivateKey},
		{"putty", "PuTTY-User-Key-File-3: ssh-ed25519\n", PrivateKey},
		{"prose mentioning the marker", "keys are found by `PRIVATE KEY-----` headers\n", Text},
		{"certificate", "-----BEGIN CERTIFICATE-----\nMIIB\n", Text},
		{"utf16 bom", "\xff\xfeh\x00i\x00", Encoding},
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

func TestFindKeyAcrossChunks(t *testing.T) {
	text := strings.Repeat("x", 50) + "\n-----BEGIN EC PRIVATE KEY-----\nMHc\n"
	for cut := 1; cut < len(text); cut++ {
		prefix, data := []byte(text[:cut]), []byte(text[cut:])
		if len(prefix) > keyContext {
			prefix = prefix[len(prefix)-keyContext:]
		}
		p, ok := FindKey(prefix, data)
		inData, _ := FindKey(nil, data)
		want := strings.Index(text, "PRIVATE") - cut
		if want+len("PRIVATE KEY-----") <= 0 {
			// Wholly in the previous chunk: found there (checked below).
			if _, ok := FindKey(nil, []byte(text[:cut])); !ok {
				t.Fatalf("cut %d: marker at the end of a chunk not found", cut)
			}
			continue
		}
		if !ok || p != want {
			// A header wholly in data is also a fine answer.
			if !(ok && p == inData) {
				t.Fatalf("cut %d: got %d %v, want %d", cut, p, ok, want)
			}
		}
	}
}
