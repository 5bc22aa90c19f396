package admit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fsguard/fsguard/policy"
	"github.com/fsguard/fsguard/roots"
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
