package roots

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/policy"
)

// TestDeniedInIsDenied: a listing judges each entry by its whole path
// alone (deniedIn), on the grounds that Denied passed its directory. For
// every entry of every directory Denied passes, in a random tree of names
// the rules are about (and their case variants), it must answer as Denied
// does: relative and absolute globs, deny paths by the real and by the
// configured path, with and without fold.
func TestDeniedInIsDenied(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	real := filepath.Join(base, "real")
	link := filepath.Join(base, "link")
	names := []string{"a", "ab", "b1", "c", ".env", ".ENV", "x.pem", "X.PEM", "secrets", "Secrets", "build", "out.log",
		"Deny-Me", "deny-me", "abs", "f.bin", "q", "Zed", "zed", "x.txt", "id_rsa", ".ssh", "README.md", "deep"}
	rng := rand.New(rand.NewPCG(1, 2))
	var grow func(dir string, depth int)
	grow = func(dir string, depth int) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			switch r := rng.IntN(6); {
			case depth < 3 && r < 1:
				grow(filepath.Join(dir, n), depth+1)
			case r < 3:
				os.WriteFile(filepath.Join(dir, n), []byte("x\n"), 0o644)
			}
		}
	}
	grow(real, 0)
	// The deny paths' entries, whatever the draw made.
	for _, d := range []string{"a", "b1"} {
		os.RemoveAll(filepath.Join(real, d))
		os.MkdirAll(filepath.Join(real, d), 0o755)
	}
	os.WriteFile(filepath.Join(real, "a", "Deny-Me"), []byte("x\n"), 0o644)
	os.WriteFile(filepath.Join(real, "a", "deny-me"), []byte("x\n"), 0o644)
	os.WriteFile(filepath.Join(real, "b1", "x.txt"), []byte("x\n"), 0o644)
	os.WriteFile(filepath.Join(real, "b1", "X.TXT"), []byte("x\n"), 0o644)
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, fold := range []bool{true, false} {
		t.Run(fmt.Sprintf("fold=%v", fold), func(t *testing.T) {
			t.Parallel()
			text := fmt.Sprintf(`[[root]]
path = %q
[deny]
paths = [%q, %q]
globs = ["secrets/**", "**/build/*.log", "a*/b?/c", "%s/abs/**/*.bin", "%s/q/Z*", "**/deep/**/x.txt"]
fold = %v
`, link, filepath.Join(real, "a", "Deny-Me"), filepath.Join(link, "b1", "x.txt"), real, link, fold)
			p, err := policy.Parse([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			judge, err := New(p) // deniedIn's rules; nothing remembered
			if err != nil {
				t.Fatal(err)
			}
			defer judge.Close()
			fresh, err := New(p) // Denied's answers, path by path
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			r, r2 := judge.Roots()[0], fresh.Roots()[0]
			checked, denied := 0, 0
			var walk func(rel string)
			walk = func(rel string) {
				rules, ok := judge.entryRules(r, rel)
				if !ok {
					return
				}
				ents, err := os.ReadDir(filepath.Join(real, rel))
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ents {
					child := filepath.Join(rel, e.Name())
					got, want := judge.entryDenied(rules, e.Name()), fresh.Denied(r2, child)
					if got != want {
						t.Errorf("%s: deniedIn says %v, Denied %v", child, got, want)
					}
					checked++
					if want {
						denied++
					}
					if e.IsDir() && !want {
						walk(child)
					}
				}
			}
			walk(".")
			if denied == 0 || denied == checked {
				t.Fatalf("%d of %d entries denied: the rules test nothing", denied, checked)
			}
			t.Logf("%d entries, %d denied", checked, denied)
		})
	}
}

// BenchmarkListJudged judges the names of 2,600 directories of 5 files
// each, as their listings do (deniedIn's judgment, nothing remembered),
// with the default deny list.
func BenchmarkListJudged(b *testing.B) {
	p, err := policy.Default(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	g, err := New(p)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	r := g.Roots()[0]
	var dirs []*entryRules
	for i := range 26 {
		for j := range 100 {
			rules, ok := g.entryRules(r, fmt.Sprintf("pkg%02d/sub%02d/internal", i, j))
			if !ok {
				b.Fatal("a directory denied")
			}
			dirs = append(dirs, rules)
		}
	}
	names := []string{"file0.go", "file1_test.go", "README.md", "Makefile", "data.json"}
	b.ResetTimer()
	for b.Loop() {
		for _, rules := range dirs {
			for _, n := range names {
				g.entryDenied(rules, n)
			}
		}
	}
}
