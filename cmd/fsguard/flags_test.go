package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagMistakesAreOneLine: a flag a command does not take is one line
// on stderr naming it, the flag most likely meant when one is near, and
// --help (exit 2), never the whole usage; --help still shows the usage.
func TestFlagMistakesAreOneLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string // the whole of stderr
		exit int
	}{
		{[]string{"read", "--lmit", "3", "README.md"}, "Error: fsguard read has no flag --lmit; did you mean --limit? (fsguard read --help lists its flags)\n", 2},
		{[]string{"read", "README.md", "--ofset=3"}, "Error: fsguard read has no flag --ofset; did you mean --offset? (fsguard read --help lists its flags)\n", 2},
		{[]string{"journal", "tail", "--follwo"}, "Error: fsguard journal tail has no flag --follwo; did you mean --follow? (fsguard journal tail --help lists its flags)\n", 2},
		{[]string{"journal", "query", "--sess", "a"}, "Error: fsguard journal query has no flag --sess; did you mean --session? (fsguard journal query --help lists its flags)\n", 2},
		{[]string{"read", "--zzz", "README.md"}, "Error: fsguard read has no flag --zzz (fsguard read --help lists its flags)\n", 2},
		{[]string{"version", "--bogus"}, "Error: fsguard version has no flag --bogus (fsguard version --help lists its flags)\n", 2},
		{[]string{"health", "--socket"}, "Error: flag needs an argument: -socket (fsguard health --help lists its flags)\n", 2},
	} {
		var stdout, stderr strings.Builder
		if code := run(c.args, &stdout, &stderr); code != c.exit || stderr.String() != c.want || stdout.Len() != 0 {
			t.Errorf("fsguard %v: exit %d, stdout %q, stderr %q; want exit %d, stderr %q", c.args, code, stdout.String(), stderr.String(), c.exit, c.want)
		}
	}
	var stdout, stderr strings.Builder
	if code := run([]string{"read", "--help"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "usage: fsguard read") || !strings.Contains(stdout.String(), "-limit") {
		t.Errorf("read --help: exit %d, %q", code, stdout.String())
	}
}

// TestPlainCommandsSpeakJSON: version, health, unmount and journal verify answer one JSON
// object with --format json, success or not, with the exit status of text.
func TestPlainCommandsSpeakJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		exit int
		ok   bool
		key  string
	}{
		{[]string{"version", "--format", "json"}, 0, true, "version"},
		{[]string{"health", "--format", "json", "--socket", "/nonexistent/fsguard.sock"}, 1, false, "error"},
		{[]string{"unmount", "--format", "json", "/nonexistent/mnt"}, 1, false, "error"},
	} {
		var stdout, stderr strings.Builder
		code := run(c.args, &stdout, &stderr)
		var got map[string]any
		if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil || code != c.exit || got["ok"] != c.ok || got[c.key] == nil || stderr.Len() != 0 {
			t.Errorf("fsguard %v: exit %d, stdout %q (%v), stderr %q", c.args, code, stdout.String(), err, stderr.String())
		}
	}
	// journal verify, on a journal a read made.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "policy.toml"), []byte("[[root]]\npath = \""+dir+"\"\n[journal]\npath = \""+filepath.Join(dir, "j.db")+"\"\n"), 0o644)
	pol := filepath.Join(dir, "policy.toml")
	run([]string{"read", filepath.Join(dir, "a.txt"), "--policy", pol}, &strings.Builder{}, &strings.Builder{})
	var out, errs strings.Builder
	var v struct {
		OK      bool
		Records int
	}
	if code := run([]string{"journal", "verify", "--format", "json", "--policy", pol}, &out, &errs); code != 0 || json.Unmarshal([]byte(out.String()), &v) != nil || !v.OK || v.Records != 1 {
		t.Errorf("journal verify --format json: exit %d, %q, %q", code, out.String(), errs.String())
	}
	var stdout, stderr strings.Builder
	if code := run([]string{"version", "--format", "yaml"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("version --format yaml: exit %d", code)
	}
}
