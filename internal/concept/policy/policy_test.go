package policy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	other := t.TempDir()
	tests := []struct {
		name, text, want string
	}{
		{"no root", `[limits]
max_lines = 10`, "no [[root]]"},
		{"unknown key", `[[root]]
path = "` + dir + `"

[limits]
max_linez = 5`, `line 5: unknown key "limits.max_linez"`},
		{"unknown table", `[[root]]
path = "` + dir + `"
[frobnicate]
x = 1`, `line 3: unknown key "frobnicate"`},
		{"relative root", `[[root]]
path = "src"`, `line 2: root.path "src" is relative`},
		{"missing root", `[[root]]
path = "/definitely/not/here"`, `line 2: root.path "/definitely/not/here"`},
		{"bad glob", `[[root]]
path = "` + dir + `"
[deny]
globs = [
  "**/ok",
  "**/[unclosed",
]`, `line 6: deny pattern "**/[unclosed"`},
		{"half double star", `[[root]]
path = "` + dir + `"
[deny]
globs = ["a**b"]`, `line 4:`},
		{"duplicate names", `[[root]]
path = "` + dir + `"
name = "src"
[[root]]
path = "` + other + `"
name = "src"`, `line 3: root.name "src" is used by both`},
		{"zero limit", `[[root]]
path = "` + dir + `"
[limits]
max_lines = 0`, `line 4: limits.max_lines must be a positive integer`},
		{"bad class", `[[root]]
path = "` + dir + `"
[sniff]
refuse = ["secrets"]`, `line 4: sniff.refuse: unknown class "secrets"`},
		{"bad archives", `[[root]]
path = "` + dir + `"
[sniff]
archives = "unpack"`, `line 4: sniff.archives must be "scan", "deny" or "allow", got "unpack"`},
		{"bad audit", `[[root]]
path = "` + dir + `"
[audit]
opens = "log"`, `line 4: audit.opens must be "record" or "off", got "log"`},
		{"bad audit glob", `[[root]]
path = "` + dir + `"
[audit]
exclude = ["a**b"]`, `line 4:`},
		{"unknown family", `[[root]]
path = "` + dir + `"
[secrets]
disable = ["github-pat", "gihtub-oauth"]`, `line 4: secrets.disable: unknown family "gihtub-oauth" (known: github-pat, github-oauth,`},
		{"rule without anchors", `[[root]]
path = "` + dir + `"
[[secrets.rule]]
name = "acme-token"
regex = 'acme_[a-z0-9]{32}'`, `line 4: secrets.rule "acme-token" has no anchors: give at least one`},
		{"short anchor", `[[root]]
path = "` + dir + `"
[[secrets.rule]]
name = "acme-token"
regex = 'ac[a-z0-9]{32}'
anchors = ["ac"]`, `anchor "ac" must be 3 to 64 bytes long`},
		{"bad regex", `[[root]]
path = "` + dir + `"
[[secrets.rule]]
name = "acme-token"
regex = 'acme_(?=x)'
anchors = ["acme_"]`, `secrets.rule "acme-token": regex: error parsing regexp`},
		{"empty match", `[[root]]
path = "` + dir + `"
[[secrets.rule]]
name = "acme-token"
regex = '(acme_)?'
anchors = ["acme_"]`, `matches the empty string`},
		{"long regex", `[[root]]
path = "` + dir + `"
[[secrets.rule]]
name = "acme-token"
regex = '` + strings.Repeat("a", 1025) + `'
anchors = ["aaa"]`, `regex is 1025 bytes, at most 1024`},
		{"many anchors", `[[root]]
path = "` + dir + `"
[[secrets.rule]]
name = "acme-token"
regex = 'acme_x+'
anchors = [` + strings.Repeat(`"acme_", `, 33) + `]`, `has 33 anchors, at most 32`},
		{"builtin name", `[[root]]
path = "` + dir + `"
[[secrets.rule]]
name = "github-pat"
regex = 'ghp_x+'
anchors = ["ghp_"]`, `secrets.rule name "github-pat" is a built-in family`},
		{"not kebab", `[[root]]
path = "` + dir + `"
[[secrets.rule]]
name = "Acme Token"
regex = 'acme_x+'
anchors = ["acme_"]`, `is not kebab-case`},
		{"bad keep", `[[root]]
path = "` + dir + `"
[[secrets.rule]]
name = "acme-token"
regex = 'acme_x+'
anchors = ["acme_"]
keep = -1`, `keep must be 0 to 64`},
		{"bad type", `[[root]]
path = 5`, `line 2:`},
		{"syntax", `[[root]
path = "x"`, `line 2: expected end of table array name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestExampleIsValidAndDefault(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../../policy.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The example names /srv/project; point it at a real directory.
	text := strings.ReplaceAll(string(data), "/srv/project", dir)
	p, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Default(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits != d.Limits || p.Mount != d.Mount || p.Journal != d.Journal || strings.Join(p.Sniff.Refuse, ",") != strings.Join(d.Sniff.Refuse, ",") {
		t.Fatalf("example and embedded default disagree:\n%+v\n%+v", p, d)
	}
	// Every key of the example is documented with its default: each
	// "key = value" line of the example appears commented or live.
	for _, key := range []string{"max_lines", "max_line_chars", "max_bytes", "max_scan_bytes", "sample_bytes", "max_media_bytes", "refuse", "denied", "entry_timeout", "attr_timeout", "open", "passthrough_min_bytes", "passthrough_unchecked", "warm", "warm_max_bytes", "socket", "require_whole_view", "held_max_bytes", "use_defaults", "paths", "globs", "name", "cross_mounts", "mask", "generic", "disable"} {
		if !regexp.MustCompile(`(?m)^#?\s*` + key + ` = `).MatchString(string(data)) {
			t.Errorf("policy.toml.example does not show %s", key)
		}
	}
}

func TestRootsResolveSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	os.Mkdir(real, 0o755)
	os.Symlink(real, filepath.Join(dir, "alias"))
	p, err := Default(filepath.Join(dir, "alias"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Roots[0].Real != real || p.Roots[0].Name != "real" {
		t.Fatalf("root: %+v", p.Roots[0])
	}
}

// TestDefaultDeniesCredentialFiles: each credential file the default list
// names is denied wherever it sits, and ordinary files stay visible.
func TestDefaultDeniesCredentialFiles(t *testing.T) {
	t.Parallel()
	p, err := Default(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{
		".git-credentials", "home/.kube/config", "u/.docker/config.json", ".npmrc", ".config/gh/hosts.yml",
		".pypirc", ".pgpass", ".vault-token", ".terraform.d/credentials.tfrc.json", ".config/gcloud/application_default_credentials.json",
		".azure/accessTokens.json", "certs/client.p12", "a.pfx", "store.jks", "release.keystore", ".htpasswd", ".netrc", ".s3cfg",
		".cargo/credentials.toml", ".gem/credentials", "vault.kdbx", ".my.cnf", ".dockercfg",
	} {
		if MatchGlobs(p.Deny.Globs, rel, "/r/"+rel, true) < 0 {
			t.Errorf("%s is not denied by default", rel)
		}
	}
	for _, rel := range []string{"main.go", "docs/npmrc.md", "config/kube.yaml", "package.json"} {
		if MatchGlobs(p.Deny.Globs, rel, "/r/"+rel, true) >= 0 {
			t.Errorf("%s is denied by default", rel)
		}
	}
}

// TestDefaultRefusesBroadRoots: the embedded default does not make / or a
// home directory the root, and says how to choose one.
func TestDefaultRefusesBroadRoots(t *testing.T) {
	t.Parallel()
	home, _ := os.UserHomeDir()
	for _, dir := range []string{"/", home, "/home/someone", "/root"} {
		if _, err := Default(dir); err == nil || !strings.Contains(err.Error(), "--policy") {
			t.Errorf("Default(%q): %v, want a refusal that says how", dir, err)
		}
	}
	if _, err := Default(t.TempDir()); err != nil {
		t.Errorf("a project directory: %v", err)
	}
}

// TestSecretsSection: the [secrets] section's defaults, its families as
// disable and rules change them, and the paths shown unmasked.
func TestSecretsSection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := Default(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Secrets.Mask == nil || !*d.Secrets.Mask || d.Secrets.Generic || len(d.Secrets.Families()) != len(SecretFamilies) {
		t.Fatalf("default secrets: %+v, families %v", d.Secrets, d.Secrets.Families())
	}
	p, err := Parse([]byte(`[[root]]
path = "` + dir + `"
[secrets]
generic = true
disable = ["jwt", "acme-token"]
allow_globs = ["**/testdata/**"]
[[secrets.rule]]
name = "acme-token"
regex = 'acme_[a-z0-9]{32}'
anchors = ["acme_"]
keep = 5
[[secrets.rule]]
name = "other-token"
regex = 'oth_([a-z0-9]{32})'
anchors = ["oth_"]
`))
	if err != nil {
		t.Fatal(err)
	}
	fams := p.Secrets.Families()
	if slices.Contains(fams, "jwt") || slices.Contains(fams, "acme-token") || !slices.Contains(fams, GenericSecret) || fams[len(fams)-1] != "other-token" {
		t.Errorf("families %v", fams)
	}
	if p.Secrets.Rules[0].Re == nil || !p.Secrets.Rules[0].Re.MatchString("acme_0123456789abcdef0123456789abcdef") {
		t.Errorf("rule not compiled: %+v", p.Secrets.Rules[0])
	}
	if !p.SecretsShown(dir, dir, "pkg/testdata/creds.env") || p.SecretsShown(dir, dir, "pkg/creds.env") {
		t.Errorf("allow_globs do not decide")
	}
	sum := p.Summary()
	for _, want := range []string{"[secrets]\nmask = true\ngeneric = true\ndisable = [\"jwt\", \"acme-token\"]", "# families masked: [\"github-pat\"", "name = \"other-token\""} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	off, err := Parse([]byte(`[[root]]
path = "` + dir + `"
[secrets]
mask = false
`))
	if err != nil || off.Secrets.Masks() || off.Secrets.Families() != nil {
		t.Fatalf("mask = false: %v %v", err, off.Secrets.Families())
	}
}
