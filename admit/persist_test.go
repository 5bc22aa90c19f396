package admit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fsguard/fsguard/fileid"
	"github.com/fsguard/fsguard/policy"
	"github.com/fsguard/fsguard/roots"
	"github.com/fsguard/fsguard/sniff"
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
		d.cache[key{fileid.Identity{Dev: 2049, Ino: uint64(1000 + i), Size: int64(i * 13), MtimeNs: 1.7e18 + int64(i), CtimeNs: 1.7e18 + int64(i)}, pol}] = remembered{res, 1.8e18}
	}
	path := filepath.Join(base, "verdicts")
	for b.Loop() {
		if n, err := d.Save(path, pol); err != nil || n != 44000 {
			b.Fatalf("saved %d, %v", n, err)
		}
	}
}
