package history

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fsguard/fsguard/roots"
)

// TestReposStayInTheRoot: the walk for working trees finds them under the
// directories it is given, skips node_modules and .git, and never leaves
// the root: not through a symbolic link met on the way, nor through one
// that a directory it was handed has become (the warm walk listed it as a
// directory; it was swapped for a link before the check got to it), nor
// through a link its parent has become.
func TestReposStayInTheRoot(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{"root/.git", "root/a/b/.git", "root/node_modules/m/.git", "root/c/.git", "outside/.git", "outside/d/.git"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"root/out": outside, "root/swapped": outside, "root/a/rel": "../../outside"} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	r := &roots.Root{Path: root, Real: root}
	found := func(from ...string) []string {
		var starts []Repo
		for _, f := range from {
			starts = append(starts, Repo{r, f})
		}
		got, err := repos(context.Background(), starts, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var rels []string
		for _, g := range got {
			rels = append(rels, g.Rel)
		}
		slices.Sort(rels)
		return rels
	}
	if got, want := found("."), []string{".", "a/b", "c"}; !slices.Equal(got, want) {
		t.Errorf("from the root: %q, want %q", got, want)
	}
	if got, want := found("a", "c"), []string{"a/b", "c"}; !slices.Equal(got, want) {
		t.Errorf("from a and c: %q, want %q", got, want)
	}
	if got := found("swapped", "a/rel", "out/d"); len(got) != 0 {
		t.Errorf("from directories that became links out of the root: %q, want none", got)
	}
}
