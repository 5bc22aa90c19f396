package policy

import (
	"os"
	"path/filepath"
	"regexp"
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
		{"bad audit", `[[root]]
path = "` + dir + `"
[audit]
opens = "log"`, `line 4: audit.opens must be "record" or "off", got "log"`},
		{"bad audit glob", `[[root]]
path = "` + dir + `"
[audit]
exclude = ["a**b"]`, `line 4:`},
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
	for _, key := range []string{"max_lines", "max_line_chars", "max_bytes", "max_scan_bytes", "sample_bytes", "max_media_bytes", "refuse", "denied", "entry_timeout", "attr_timeout", "open", "passthrough_min_bytes", "warm", "warm_max_bytes", "socket", "require_whole_view", "held_max_bytes", "use_defaults", "paths", "globs", "name", "cross_mounts"} {
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
