package roots

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/refusal"
)

// TestParseConfigHooksPath: core.hooksPath and the include paths are read
// as git reads them, whatever the case of the names, the quoting, the
// comments and the continued lines.
func TestParseConfigHooksPath(t *testing.T) {
	t.Parallel()
	cfg := "# c\n[Core]\n\tHooksPath = \"a b\" # c\n[core \"x\"]\nhookspath=x\\\n/y ; c\n" +
		"[include]\n  path = ~/inc.cfg\n[includeIf \"gitdir:~/w/\"]\n\tpath = rel.cfg\n[core.sub] hooksPath = \"q\\\"r\"\n[remote \"o\"]\n\turl = u\n\tbare\n"
	var got []configValue
	for _, kv := range parseConfig([]byte(cfg)) {
		if kv.key == "hookspath" || kv.key == "path" {
			got = append(got, kv)
		}
	}
	want := []configValue{
		{"core", "hookspath", "a b"},
		{"core", "hookspath", "x/y"},
		{"include", "path", "~/inc.cfg"},
		{"includeif", "path", "rel.cfg"},
		{"core", "hookspath", `q"r`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %q\n got %q\nwant %q", cfg, got, want)
	}
}

// TestGlobalHooksPath: a hooks directory named in the global config of the
// user who owns the tree (core.hooksPath = ~/.githooks) is refused to
// write where no work tree holds it; the files beside it are not.
func TestGlobalHooksPath(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to own the tree as another user")
	}
	root := t.TempDir()
	const uid = 54321
	pw := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(pw, []byte(fmt.Sprintf("root:x:0:0::/root:/bin/sh\ndev:x:%d:%d::%s:/bin/sh\n", uid, uid, root)), 0o644)
	etc := passwd.Load()
	passwd.Store(&pw)
	t.Cleanup(func() { passwd.Store(etc) }) // before the file goes
	os.WriteFile(filepath.Join(root, ".gitconfig"), []byte("[core]\n\thooksPath = ~/.githooks\n"), 0o644)
	os.Mkdir(filepath.Join(root, ".githooks"), 0o755)
	for _, p := range []string{root, filepath.Join(root, ".githooks"), filepath.Join(root, ".gitconfig")} {
		os.Chown(p, uid, uid)
	}
	g := guardFor(t, root)
	r := g.Roots()[0]
	d, _, err := g.OpenParent(Path{Root: r, Rel: ".githooks/pre-commit", Shown: ".githooks/pre-commit"})
	if err == nil {
		d.Close()
	}
	if refusal.ReasonOf(err) != refusal.GitHooks {
		t.Errorf("a write into ~/.githooks: %v, want refused (git-hooks)", err)
	}
	d, _, err = g.OpenParent(Path{Root: r, Rel: "notes.txt", Shown: "notes.txt"})
	if err != nil {
		t.Errorf("a write beside it: %v", err)
	} else {
		d.Close()
	}
}

// TestHooksPathOutsideItsWorkTree: a hooks directory beside a work tree
// (core.hooksPath = ../common-hooks), one beside a bare repository (its
// relative hooks path is relative to its git directory) and a config
// included from outside the work tree are refused to write, though no
// work tree holds them; a repository made after a write counts at the
// next.
func TestHooksPathOutsideItsWorkTree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, d := range []string{"common-hooks", "bare-hooks", "shared", "srv/origin.git/objects", "srv/origin.git/refs"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "srv/origin.git/config"), []byte("[core]\n\tbare = true\n\thooksPath = ../../bare-hooks\n"), 0o644)
	g := guardFor(t, root)
	r := g.Roots()[0]
	write := func(rel string) error {
		d, _, err := g.OpenParent(Path{Root: r, Rel: rel, Shown: rel})
		if err == nil {
			d.Close()
		}
		return err
	}
	if err := write("common-hooks/pre-commit"); err != nil {
		t.Fatalf("before any repository names it: %v", err)
	}
	if err := write("bare-hooks/pre-receive"); refusal.ReasonOf(err) != refusal.GitHooks {
		t.Errorf("a write beside a bare repository, into its hooks: %v, want refused (git-hooks)", err)
	}
	// A work tree made now, whose hooks and an include are beside it.
	for _, d := range []string{"app/.git/objects", "app/.git/refs"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "app/.git/HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(root, "app/.git/config"), []byte("[core]\n\thooksPath = ../common-hooks\n[include]\n\tpath = ../../shared/git.inc\n"), 0o644)
	if err := write("common-hooks/pre-commit"); refusal.ReasonOf(err) != refusal.GitHooks {
		t.Errorf("a write into ../common-hooks: %v, want refused (git-hooks)", err)
	}
	if err := write("shared/git.inc"); refusal.ReasonOf(err) != refusal.GitDir {
		t.Errorf("a write of a config included from outside the work tree: %v, want refused (git-dir)", err)
	}
	if err := write("shared/notes.txt"); err != nil {
		t.Errorf("a write beside it: %v", err)
	}
}
