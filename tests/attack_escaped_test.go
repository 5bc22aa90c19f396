package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// TestAttackEscapedTokens writes each bare token with escapes a decoder
// undoes — its first letter as \u0067, \x67, &#103; or &#x67;, escaped
// twice (\\u0067, JSON inside a JSON string), every letter as \uXXXX —
// and reads it through the mount (cat) and with fsguard read: the token
// is the same credential, and neither shows its secret part.
func TestAttackEscapedTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	forms := map[string]func(v string) string{
		"u":     func(v string) string { return fmt.Sprintf(`{"token":"\u%04x%s"}`, v[0], v[1:]) },
		"x":     func(v string) string { return fmt.Sprintf(`token = "\x%02x%s"`, v[0], v[1:]) },
		"dec":   func(v string) string { return fmt.Sprintf(`<code>&#%d;%s</code>`, v[0], v[1:]) },
		"hex":   func(v string) string { return fmt.Sprintf(`<code>&#x%x;%s</code>`, v[0], v[1:]) },
		"twice": func(v string) string { return fmt.Sprintf(`"{\"token\":\"\\u%04x%s\"}"`, v[0], v[1:]) },
		"all-u": func(v string) string {
			var b strings.Builder
			for i := range len(v) {
				fmt.Fprintf(&b, `\u%04x`, v[i])
			}
			return `{"token":"` + b.String() + `"}`
		},
	}
	type placed struct{ name, secret, family string }
	var files []placed
	os.MkdirAll(filepath.Join(f.root, "e"), 0o755)
	// A few families of bare tokens: the decoding is one for all.
	n := 0
	for _, s := range sniff.SampleCredentials(20261207) {
		if strings.ContainsAny(s.Value, " =/:;") || len(s.Secret) < 8 || n == 5 {
			continue
		}
		n++
		for fname, form := range forms {
			name := fmt.Sprintf("e/%s-%s.json", s.Family, fname)
			text := form(s.Value)
			secret := s.Secret
			if fname == "all-u" {
				secret = text[len(text)-2-len(secret)*6 : len(text)-2]
			} else if strings.HasPrefix(s.Value, s.Secret) {
				secret = s.Secret[1:]
			}
			writeFile(t, filepath.Join(f.root, name), "first\n"+text+"\nlast\n", 0o644)
			files = append(files, placed{name, secret, s.Family})
		}
	}
	startMount(t, f.mp, "--policy", f.policy)
	env := []string{"FSGUARD_POLICY=" + f.policy, "FSGUARD_JOURNAL=" + filepath.Join(f.base, "j.db"), "FSGUARD_SESSION=esc"}
	leaked := map[string][]string{}
	for _, p := range files {
		got, err := os.ReadFile(filepath.Join(f.mp, p.name))
		if err != nil {
			t.Errorf("the mount did not serve %s: %v", p.name, err)
		} else if strings.Contains(string(got), p.secret) {
			leaked["mount"] = append(leaked["mount"], p.name)
		}
		out, errs, _, _ := runBinary(t, f.root, env, "", "read", p.name, "--no-dedupe")
		if strings.Contains(out+errs, p.secret) {
			leaked["read"] = append(leaked["read"], p.name)
		}
	}
	for door, names := range leaked {
		t.Errorf("%s: %d of %d escaped tokens shown unmasked: %v", door, len(names), len(files), names)
	}
	t.Logf("%d files", len(files))
}
