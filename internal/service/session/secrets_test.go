package session

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/fsguard/fsguard/internal/service/edit"
	"github.com/fsguard/fsguard/internal/store/journal"
)

// githubToken is a fresh token of GitHub's classic form (ghp_, 30 base62
// characters and their CRC32), as the detector's own samples make it.
func githubToken(t *testing.T) string {
	for _, c := range sniff.SampleCredentials(7) {
		if c.Family == "github-pat" {
			return c.Value
		}
	}
	t.Fatal("the detector makes no github-pat sample")
	return ""
}

// A file holding a token is shown masked by every read, its diff on
// re-read never carries the secret, and every way the agent writes it back
// keeps the secret intact or is refused — never replaced by its mask.
func TestSecretsMaskedAndKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := githubToken(t)
	mask := "ghp_" + strings.Repeat("*", len(tok)-4)
	orig := "package x\n\n// the client's token\nconst token = \"" + tok + "\"\n\nfunc f() int { return 1 }\n"
	path := e.write("conf.go", orig)

	res := e.read("conf.go", 0, 0)
	body := res.Text()
	if strings.Contains(body, tok[4:]) || !strings.Contains(body, mask) {
		t.Fatalf("read shows:\n%s", body)
	}
	var env struct {
		Masked []struct {
			Family       string
			Line, Column int64
		}
	}
	if err := json.Unmarshal(res.JSON(), &env); err != nil || len(env.Masked) != 1 || env.Masked[0].Line != 4 || env.Masked[0].Column != 16 {
		t.Fatalf("JSON masked %+v (%v)\n%s", env.Masked, err, res.JSON())
	}

	// The audit: one record of the masked version, its value never in it.
	masks, err := e.svc.Journal.Query(journal.Filter{Kind: journal.KindMask})
	if err != nil || len(masks) != 1 || !strings.HasPrefix(masks[0].Detail, "github-pat 4:16 len=40 value=") || strings.Contains(masks[0].Detail, tok[4:]) {
		t.Fatalf("mask records %v: %+v", err, masks)
	}
	if st, err := os.Stat(e.svc.Journal.Path() + ".maskkey"); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mask key: %v %v", st, err)
	}

	// Written back whole, as shown: the secret is restored.
	shown := strings.Replace(orig, tok, mask, 1)
	if _, err := e.svc.Write("conf.go", e.root, "s1", strings.NewReader(shown)); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != orig {
		t.Fatalf("after writing back the shown content:\n%s", got)
	}
	// Another line edited: the secret stays.
	e.read("conf.go", 0, 0)
	if _, code := e.edit("conf.go", edit.Edit{Old: "return 1", New: "return 2"}); code != "" {
		t.Fatalf("edit: %s", code)
	}
	want := strings.Replace(orig, "return 1", "return 2", 1)
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Fatalf("after an edit elsewhere:\n%s", got)
	}
	// A changed re-read's diff: the secret on neither side.
	os.WriteFile(path, []byte(strings.Replace(want, "return 2", "return 3", 1)), 0o644)
	again := e.read("conf.go", 0, 0)
	if out := again.Text() + string(again.JSON()); strings.Contains(out, tok[4:]) {
		t.Fatalf("re-read leaks:\n%s", out)
	}
	cur, _ := os.ReadFile(path)
	// A mask altered, by write or by edit: refused, the file unchanged.
	altered := strings.Replace(strings.Replace(string(cur), tok, mask, 1), "ghp_****", "ghp_***X", 1)
	if _, err := e.svc.Write("conf.go", e.root, "s1", strings.NewReader(altered)); refusal.CodeOf(err) != refusal.MaskedSpan {
		t.Fatalf("altered mask written: %v", err)
	}
	if _, code := e.edit("conf.go", edit.Edit{Old: "ghp_****", New: "ghp_***X"}); code != refusal.MaskedSpan {
		t.Fatalf("altered mask by edit: %s", code)
	}
	if got, _ := os.ReadFile(path); string(got) != string(cur) {
		t.Fatalf("a refused write changed the file:\n%s", got)
	}
	// A mask carried into another file: refused.
	e.write("other.go", "package x\n")
	e.read("other.go", 0, 0)
	if _, err := e.svc.Write("other.go", e.root, "s1", strings.NewReader("package x\nvar t = \""+mask+"\"\n")); refusal.CodeOf(err) != refusal.MaskedSpan {
		t.Fatalf("mask carried into another file: %v", err)
	}
	// The precondition stays on the real file: a read is enough.
	if code := e.check("conf.go"); code != "" {
		t.Fatalf("check after a masked read: %s", code)
	}
}
