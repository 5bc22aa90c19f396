package sniff

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/pem"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// rec is a zip member written by hand: its local record and what its
// central directory entry says of it.
type rec struct {
	name          string
	method, flags uint16
	crc           uint32
	csize, usize  uint32
	local         []byte // header, data, descriptor
	off           uint32 // set when placed
}

// localRec makes a member's local record: stored or deflated, with a
// data descriptor (sizes 0 in the local header) when desc.
func localRec(t testing.TB, name string, method uint16, data []byte, desc bool) rec {
	t.Helper()
	body := data
	if method == zip.Deflate {
		var b bytes.Buffer
		fw, _ := flate.NewWriter(&b, flate.BestCompression)
		fw.Write(data)
		fw.Close()
		body = b.Bytes()
	}
	r := rec{name: name, method: method, crc: crc32.ChecksumIEEE(data), csize: uint32(len(body)), usize: uint32(len(data))}
	if desc {
		r.flags = 8
	}
	h := make([]byte, zipLocalLen)
	copy(h, sigLocal)
	binary.LittleEndian.PutUint16(h[4:], 20)
	binary.LittleEndian.PutUint16(h[6:], r.flags)
	binary.LittleEndian.PutUint16(h[8:], method)
	if !desc {
		binary.LittleEndian.PutUint32(h[14:], r.crc)
		binary.LittleEndian.PutUint32(h[18:], r.csize)
		binary.LittleEndian.PutUint32(h[22:], r.usize)
	}
	binary.LittleEndian.PutUint16(h[26:], uint16(len(name)))
	r.local = append(append(h, name...), body...)
	if desc {
		r.local = append(r.local, descriptor(r)...)
	}
	return r
}

func descriptor(r rec) []byte {
	d := append([]byte{}, sigDesc...)
	d = binary.LittleEndian.AppendUint32(d, r.crc)
	d = binary.LittleEndian.AppendUint32(d, r.csize)
	return binary.LittleEndian.AppendUint32(d, r.usize)
}

// zipFile lays out locals (raw bytes: records, or anything hidden between
// them) from the start, then a central directory of the entries dir (each
// with its off), then the end record; offsets count from base (a zip
// whose offsets do not count a prefix it is put behind has base < 0).
func zipFile(locals [][]byte, dir []rec) []byte {
	var b []byte
	for _, l := range locals {
		b = append(b, l...)
	}
	at := len(b)
	for _, r := range dir {
		h := make([]byte, zipDirLen)
		copy(h, sigDir)
		binary.LittleEndian.PutUint16(h[4:], 20)
		binary.LittleEndian.PutUint16(h[6:], 20)
		binary.LittleEndian.PutUint16(h[8:], r.flags)
		binary.LittleEndian.PutUint16(h[10:], r.method)
		binary.LittleEndian.PutUint32(h[16:], r.crc)
		binary.LittleEndian.PutUint32(h[20:], r.csize)
		binary.LittleEndian.PutUint32(h[24:], r.usize)
		binary.LittleEndian.PutUint16(h[28:], uint16(len(r.name)))
		binary.LittleEndian.PutUint32(h[42:], r.off)
		b = append(append(b, h...), r.name...)
	}
	e := make([]byte, zipEndLen)
	copy(e, sigEnd)
	binary.LittleEndian.PutUint16(e[8:], uint16(len(dir)))
	binary.LittleEndian.PutUint16(e[10:], uint16(len(dir)))
	binary.LittleEndian.PutUint32(e[12:], uint32(len(b)-at))
	binary.LittleEndian.PutUint32(e[16:], uint32(at))
	return append(b, e...)
}

// placed is the records laid one after the other from 0, their offsets set.
func placed(rs ...rec) ([][]byte, []rec) {
	var ls [][]byte
	off := 0
	for i := range rs {
		rs[i].off = uint32(off)
		ls = append(ls, rs[i].local)
		off += len(rs[i].local)
	}
	return ls, rs
}

// TestZipStreamingAndDirectoryDisagree: zips that show a streaming reader
// (ZipInputStream, bsdtar from a pipe) another member than the central
// directory shows a directory reader — a local header naming another
// file, a record the directory does not list between two it does, a
// deflate stream that ends before its stated size with a hidden record
// after it, two entries over one record, a local header before the first
// listed one — are refused as unchecked, their detail naming the
// disagreement (InsideTwoWays); the directory reader alone (Go's archive/zip, which the
// check used) finds them clean.
func TestZipStreamingAndDirectoryDisagree(t *testing.T) {
	t.Parallel()
	u := unpacker(t)
	key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: derKeys(t)["pkcs8-ec"]})
	readme := []byte("# hello\n")
	cases := map[string][]byte{}

	// A local header naming .env where the directory names a README.
	{
		r := localRec(t, "READ", zip.Store, []byte("A=1\n"), false)
		copy(r.local[zipLocalLen:], ".env")
		cases["local name"] = zipFile(placed(r))
	}
	// A record holding a key between two listed ones, not listed.
	{
		a := localRec(t, "a.md", zip.Deflate, readme, false)
		h := localRec(t, "k.txt", zip.Deflate, key, false)
		b := localRec(t, "b.md", zip.Deflate, readme, false)
		ls, rs := placed(a, h, b)
		cases["hidden between"] = zipFile(ls, []rec{rs[0], rs[2]})
		ls, rs = placed(a, h)
		cases["hidden after last"] = zipFile(ls, []rec{rs[0]})
	}
	// A deflate stream that ends early: its descriptor, then a hidden
	// record, then a descriptor for the size the directory gives.
	{
		a := localRec(t, "a.md", zip.Deflate, readme, true)
		h := localRec(t, "k.txt", zip.Store, key, false)
		ls, rs := placed(a, h)
		long := rs[0]
		long.csize = uint32(len(a.local) - (zipLocalLen + len(a.name)) + len(h.local))
		cases["deflate ends early"] = zipFile(append(ls, descriptor(long)), []rec{long})
	}
	// Two entries over one record.
	{
		a := localRec(t, "a.md", zip.Store, readme, false)
		ls, rs := placed(a)
		cases["overlap"] = zipFile(ls, []rec{rs[0], rs[0]})
	}
	// A local header size that is not the directory's: a streaming
	// reader reads the stored member's first bytes as its whole and the
	// rest as the next record.
	{
		h := localRec(t, "k.txt", zip.Deflate, key, false)
		inner := append([]byte{}, h.local...)
		a := localRec(t, "a.md", zip.Store, append([]byte("ok"), inner...), false)
		binary.LittleEndian.PutUint32(a.local[18:], 2)
		binary.LittleEndian.PutUint32(a.local[22:], 2)
		cases["local sizes"] = zipFile(placed(a))
	}
	// A stored member with a descriptor holding a descriptor's signature
	// a streaming reader would stop at.
	{
		h := localRec(t, "k.txt", zip.Deflate, key, false)
		a := localRec(t, "a.md", zip.Store, append(append([]byte("ok"), sigDesc...), h.local...), true)
		cases["stored descriptor"] = zipFile(placed(a))
	}
	// Two zips one after the other: readers of the last end record see
	// the second, a streaming reader the first.
	{
		first := zipFile(placed(localRec(t, "k.txt", zip.Deflate, key, false)))
		cases["two zips"] = append(first, zipFile(placed(localRec(t, "a.md", zip.Deflate, readme, false)))...)
	}

	for name, data := range cases {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: Go's zip reader: %v", name, err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatalf("%s: Go's zip reader opens %s: %v", name, f.Name, err)
			}
			var b bytes.Buffer
			_, err = b.ReadFrom(rc)
			if err != nil || HasKey(b.Bytes()) || f.Name == ".env" {
				t.Fatalf("%s: the case is not clean to a directory reader: %s %v", name, f.Name, err)
			}
		}
		if in := inspect(t, u, data); in == nil || in.Why != InsideTwoWays || in.Detail == "" {
			t.Errorf("%s: %+v, want refused as read two ways, saying where", name, in)
		}
	}
}

// TestZipBehindPrefix: a zip behind a prefix — a self-extractor's stub
// (offsets counting it, as `zip -A` makes them, or not), a PNG it is
// appended to — is recognised by its end record and looked into as a
// plain zip is: a key or a credential in it is found; clean, it is clean.
func TestZipBehindPrefix(t *testing.T) {
	t.Parallel()
	u := unpacker(t)
	key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: derKeys(t)["pkcs8-ec"]})
	var token string
	for _, s := range SampleCredentials(7) {
		if s.Family == "github-pat" {
			token = s.Value
		}
	}
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{0x11, 0x22}, 3000)...)
	elf := append([]byte("\x7fELF\x02\x01\x01"), bytes.Repeat([]byte{0, 0x90, 0xc3}, 50000)...)
	adjusted := func(prefix []byte, ms ...member) []byte {
		var b bytes.Buffer
		b.Write(prefix)
		zw := zip.NewWriter(&b)
		zw.SetOffset(int64(len(prefix)))
		for _, m := range ms {
			w, _ := zw.Create(m.name)
			w.Write(m.data)
		}
		zw.Close()
		return b.Bytes()
	}
	cat := func(prefix []byte, z []byte) []byte { return append(append([]byte{}, prefix...), z...) }
	cases := []struct {
		name, why, member string
		data              []byte
	}{
		{"png + zip key", InsideKey, "k.txt", cat(png, zipOf(t, zip.Deflate, member{"k.txt", key}))},
		{"elf + zip .env", InsideName, ".env", cat(elf, zipOf(t, zip.Deflate, member{".env", []byte("A=1")}))},
		{"sfx adjusted credential", InsideCredential, "cfg.yml", adjusted(elf, member{"cfg.yml", []byte("token: " + token + "\n")})},
		{"png + zip clean", "", "", cat(png, zipOf(t, zip.Deflate, member{"a.md", []byte("# hi\n")}))},
		{"sfx adjusted clean", "", "", adjusted(elf, member{"a.md", []byte("# hi\n")}, member{"b.md", []byte("# ho\n")})},
	}
	for _, c := range cases {
		if PackedKind(c.data) != "" {
			t.Fatalf("%s: recognised by its head", c.name)
		}
		kind, err := PackedKindIn(c.data[:512], bytes.NewReader(c.data), int64(len(c.data)))
		if err != nil || kind != Zip {
			t.Errorf("%s: kind %q, %v; want a zip", c.name, kind, err)
			continue
		}
		in := inspect(t, u, c.data)
		switch {
		case c.why == "" && in != nil:
			t.Errorf("%s: refused: %+v", c.name, *in)
		case c.why != "" && (in == nil || in.Why != c.why || in.Member != c.member):
			t.Errorf("%s: %+v, want %s at %q", c.name, in, c.why, c.member)
		}
	}
}

// TestZipMadeByTools: zips as tools make them — Go's writer (data
// descriptors), Info-ZIP's zip (extra fields; streamed to a pipe, with
// descriptors; a self-extractor fixed by zip -A), directories, empty
// files — are clean when they hold nothing to refuse: the agreement
// check refuses no honest zip.
func TestZipMadeByTools(t *testing.T) {
	t.Parallel()
	u := unpacker(t)
	for name, data := range map[string][]byte{
		"go deflate": zipOf(t, zip.Deflate, member{"a/", nil}, member{"a/b.md", []byte("# b\n")}, member{"empty", nil}),
		"go store":   zipOf(t, zip.Store, member{"a.md", []byte("# a\n")}, member{"b.md", []byte("# b\n")}),
		"by hand":    zipFile(placed(localRec(t, "a.md", zip.Deflate, []byte("# a\n"), true), localRec(t, "b.md", zip.Store, []byte("# b\n"), true))),
	} {
		if in := inspect(t, u, data); in != nil {
			t.Errorf("%s: refused: %+v", name, *in)
		}
	}
	if _, err := exec.LookPath("zip"); err != nil {
		t.Skip("no Info-ZIP zip here for its own zips")
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src", "d"), 0o755)
	os.WriteFile(filepath.Join(dir, "src", "d", "a.md"), bytes.Repeat([]byte("# a\n"), 500), 0o644)
	os.WriteFile(filepath.Join(dir, "src", "b.md"), []byte("# b\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "stub"), bytes.Repeat([]byte{0x7f, 0x90}, 4000), 0o755)
	sh := func(s string) {
		cmd := exec.Command("sh", "-c", s)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", s, err, out)
		}
	}
	sh("zip -qr plain.zip src")
	sh("zip -qr - src > piped.zip")
	sh("cat stub plain.zip > sfx && zip -qA sfx")
	sh("cat stub plain.zip > sfx-raw")
	for _, name := range []string{"plain.zip", "piped.zip", "sfx", "sfx-raw"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if in := inspect(t, u, data); in != nil {
			t.Errorf("%s: refused: %+v", name, *in)
		}
	}
}

// FuzzZip: any bytes, taken as a zip by their head or their end record,
// are checked without a panic and within the bounds.
func FuzzZip(f *testing.F) {
	f.Add(zipFile(placed(localRec(f, "a.md", zip.Deflate, []byte("# a\n"), true))))
	f.Add(zipOf(f, zip.Store, member{"a", []byte("x")}, member{"b/", nil}))
	f.Add(append([]byte("\x7fELF"), zipOf(f, zip.Deflate, member{"a", []byte("xx")})...))
	u := unpacker(f)
	u.bounds = &bounds{members: 50, member: 1 << 16, all: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		if packedKindOf(data) != Zip {
			return
		}
		p := &unpack{u: u, b: *u.bounds}
		if _, err := p.zip(bytes.NewReader(data), int64(len(data)), "", 1); err != nil {
			t.Fatalf("a read from memory failed: %v", err)
		}
		if p.bytes > p.b.all+1<<16 {
			t.Fatalf("decompressed %d bytes, over the bound", p.bytes)
		}
	})
}
