package admit

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// TestSaveKeepsOnlySettledVersions: a class read within settle of its
// version's last change is neither saved nor loaded, since a change in
// the same timestamp tick would keep the version; once read later, it is.
func TestSaveKeepsOnlySettledVersions(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(root, 0o755))
	must(os.WriteFile(filepath.Join(root, "a.txt"), []byte("text\n"), 0o644))
	must(os.WriteFile(filepath.Join(base, "policy.toml"), []byte("[[root]]\npath = \""+root+"\"\n"), 0o644))
	pol, err := policy.Load(filepath.Join(base, "policy.toml"))
	must(err)
	g, err := roots.New(pol)
	must(err)
	defer g.Close()
	f, err := g.Open("a.txt", root)
	must(err)
	defer f.Close()
	d := New(16)
	if _, err := d.Decide(g, f); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(base, "verdicts")
	if n, err := d.Save(path, pol); err != nil || n != 0 {
		t.Fatalf("a class read just after its change: %d saved, %v; want 0", n, err)
	}
	d.settle = 0 // as if read long after
	if n, err := d.Save(path, pol); err != nil || n != 1 {
		t.Fatalf("a settled class: %d saved, %v; want 1", n, err)
	}
	fresh := New(16) // a file that says otherwise is not believed either
	if n, err := fresh.Load(path, pol); err != nil || n != 0 {
		t.Fatalf("loaded %d unsettled classes, %v; want 0", n, err)
	}
	fresh.settle = 0
	if n, err := fresh.Load(path, pol); err != nil || n != 1 {
		t.Fatalf("loaded %d, %v; want 1", n, err)
	}
}

// BenchmarkSave: the save of a tree's classes runs in the first pause
// after the warm walk, often beside the agent's first command; its CPU
// (encoding, and the garbage collection its allocations bring on) is
// taken from that command. 44,000 classes, as the warm walk of the
// generated benchmark tree leaves.
func BenchmarkSave(b *testing.B) {
	base := b.TempDir()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(base, "policy.toml"), []byte("[[root]]\npath = \""+base+"\"\n"), 0o644))
	pol, err := policy.Load(filepath.Join(base, "policy.toml"))
	must(err)
	d := New(1 << 20)
	d.settle = 0
	for i := range 44000 {
		res := sniff.Result{Class: sniff.Text, MIME: "text/plain; charset=utf-8"}
		if i%7 == 0 {
			res = sniff.Result{Class: sniff.Binary, MIME: "application/octet-stream"}
		}
		d.cache[key{fileid.Identity{Dev: 2049, Ino: uint64(1000 + i), Size: int64(i * 13), MtimeNs: 1.7e18 + int64(i), CtimeNs: 1.7e18 + int64(i)}, pol}] = remembered{res: res, at: 1.8e18}
	}
	path := filepath.Join(base, "verdicts")
	for b.Loop() {
		if n, err := d.Save(path, pol); err != nil || n != 44000 {
			b.Fatalf("saved %d, %v", n, err)
		}
	}
}

// TestLoadIgnoresAClassOutOfRange: a verdicts file whose stamp and
// checksum are right (written by hand, or by a daemon of another build
// that kept the stamp) but whose version names a class the file does not
// hold loads nothing for it, and never panics.
func TestLoadIgnoresAClassOutOfRange(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "policy.toml"), []byte("[[root]]\npath = \""+base+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Load(filepath.Join(base, "policy.toml"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := stamp(pol)
	if err != nil {
		t.Fatal(err)
	}
	id := fileid.Identity{Dev: 1, Ino: 2, Size: 3, MtimeNs: 4, CtimeNs: 5}
	in := savedFile{Stamp: st, Results: []sniff.Result{{Class: sniff.Text}}, Classes: []saved{
		{ID: id, Res: 1, At: 5e9}, {ID: id, Res: -1, At: 5e9}, {ID: fileid.Identity{Ino: 9}, Res: 0, At: 5e9},
	}}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&in); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	path := filepath.Join(base, "verdicts")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	d := New(16)
	if n, err := d.Load(path, pol); err != nil || n != 1 {
		t.Fatalf("loaded %d, %v; want only the one version whose class is in the file", n, err)
	}
	if _, ok := d.cached(key{id, pol}); ok {
		t.Error("a version naming a class out of range was loaded")
	}
}
