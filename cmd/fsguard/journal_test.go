package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJournalSubcommands: each journal subcommand answers with its own
// output and exit status, and refuses what it does not take, in its own
// words, over a journal that two reads made.
func TestJournalSubcommands(t *testing.T) {
	dir := t.TempDir()
	jpath := filepath.Join(dir, "j.db")
	t.Setenv("FSGUARD_JOURNAL", jpath)
	root := filepath.Join(dir, "root")
	pol := filepath.Join(dir, "policy.toml")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo\n"), 0o644)
	os.WriteFile(pol, []byte("[[root]]\npath = \""+root+"\"\n"), 0o644)
	for _, args := range [][]string{
		{"read", filepath.Join(root, "a.txt"), "--session", "s1"},
		{"read", filepath.Join(root, "a.txt"), "--session", "s2", "--limit", "1"},
	} {
		run(append(args, "--policy", pol), &strings.Builder{}, &strings.Builder{})
	}
	call := func(args ...string) (string, string, int) {
		var stdout, stderr strings.Builder
		code := run(append([]string{"journal"}, args...), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	for _, c := range []struct {
		args         []string
		exit         int
		stdout, errs string // each a prefix of what it must be
	}{
		{nil, exitUsage, "", "usage: fsguard journal <query|tail|stats|verify|export>"},
		{[]string{"bogus"}, exitUsage, "", "Error: unknown journal command \"bogus\"\nusage: fsguard journal"},
		{[]string{"stats", "--session", "x"}, exitUsage, "", "Error: journal stats does not take -session (it takes: -policy, -format)\n"},
		{[]string{"export"}, exitUsage, "", "Error: export needs --jsonl (the only export format)\n"},
		{[]string{"tail", "--append-to", filepath.Join(dir, "out"), "--after", "1"}, exitUsage, "", "Error: --append-to resumes after the file's last record; it takes no --after\n"},
		{[]string{"query", "--since", "soon"}, exitUsage, "", "Error: time \"soon\" is neither RFC 3339 nor a duration like 90m\n"},
		{[]string{"query", "--session", "s2"}, 0, "SEQ  TIME", ""},
		{[]string{"verify"}, 0, "ok: " + jpath + ": ", ""},
		{[]string{"stats"}, 0, "journal ", ""},
	} {
		out, errs, code := call(c.args...)
		if code != c.exit || !strings.HasPrefix(out, c.stdout) || !strings.HasPrefix(errs, c.errs) || (c.errs == "" && errs != "") {
			t.Errorf("journal %v: exit %d\nstdout %q\nstderr %q\nwant exit %d, stdout %q..., stderr %q...", c.args, code, out, errs, c.exit, c.stdout, c.errs)
		}
	}
	if st, _, _ := call("stats"); !strings.Contains(st, jpath+"\nrecords ") || !strings.Contains(st, "\nreads ") {
		t.Errorf("stats: %q", st)
	}
	// The same records in every form: a JSON array, JSON lines, the last n.
	js, _, _ := call("query", "--format", "json")
	var all []map[string]any
	if err := json.Unmarshal([]byte(js), &all); err != nil || len(all) != 2 {
		t.Fatalf("query --format json: %v, %d records\n%s", err, len(all), js)
	}
	if lines, _, _ := call("export", "--jsonl"); strings.Count(lines, "\n") != len(all) {
		t.Errorf("export --jsonl: %d lines for %d records", strings.Count(lines, "\n"), len(all))
	}
	if lines, _, _ := call("tail", "-n", "1", "--jsonl"); strings.Count(lines, "\n") != 1 || !strings.Contains(lines, `"session":"s2"`) {
		t.Errorf("tail -n 1 --jsonl: %q", lines)
	}
	if one, _, _ := call("query", "--session", "s2", "--format", "json"); !strings.Contains(one, `"session": "s2"`) || strings.Contains(one, `"session": "s1"`) {
		t.Errorf("query --session s2: %s", one)
	}
}
