package sniff

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"encoding/pem"

	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/policy"
)

type member struct {
	name string
	data []byte
}

func tarOf(t testing.TB, ms ...member) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range ms {
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write(m.data)
	}
	tw.Close()
	return b.Bytes()
}

func zipOf(t testing.TB, method uint16, ms ...member) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, m := range ms {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(m.data)
	}
	zw.Close()
	return b.Bytes()
}

func gz(t testing.TB, name string, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Name = name
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// unpacker is the default policy's: its deny rules, and its credential
// detector.
func unpacker(t testing.TB) *Unpacker {
	t.Helper()
	pol, err := policy.Default(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	det, err := NewDetector(pol.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	return &Unpacker{Deny: pol.Deny.Globs, Fold: pol.Folds(), Creds: det}
}

func inspect(t testing.TB, u *Unpacker, data []byte) *Inside {
	t.Helper()
	kind := packedKindOf(data)
	if kind == "" {
		t.Fatalf("not recognised as packed: % x", data[:min(len(data), 16)])
	}
	in, err := u.Inspect(bytes.NewReader(data), int64(len(data)), kind)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestPackedFindings: keys, denied names and credentials inside gzip,
// tar, tar.gz and zip (stored and deflated), and an archive inside an
// archive, are found, named by member; clean archives are clean.
func TestPackedFindings(t *testing.T) {
	t.Parallel()
	u := unpacker(t)
	der := derKeys(t)["pkcs8-ec"]
	key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	var token string
	for _, s := range SampleCredentials(7) {
		if s.Family == "github-pat" {
			token = s.Value
		}
	}
	readme := member{"proj/README.md", []byte("# hello\n")}
	cases := []struct {
		name   string
		data   []byte
		why    string
		member string
	}{
		{"gzip pem", gz(t, "notes.txt", key), InsideKey, "notes.txt"},
		{"gzip innocent name, der", gz(t, "", der), InsideKey, "-"},
		{"gzip .pem name", gz(t, "k.pem", []byte("x")), InsideName, "k.pem"},
		{"tar .env", tarOf(t, readme, member{"proj/.env", []byte("A=1\n")}), InsideName, "proj/.env"},
		{"tgz key", gz(t, "", tarOf(t, readme, member{"proj/notes/k.txt", key})), InsideKey, "proj/notes/k.txt"},
		{"tgz id_rsa", gz(t, "", tarOf(t, readme, member{"./home/u/.ssh/id_rsa", []byte("x")})), InsideName, "home/u/.ssh/id_rsa"},
		{"zip deflate key", zipOf(t, zip.Deflate, readme, member{"a/b.txt", key}), InsideKey, "a/b.txt"},
		{"zip store .env", zipOf(t, zip.Store, member{"../.env", []byte("A=1")}), InsideName, ".env"},
		{"zip credential", zipOf(t, zip.Deflate, readme, member{"cfg.yml", []byte("token: " + token + "\n")}), InsideCredential, "cfg.yml"},
		{"zip binary member credential", zipOf(t, zip.Deflate, readme, member{"bin/app", append([]byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00"), []byte("\x00\x00token\x00"+token+"\x00\x00")...)}), InsideCredential, "bin/app"},
		{"tar UTF-16 member credential", tarOf(t, readme, member{"notes.txt", utf16NoBOM("token = " + token + "\n")}), InsideCredential, "notes.txt"},
		{"zip in zip key", zipOf(t, zip.Deflate, member{"inner.zip", zipOf(t, zip.Deflate, member{"k.txt", key})}), InsideKey, "inner.zip/k.txt"},
		{"tgz in zip .env", zipOf(t, zip.Deflate, member{"x.tgz", gz(t, "", tarOf(t, member{".env", []byte("A=1")}))}), InsideName, "x.tgz/.env"},
		{"too deep", zipOf(t, zip.Deflate, member{"1.zip", zipOf(t, zip.Deflate, member{"2.zip", zipOf(t, zip.Deflate, readme)})}), InsideUnchecked, "1.zip/2.zip"},
		{"clean tgz", gz(t, "", tarOf(t, readme, member{"proj/main.go", []byte("package main\n")})), "", ""},
		{"clean zip", zipOf(t, zip.Deflate, readme), "", ""},
	}
	for _, c := range cases {
		in := inspect(t, u, c.data)
		switch {
		case c.why == "" && in != nil:
			t.Errorf("%s: refused: %+v", c.name, *in)
		case c.why != "" && in == nil:
			t.Errorf("%s: nothing found, want %s at %q", c.name, c.why, c.member)
		case c.why != "" && (in.Why != c.why || in.Member != c.member):
			t.Errorf("%s: found %+v, want %s at %q", c.name, *in, c.why, c.member)
		}
	}
}

// TestPackedBounds: a gzip bomb, an archive of too many members, a member
// too large, an encrypted or unknown-method zip member, and a damaged
// stream are unchecked (refused), and a bomb costs no more than the bound.
func TestPackedBounds(t *testing.T) {
	t.Parallel()
	u := unpacker(t)
	// Bounds a hundredth of the real ones, with the same logic.
	b := bounds{members: 100, member: MaxPackedMember / 100, all: MaxPackedBytes / 100}
	u.bounds = &b
	// A bomb: 4 times the member bound of zeros.
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(make([]byte, 4*b.member))
	zw.Close()
	// Members each within the member bound, more than the total bound.
	var big []member
	for i := range b.all/b.member + 1 {
		big = append(big, member{string(rune('a' + i)), make([]byte, b.member-1024)})
	}
	tarBomb := gz(t, "", tarOf(t, big...))
	var many []member
	for i := range b.members + 1 {
		many = append(many, member{strings.Repeat("d/", 3) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676)), nil})
	}
	enc := zipOf(t, zip.Deflate, member{"a.txt", []byte("x")})
	// Set the encrypted flag in the local and the central header.
	for _, sig := range []string{"PK\x03\x04", "PK\x01\x02"} {
		i := bytes.Index(enc, []byte(sig))
		off := 6
		if sig == "PK\x01\x02" {
			off = 8
		}
		enc[i+off] |= 1
	}
	damaged := gz(t, "", bytes.Repeat([]byte("text\n"), 1000))
	damaged = damaged[:len(damaged)/2]
	rnd := make([]byte, 4096)
	rand.Read(rnd)
	for name, data := range map[string][]byte{
		"gzip bomb":      bomb.Bytes(),
		"many members":   tarOf(t, many...),
		"large member":   zipOf(t, zip.Store, member{"big.bin", make([]byte, b.member+1)}),
		"encrypted":      enc,
		"damaged gzip":   damaged,
		"damaged zip":    append([]byte("PK\x03\x04"), rnd...),
		"tgz over total": tarBomb,
	} {
		start := time.Now()
		in := inspect(t, u, data)
		if in == nil || in.Why != InsideUnchecked {
			t.Errorf("%s: %+v, want unchecked", name, in)
			continue
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%s: checked in %v", name, d)
		}
		t.Logf("%s: %s (%s) in %v", name, in.Detail, in.Member, time.Since(start))
	}
}

// TestPackedKindByContent: packing is recognised by magic, not by name; a
// tar without the ustar magic by its header's checksum.
func TestPackedKindByContent(t *testing.T) {
	t.Parallel()
	v7 := tarOf(t, member{"a.txt", []byte("x")})
	copy(v7[257:265], make([]byte, 8)) // no magic, no version
	// Its checksum must still hold: recompute it as a v7 writer would.
	for i := 148; i < 156; i++ {
		v7[i] = ' '
	}
	sum := 0
	for _, c := range v7[:512] {
		sum += int(c)
	}
	copy(v7[148:], []byte(strings.Repeat("0", 6-len(octal(sum)))+octal(sum)+"\x00 "))
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"tar":      {tarOf(t, member{"a", []byte("x")}), Tar},
		"v7 tar":   {v7, Tar},
		"zip":      {zipOf(t, zip.Deflate, member{"a", []byte("x")}), Zip},
		"gzip":     {gz(t, "", []byte("x")), Gzip},
		"text":     {[]byte(strings.Repeat("hello tar ustar PK\n", 100)), ""},
		"zeros":    {make([]byte, 1024), ""},
		"jar name": {[]byte("not a zip"), ""},
	} {
		if got := PackedKind(c.data); got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
}

func octal(n int) string {
	s := ""
	for n > 0 {
		s = string(rune('0'+n%8)) + s
		n /= 8
	}
	return s
}

// TestPackedBombRealBounds: a gzip bomb of 16 times the member bound, with
// the real bounds, is unchecked after decompressing no more than the
// member bound (and a read's buffer) of it.
func TestPackedBombRealBounds(t *testing.T) {
	t.Parallel()
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestSpeed)
	zeros := make([]byte, 1<<20)
	for range 16 * MaxPackedMember >> 20 {
		zw.Write(zeros)
	}
	zw.Close()
	p := &unpack{u: unpacker(t), b: defaultBounds}
	in, err := p.inspect(bytes.NewReader(bomb.Bytes()), int64(bomb.Len()), Gzip, "", 1)
	if err != nil || in == nil || in.Why != InsideUnchecked {
		t.Fatalf("a bomb of %d bytes: %+v, %v; want unchecked", bomb.Len(), in, err)
	}
	if p.bytes > MaxPackedMember+1<<20 {
		t.Errorf("decompressed %d bytes of the bomb, more than the member bound %d", p.bytes, MaxPackedMember)
	}
}

// TestPackedTarAnyTypeFlagIsContent: GNU tar and bsdtar extract a member
// with the contiguous-file flag, or a flag they do not know, as a regular
// file; its content is checked like one.
func TestPackedTarAnyTypeFlagIsContent(t *testing.T) {
	t.Parallel()
	u := unpacker(t)
	key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: derKeys(t)["pkcs8-ec"]})
	for _, flag := range []byte{tar.TypeCont, 'Z'} {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		if err := tw.WriteHeader(&tar.Header{Name: "notes.txt", Size: int64(len(key)), Mode: 0o644, Typeflag: flag, ModTime: time.Unix(0, 0), Format: tar.FormatGNU}); err != nil {
			t.Fatal(err)
		}
		tw.Write(key)
		tw.Close()
		if in := inspect(t, u, gz(t, "", b.Bytes())); in == nil || in.Why != InsideKey {
			t.Errorf("a tgz member with type flag %q holding a key: %+v, want the key found", flag, in)
		}
	}
}

// TestPackedBzip2AndUnreadable: a bzip2'd key and a .tar.bz2 holding a
// .env are looked into as gzip's are; an xz, zstd, 7z or rar file, which
// fsguard cannot decompress, is unchecked (refused), never served opaque.
func TestPackedBzip2AndUnreadable(t *testing.T) {
	t.Parallel()
	u := unpacker(t)
	b64 := func(s string) []byte {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Python's bz2.compress of an OpenSSH key, of a tar of README.md and
	// .env under proj/, and of a line of Go.
	key := b64("QlpoOTFBWSZTWV5uJ7EAABxfgGIQQAI6ID7r//A8nxeQMAC0oRVQ09Q0aBoMgBpkAZAipQaDQaNGgAGgaDT1DGQyGg0GjQBoAGhkqsjBIQSzvSExNROXAeJKTpSlKUJUmJRDmkyWJkTilBpSUZ0qTR1PCYYUHM2pEklJLScCCUQfaRFRaO6YiMykxOkZASMrStK0inJLaRSKWkkSpK0rTSlKvtPyRTYliWJ+SZJE/i7kinChILzcT2I=")
	tbz := b64("QlpoOTFBWSZTWfAxWhQAAJf/gMuQABBIAfeCJgIQgGZX3wAKCCAAYEkoI8oDaI0GRoHpGahjRo0AyZDRiNNA0wlfluCcewANSkhFcMSw1AztoxpEIYCPCdV58bvZaPHMIcMCO+E4iiFN/KZVHO5XvH6O0KpsN+DrGWRjH1b0I40TTdyUfpkSJGZKAkH8XckU4UJDwMVoUA==")
	clean := b64("QlpoOTFBWSZTWd/sIkwAAAZRgAAQQAAqq0AAIAAxANNNBTAPSFIWDeBLhdyRThQkN/sIkwA=")
	if in := inspect(t, u, key); in == nil || in.Why != InsideKey || in.Member != "-" {
		t.Errorf("bzip2 key: %+v", in)
	}
	if in := inspect(t, u, tbz); in == nil || in.Why != InsideName || in.Member != "proj/.env" {
		t.Errorf("tar.bz2 .env: %+v", in)
	}
	if in := inspect(t, u, clean); in != nil {
		t.Errorf("clean bzip2: %+v", *in)
	}
	if in := inspect(t, u, append(key[:len(key)-8:len(key)-8], "damaged!"...)); in == nil || in.Why != InsideUnchecked && in.Why != InsideKey {
		t.Errorf("damaged bzip2: %+v", in)
	}
	for _, magic := range []string{"\xfd7zXZ\x00\x00\x04", "\x28\xb5\x2f\xfd\x24\x00", "7z\xbc\xaf\x27\x1c\x00\x04", "Rar!\x1a\x07\x01\x00"} {
		if in := inspect(t, u, append([]byte(magic), bytes.Repeat([]byte{0x5a}, 600)...)); in == nil || in.Why != InsideUnchecked {
			t.Errorf("% x: %+v, want unchecked", magic[:4], in)
		}
	}
	if in := inspect(t, u, zipOf(t, zip.Store, member{"x.txt.bz2", key})); in == nil || in.Why != InsideKey || in.Member != "x.txt.bz2/-" {
		t.Errorf("bzip2 in zip: %+v", in)
	}
}

// utf16NoBOM is s as UTF-16LE without a byte order mark (ASCII s).
func utf16NoBOM(s string) []byte {
	var b []byte
	for i := range len(s) {
		b = append(b, s[i], 0)
	}
	return b
}
