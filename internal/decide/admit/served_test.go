package admit_test

import (
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// window reads the window a door reads to serve n bytes at off of data
// (a version's whole bytes), as the mount's gate does.
func window(data []byte, off int64, n int) admit.Window {
	back, ahead := sniff.Margins(1)
	lo, hi := admit.Reach(int64(len(data)), off, n, back, ahead)
	hi = min(hi, int64(len(data)))
	return admit.Window{Bytes: data[lo:hi], Base: lo, AtEOF: hi == int64(len(data)), Head: data[:4], From: off, To: min(off+int64(n), hi)}
}

// TestCheckIsTheBytesChecked: a READ's window is served by the verdict
// only if its blocks and head are the bytes the verdict was made on,
// whatever it found them to be (here binary, which says nothing of a
// token); any other byte, a changed head, or masks other than the
// verdict's, and the verdict is not used.
func TestCheckIsTheBytesChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	content := []byte(strings.Repeat("binary\x00\x01\x02 data ", 30000))
	e.write("blob.bin", string(content))
	d := admit.New(16)
	f, err := e.g.Open("blob.bin", e.root)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := d.Decide(e.g, f)
	if err != nil || res.Class != sniff.Binary {
		t.Fatalf("decided %v, %v", res.Class, err)
	}
	id := f.Identity()
	const off, n = 160 << 10, 128 << 10
	if !d.Check(e.g, f, id, res.Masks, window(content, off, n)) {
		t.Fatalf("the very bytes checked are not served")
	}
	pat := githubToken(t)
	changed := append([]byte(nil), content...)
	copy(changed[off+100:], "TOKEN="+pat+"\n")
	if d.Check(e.g, f, id, res.Masks, window(changed, off, n)) {
		t.Errorf("a token stored over a binary file's bytes is served by its verdict")
	}
	margin := append([]byte(nil), content...)
	margin[off-1] ^= 1 // in the margin, outside the range served
	if d.Check(e.g, f, id, res.Masks, window(margin, off, n)) {
		t.Errorf("a change in the margins is served by the verdict")
	}
	bom := append([]byte(nil), content...)
	copy(bom, "\xff\xfe")
	w := window(content, off, n)
	w.Head = bom[:4]
	if d.Check(e.g, f, id, res.Masks, w) {
		t.Errorf("a window whose file's head changed is served by the verdict")
	}
	if d.Check(e.g, f, id, []sniff.Mask{{Off: off, Len: 8, Unit: 1}}, window(content, off, n)) {
		t.Errorf("masks other than the verdict's are taken for it")
	}
	d.Forget(e.g, id)
	if d.Check(e.g, f, id, res.Masks, window(content, off, n)) {
		t.Errorf("a forgotten verdict is served by")
	}
}

// githubToken is a GitHub token the credential scanner masks.
func githubToken(t *testing.T) string {
	t.Helper()
	for _, s := range sniff.SampleCredentials(7) {
		if s.Family == "github-pat" {
			return s.Value
		}
	}
	t.Fatal("no github-pat sample")
	return ""
}

// BenchmarkWindowCheck is what a READ of 128 KiB of a remembered version
// adds: the hashes of the whole blocks around it and its margins.
func BenchmarkWindowCheck(b *testing.B) {
	e := newEnv(&testing.T{}, "")
	content := []byte(strings.Repeat("\tif err := run(ctx, cfg); err != nil {\n\t\treturn fmt.Errorf(\"run: %w\", err)\n\t}\n", 40000))
	e.write("a.go", string(content))
	d := admit.New(16)
	f, err := e.g.Open("a.go", e.root)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	res, err := d.Decide(e.g, f)
	if err != nil {
		b.Fatal(err)
	}
	w := window(content, 1<<20, 128<<10)
	b.SetBytes(128 << 10)
	for b.Loop() {
		if !d.Check(e.g, f, f.Identity(), res.Masks, w) {
			b.Fatal("the bytes checked are not served")
		}
	}
}
