package roots

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/policy"
)

// TestCaseFoldingRootFoldsWithoutPolicyFold: with [deny] fold = false a
// root whose directories may fold case (mayFoldCase) still compares names
// folded, by deny globs, deny paths and write-deny globs alike, in Denied
// and in a listing's judgment (entryDenied): an exact comparison there
// lets ".SSH" or ".ſsh" open ".ssh".
func TestCaseFoldingRootFoldsWithoutPolicyFold(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "Vault"), 0o755)
	p, err := policy.Parse(fmt.Appendf(nil, `[[root]]
path = %q
[deny]
paths = [%q]
fold = false
[write]
deny_globs = ["**/.github/**"]
`, root, filepath.Join(root, "Vault")))
	if err != nil {
		t.Fatal(err)
	}
	for _, folds := range []bool{false, true} {
		g, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		r := g.Roots()[0]
		r.caseFolds = folds
		for _, rel := range []string{".SSH/id", ".\u017fsh/id", "vault/x", "VAULT", "\u212a/.\u00dfh"} {
			if got := g.Denied(r, rel); got != folds {
				t.Errorf("caseFolds=%v: Denied(%q) = %v", folds, rel, got)
			}
		}
		rules, ok := g.entryRules(r, ".")
		if !ok {
			t.Fatal("the root is denied")
		}
		for _, name := range []string{".SSH", ".\u017f\u017fh", "vAULT"} {
			if got := g.entryDenied(rules, name); got != folds {
				t.Errorf("caseFolds=%v: entryDenied(%q) = %v", folds, name, got)
			}
		}
		if err := g.WriteDenied(r.At(".GITHUB/workflows/x.yml")); (err != nil) != folds {
			t.Errorf("caseFolds=%v: WriteDenied(.GITHUB/...) = %v", folds, err)
		}
		for _, rel := range []string{".ssh/id", "Vault/x"} {
			if !g.Denied(r, rel) {
				t.Errorf("caseFolds=%v: Denied(%q) = false", folds, rel)
			}
		}
	}
}
