package roots

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/testenv"

	"golang.org/x/sys/unix"
)

// TestBindMountInsideRootIsAWall: binding an outside directory under a
// root does not put it in the view, unless the root says cross_mounts.
func TestBindMountInsideRootIsAWall(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, "bind mounts need root")
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	os.MkdirAll(filepath.Join(root, "bind"), 0o755)
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("CANARY\n"), 0o644)
	if err := unix.Mount(outside, filepath.Join(root, "bind"), "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount not permitted here: %v", err)
	}
	defer unix.Unmount(filepath.Join(root, "bind"), unix.MNT_DETACH)
	for _, cross := range []bool{false, true} {
		p, err := policy.Default(root)
		if err != nil {
			t.Fatal(err)
		}
		p.Roots[0].CrossMounts = cross
		g, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := g.Open("bind/secret.txt", root)
		if cross {
			if err != nil {
				t.Errorf("cross_mounts = true: %v", err)
			} else {
				f.Close()
			}
		} else if refusal.CodeOf(err) != refusal.OutsideAllowedRoots {
			t.Errorf("cross_mounts = false: got %v, want OUTSIDE_ALLOWED_ROOTS", err)
		}
		list, _ := g.List(g.Roots()[0], ".")
		if _, err := g.List(g.Roots()[0], "bind"); !cross && err == nil {
			t.Errorf("the bind mount's directory could be listed: %v", list)
		}
		g.Close()
	}
}
