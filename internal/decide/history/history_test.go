package history

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/fsguard/fsguard/internal/testenv"
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
	testenv.WriteTree(t, base, map[string]string{"root/.git/": "", "root/a/b/.git/": "", "root/node_modules/m/.git/": "", "root/c/.git/": "", "outside/.git/": "", "outside/d/.git/": ""})
	testenv.Symlinks(t, base, map[string]string{"root/out": outside, "root/swapped": outside, "root/a/rel": "../../outside"})
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

// leakyRepo makes a git repository at dir whose history holds a private
// key that its tree no longer does.
func leakyRepo(t *testing.T, dir string) {
	t.Helper()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q")
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"
	if err := os.WriteFile(filepath.Join(dir, "id"), []byte(key), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "id")
	git("commit", "-qm", "oops")
	git("rm", "-q", "id")
	git("commit", "-qm", "gone")
}

// TestScanStaysInTheRoot: a repository the walk found and that was
// swapped for a link to another, outside the root, before the check got
// to it, is not checked: its history is not the view's, and git would
// have run there with that repository's owner's rights.
func TestScanStaysInTheRoot(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	leakyRepo(t, filepath.Join(root, "inside"))
	leakyRepo(t, outside)
	if err := os.Symlink(outside, filepath.Join(root, "swapped")); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte("[[root]]\npath = \"" + root + "\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := roots.New(pol)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r := g.Roots()[0]
	reps, err := Scan(context.Background(), g, Options{Repos: func(context.Context) ([]Repo, []Repo, bool) {
		return []Repo{{r, "inside"}, {r, "swapped"}}, nil, true
	}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rep := range reps {
		got = append(got, rep.Repo)
	}
	if !slices.Equal(got, []string{"inside"}) {
		t.Errorf("repositories reported: %q, want only [inside] (swapped leads outside the root)", got)
	}
}

// TestCredentialsInHistoryAreReported: the view masks a credential in a
// file, but git objects are served as they are; a blob that holds one (in
// the current commit or an older one) is reported with its family, and
// only when the policy masks credentials.
func TestCredentialsInHistoryAreReported(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q")
	var tok string
	for _, s := range sniff.SampleCredentials(1) {
		if s.Family == "github-pat" {
			tok = s.Value
		}
	}
	testenv.WriteTree(t, root, map[string]string{"config.go": "package x\n\nconst token = \"" + tok + "\"\n", "main.go": "package x\n"})
	git("add", ".")
	git("commit", "-qm", "one")
	for _, masks := range []bool{true, false} {
		pol, err := policy.Parse([]byte(fmt.Sprintf("[[root]]\npath = %q\n[secrets]\nmask = %v\n", root, masks)))
		testenv.Must(t, err)
		g, err := roots.New(pol)
		testenv.Must(t, err)
		reps, err := Scan(context.Background(), g, Options{Credentials: CredentialsUnder(pol)})
		g.Close()
		testenv.Must(t, err)
		var got []Finding
		for _, r := range reps {
			got = append(got, r.Findings...)
		}
		if masks && (len(got) != 1 || got[0].Path != "config.go" || got[0].Why != "credential (github-pat)" || got[0].Commit == "") {
			t.Errorf("masking on: findings %+v, want config.go's github-pat", got)
		}
		if !masks && len(got) != 0 {
			t.Errorf("masking off: findings %+v, want none", got)
		}
	}
}
