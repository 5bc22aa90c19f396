package sniff

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"encoding/pem"
	"strings"
	"testing"
)

func zlibOf(data []byte, level int) []byte {
	var b bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&b, level)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// TestPackedZlib: a bare zlib stream (what zlib.compress, zlib-flate or
// openssl zlib write) holding a key, or holding a tar holding a .env, is
// looked into as a gzip stream is, whatever its level, alone or as a zip
// member; text that starts as a zlib header would ("x^2"), a git object,
// and a zlib stream of plain text are not refused.
func TestPackedZlib(t *testing.T) {
	t.Parallel()
	u := unpacker(t)
	key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: derKeys(t)["pkcs8-ec"]})
	for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, 2, zlib.DefaultCompression, zlib.BestCompression} {
		z := zlibOf(key, level)
		if k := PackedKind(z); k != Zlib {
			t.Fatalf("level %d: % x is %q", level, z[:2], k)
		}
		if in := inspect(t, u, z); in == nil || in.Why != InsideKey || in.Member != "-" {
			t.Errorf("level %d: %+v", level, in)
		}
	}
	// A key behind 64 KiB of noise: its head is the noise, stored.
	noise := make([]byte, 64<<10)
	rand.Read(noise)
	z := zlibOf(append(noise, key...), zlib.BestCompression)
	if k := PackedKind(z[:8192]); k != Zlib {
		t.Errorf("a head of stored noise: %q", k)
	}
	if in := inspect(t, u, z); in == nil || in.Why != InsideKey {
		t.Errorf("a key behind noise: %+v", in)
	}
	if in := inspect(t, u, zlibOf(tarOf(t, member{"proj/.env", []byte("A=1\n")}), 6)); in == nil || in.Why != InsideName || in.Member != "proj/.env" {
		t.Errorf("tar in zlib: %+v", in)
	}
	if in := inspect(t, u, zipOf(t, zip.Store, member{"k.z", zlibOf(key, 9)})); in == nil || in.Why != InsideKey || in.Member != "k.z/-" {
		t.Errorf("zlib in zip: %+v", in)
	}
	if in := inspect(t, u, zlibOf(bytes.Repeat([]byte("just notes\n"), 1000), 6)); in != nil {
		t.Errorf("plain text: %+v", in)
	}
	for _, s := range []string{"x^2 + y^2 = z^2, and more text after it\n", "x\x01\x00\x00\x00\x00\x00\x00\x00\x00", "x\xda" + string(noise[:600])} {
		if k := PackedKind([]byte(s)); k != "" {
			t.Errorf("%q...: %q", s[:8], k)
		}
	}
	// A preset dictionary: unreadable without it, so unchecked, never
	// opaque; text that starts like such a header ("x ", "x?", "x}") stays text.
	var zd bytes.Buffer
	zw, _ := zlib.NewWriterLevelDict(&zd, 6, []byte("-----BEGIN"))
	zw.Write(key)
	zw.Close()
	if k := PackedKind(zd.Bytes()); k != Zlib {
		t.Errorf("a preset dictionary: %q", k)
	} else if in := inspect(t, u, zd.Bytes()); in == nil || in.Why != InsideUnchecked {
		t.Errorf("a preset dictionary: %+v", in)
	}
	for _, s := range []string{"x = 1\nprint(x)\n# and more text after it\n", "x?y:z; more text after it, and more\n", "x} else { y(); more text after it }\n"} {
		if k := PackedKind([]byte(s)); k != "" {
			t.Errorf("%q...: %q", s[:8], k)
		}
	}
	// Text after such a header decodes as fixed-Huffman deflate for a
	// long way over a stand-in dictionary: it must stay text.
	words := strings.Fields("the a of x y func return if else for range := + - * 1 2 3 line text version notes")
	for i := range 2000 {
		var b strings.Builder
		b.WriteString([]string{"x ", "x?", "x}"}[i%3])
		for b.Len() < 600+i {
			b.WriteString(words[(i*7+b.Len()*13)%len(words)])
			b.WriteString(" \n"[b.Len()%2 : b.Len()%2+1])
		}
		if k := PackedKind([]byte(b.String())); k != "" {
			t.Fatalf("text %q...: %q", b.String()[:20], k)
		}
	}
	if k := PackedKind(zlibOf(append([]byte("blob 1234\x00"), key...), 1)); k != "" {
		t.Errorf("a git object: %q", k)
	}
}
