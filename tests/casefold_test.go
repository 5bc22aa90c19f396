package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/testenv"
)

// caseFoldingDir makes a directory with FS_CASEFOLD_FL (chattr +F) on a
// file system made for the test: a casefold tmpfs, else an ext4 made with
// the casefold feature on a loop device. It skips when the kernel can do
// neither: that needs CONFIG_UNICODE, and without it no directory on this
// machine folds case, so there is no spelling of a name that reaches
// another and nothing to attack (allowed even with FSGUARD_REQUIRE_FUSE).
func caseFoldingDir(t *testing.T) string {
	t.Helper()
	testenv.RequireRoot(t, "mounting a case-folding file system")
	base := openDir(t)
	mnt := filepath.Join(base, "cf")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "casefold", "fsguard-casefold", mnt).CombinedOutput()
	if err != nil {
		img := filepath.Join(base, "cf.img")
		mk, merr := exec.Command("mkfs.ext4", "-q", "-F", "-O", "casefold", img, "16M").CombinedOutput()
		if merr == nil {
			mk, merr = exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput()
		}
		if merr != nil {
			t.Skipf("the kernel cannot fold case (a casefold tmpfs: %v %s; a casefold ext4: %v %s): without CONFIG_UNICODE no directory folds, so no spelling reaches another name",
				err, strings.TrimSpace(string(out)), merr, strings.TrimSpace(string(mk)))
		}
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	dir := filepath.Join(mnt, "root")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+F", dir).CombinedOutput(); err != nil {
		t.Skipf("chattr +F: %v %s: the file system was made, but its directories cannot fold case", err, out)
	}
	return dir
}

// TestCaseFoldingFileSystem: in a directory that folds case, ".ſsh" (long
// s), ".SSH", ".ßh"-style spellings and a Kelvin sign open the very
// entries the deny rules name; through the mount and `fsguard read` they
// are denied as the names they reach, with the default [deny] fold and
// with fold = false.
func TestCaseFoldingFileSystem(t *testing.T) {
	t.Parallel()
	root := caseFoldingDir(t)
	testenv.WriteTree(t, root, map[string]string{
		".ssh/id_ed25519": canary + "\n",
		".kube/config":    canary + "\n",
		"README.md":       "# hello\n",
	})
	// The kernel itself takes these for the denied names: the attack is real.
	spellings := []string{".\u017fsh/id_ed25519", ".SSH/id_ed25519", ".\u017f\u017fh/ID_ED25519", ".\u212aube/config", ".KUBE/CONFIG"}
	for _, s := range spellings {
		if b, err := os.ReadFile(filepath.Join(root, s)); err != nil || !strings.Contains(string(b), canary) {
			t.Fatalf("the case-folding directory does not resolve %q: %v", s, err)
		}
	}
	for _, extra := range []string{"", "[deny]\nfold = false\n"} {
		base := openDir(t)
		mp, pol := filepath.Join(base, "mnt"), filepath.Join(base, "policy.toml")
		os.Mkdir(mp, 0o755)
		writePolicy(t, pol, []string{root}, extra)
		startMount(t, mp, "--policy", pol)
		for _, s := range spellings {
			if b, err := os.ReadFile(filepath.Join(mp, s)); err == nil || strings.Contains(string(b), canary) {
				t.Errorf("policy %q: the mount served %q: %q", extra, s, b)
			}
			out, errs, code, _ := runBinary(t, root, []string{"FSGUARD_POLICY=" + pol}, "", "read", s)
			if code == 0 || strings.Contains(out, canary) {
				t.Errorf("policy %q: fsguard read %q: exit %d %s%s", extra, s, code, out, errs)
			}
		}
		if out, _ := run(t, 30*time.Second, "grep", "-r", canary, mp); strings.Contains(out, canary) {
			t.Errorf("policy %q: grep -r served a denied file:\n%s", extra, out)
		}
	}
}
