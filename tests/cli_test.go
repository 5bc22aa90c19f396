package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fsguard runs the binary in dir with its own journal and session.
func fsguard(t *testing.T, dir, journal, stdin string, args ...string) (string, string, int) {
	t.Helper()
	out, errs, code, _ := runBinary(t, dir, []string{"FSGUARD_JOURNAL=" + journal, "FSGUARD_SESSION=cli", "FSGUARD_POLICY="}, stdin, args...)
	return out, errs, code
}

func TestCommandsExitCodesAndOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := filepath.Join(t.TempDir(), "j.db")
	writeFile(t, filepath.Join(dir, "a.txt"), "one\ntwo\nthree\n", 0o644)
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"usage", "", []string{}, 2, "", "usage: fsguard"},
		{"unknown command", "", []string{"frob"}, 2, "", `unknown command "frob"`},
		{"read needs one path", "", []string{"read"}, 2, "", "usage: fsguard read"},
		{"bad format", "", []string{"read", "a.txt", "--format", "xml"}, 2, "", "--format must be text or json"},
		{"zero limit", "", []string{"read", "a.txt", "--limit", "0"}, 2, "", "--limit must be a positive integer"},
		{"bad offset", "", []string{"read", "a.txt", "--offset", "x"}, 2, "", "--offset must be a positive integer"},
		{"help on stdout", "", []string{"--help"}, 0, "usage: fsguard", ""},
		{"help CMD", "", []string{"help", "read"}, 0, "usage: fsguard read", ""},
		{"CMD --help", "", []string{"write", "--help"}, 0, "usage: fsguard write", ""},
		{"--version", "", []string{"--version"}, 0, "fsguard ", ""},
		{"check before read", "", []string{"check", "a.txt"}, 3, "", "file has not been read"},
		{"write before read", "new\n", []string{"write", "a.txt"}, 3, "", "read the file, then retry"},
		{"read pages", "", []string{"read", "a.txt", "--limit", "2"}, 0, "(Showing lines 1-2 of 3. Use offset=3 to continue.)", ""},
		{"check after a partial read", "", []string{"check", "a.txt"}, 0, "fresh", ""},
		{"write", "ONE\n", []string{"write", "a.txt"}, 0, `replaced "`, ""},
		{"write again without a read", "ONE\nTWO\n", []string{"write", "a.txt"}, 0, "2 lines", ""},
		{"json refusal", "", []string{"read", "missing.txt", "--format", "json"}, 1, `"code":"NOT_FOUND"`, ""},
		{"offset past the end", "", []string{"read", "a.txt", "--offset", "99"}, 1, "", `offset 99 is out of range for "`},
		{"verify", "", []string{"journal", "verify"}, 0, "chain intact", ""},
		{"verify takes no --session", "", []string{"journal", "verify", "--session", "x"}, 2, "", "does not take -session"},
		{"query --path with a glob", "", []string{"journal", "query", "--path", "*.txt", "--format", "json"}, 0, `a.txt"`, ""},
		{"query --path that matches nothing", "", []string{"journal", "query", "--path", "*.go", "--format", "json"}, 0, "[]", ""},
		{"export", "", []string{"journal", "export", "--jsonl"}, 0, `"origin":"write"`, ""},
		{"policy check", "", []string{"policy", "check"}, 0, "[[root]]", ""},
	}
	for _, tt := range tests {
		out, errs, code := fsguard(t, dir, j, tt.stdin, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errs, tt.stderr) {
			t.Errorf("%s: exit %d (want %d)\nstdout: %s\nstderr: %s", tt.name, code, tt.code, out, errs)
		}
	}
	// An edit outside the agent makes the next write stale (exit 4).
	writeFile(t, filepath.Join(dir, "a.txt"), "edited\n", 0o644)
	if _, errs, code := fsguard(t, dir, j, "x\n", "write", "a.txt"); code != 4 || !strings.Contains(errs, "changed since it was read") {
		t.Errorf("stale write: exit %d: %s", code, errs)
	}
}

// TestShellCompletions drives each shell's completion: subcommands, a
// command's flags, journal's subcommands, and the values of --format and
// --kind. zsh and fish come from scripts/deps.sh (CI); elsewhere a missing
// shell is skipped unless FSGUARD_REQUIRE_TOOLS=1.
func TestShellCompletions(t *testing.T) {
	t.Parallel()
	shells := []struct{ shell, script string }{
		{"bash", `source <("$FSG" completion bash)
c() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _fsguard; echo "${COMPREPLY[*]}"; }
c fsguard jo; c fsguard read --no; c fsguard journal ve; c fsguard read --format ''; c fsguard journal --kind ac; c fsguard journal --format ''; c fsguard completion f`},
		// compadd, as zsh's, offers the words that start with what is typed.
		{"zsh", `compdef() { }; _files() { print FILES }
compadd() { local w; for w in "${@:#--}"; do [[ $w == ${words[CURRENT]}* ]] && print -rn -- "$w "; done }
source <("$FSG" completion zsh)
c() { words=("$@"); CURRENT=$#; _fsguard; print }
c fsguard jo; c fsguard read --no; c fsguard journal ve; c fsguard read --format ''; c fsguard journal --kind ac; c fsguard journal --format ''; c fsguard completion f`},
		{"fish", `source ("$FSG" completion fish | psub)
for l in "fsguard jo" "fsguard read --no" "fsguard journal ve" "fsguard read --format " "fsguard journal --kind ac" "fsguard journal --format " "fsguard completion f"
  echo (complete -C "$l")
end`},
	}
	for _, sh := range shells {
		t.Run(sh.shell, func(t *testing.T) {
			t.Parallel()
			requireTool(t, sh.shell)
			args := []string{"-c", sh.script}
			if sh.shell == "zsh" {
				args = append([]string{"-f"}, args...)
			}
			cmd := exec.Command(sh.shell, args...)
			cmd.Env = append(os.Environ(), "FSG="+binary)
			out, err := cmd.CombinedOutput()
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			want := []string{"journal", "--no-dedupe", "verify", "text json", "access", "table json", "fish"}
			if err != nil || len(lines) != len(want) {
				t.Fatalf("%v\n%s", err, out)
			}
			for i, w := range want {
				got := strings.Fields(lines[i])
				slices.Sort(got) // fish sorts what it offers
				exp := strings.Fields(w)
				slices.Sort(exp)
				if !slices.Equal(got, exp) {
					t.Errorf("completion %d: %q, want %q", i+1, lines[i], w)
				}
			}
		})
	}
}

// TestEditFromTheCommandLine: read --anchors, edit by anchor and by exact
// text, the refusals' exit codes, and a CRLF file kept CRLF.
func TestEditFromTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := filepath.Join(t.TempDir(), "j.db")
	p := filepath.Join(dir, "f.txt")
	writeFile(t, p, "alpha\r\nbeta\r\ngamma\r\n", 0o644)
	out, errs, code := fsguard(t, dir, j, "", "read", "f.txt", "--anchors")
	m := regexp.MustCompile(`(?m)^(2#[0-9a-f]{2}): beta$`).FindStringSubmatch(strings.ReplaceAll(out, "\r", ""))
	if code != 0 || m == nil {
		t.Fatalf("anchored read: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = fsguard(t, dir, j, "", "edit", "f.txt", "--replace", m[1], "--text", "BETA\nbeta two")
	if code != 0 || !strings.Contains(out, "<type>edit</type>") || !regexp.MustCompile(`(?m)^3#[0-9a-f]{2}: beta two$`).MatchString(out) || !strings.Contains(out, "(Edited lines 2-3. Lines after them moved down by 1. The file now has 4 lines.)") {
		t.Fatalf("edit: exit %d\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(p); string(b) != "alpha\r\nBETA\r\nbeta two\r\ngamma\r\n" {
		t.Fatalf("file after edit: %q", b)
	}
	if _, errs, code := fsguard(t, dir, j, "GAMMA\n", "edit", "f.txt", "--old", "gamma", "--new", "x", "--text", "-"); code != 2 {
		t.Fatalf("--text with --old: exit %d %s", code, errs)
	}
	if out, errs, code := fsguard(t, dir, j, "", "edit", "f.txt", "--old", "gamma", "--new", "GAMMA"); code != 0 {
		t.Fatalf("exact-text edit: exit %d %s%s", code, out, errs)
	}
	for _, tt := range []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stderr string
	}{
		{"no edit", "", []string{"edit", "f.txt"}, 2, "give exactly one edit"},
		{"two edits", "", []string{"edit", "f.txt", "--delete", "1#00", "--old", "a", "--new", "b"}, 2, "give exactly one edit"},
		{"replace without text", "", []string{"edit", "f.txt", "--replace", "1#00"}, 2, "needs the new lines"},
		{"no match", "", []string{"edit", "f.txt", "--old", "delta", "--new", "x"}, 1, "the text to replace was not found"},
		{"stale anchor", "", []string{"edit", "f.txt", "--replace", m[1], "--text", "x"}, 4, "does not match line 2"},
		{"never read", "x\n", []string{"edit", "other.txt", "--insert-after", "0", "--text", "-"}, 3, "has not been read"},
	} {
		writeFile(t, filepath.Join(dir, "other.txt"), "o\n", 0o644)
		_, errs, code := fsguard(t, dir, j, tt.stdin, tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.stderr) {
			t.Errorf("%s: exit %d (want %d): %s", tt.name, code, tt.code, errs)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "alpha\r\nBETA\r\nbeta two\r\nGAMMA\r\n" {
		t.Fatalf("file after the refusals: %q", b)
	}
}

// TestWritesNeedASession: check, write and edit without a session are usage
// errors that say how to give one; nothing is written.
func TestWritesNeedASession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "a\n", 0o644)
	env := []string{"FSGUARD_SESSION=", "FSGUARD_SOCKET=", "FSGUARD_POLICY=", "FSGUARD_JOURNAL=" + filepath.Join(t.TempDir(), "j.db")}
	for _, args := range [][]string{{"check", "a.txt"}, {"write", "a.txt"}, {"edit", "a.txt", "--old", "a", "--new", "b"}} {
		_, errs, code, _ := runBinary(t, dir, env, "b\n", args...)
		if code != 2 || !strings.Contains(errs, "--session") {
			t.Errorf("%v without a session: exit %d %s", args, code, errs)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "a\n" {
		t.Errorf("a.txt changed: %q", b)
	}
}

// TestRequiredJournalFailsClosed: with [journal] required = true a read the
// journal cannot record is refused (exit 1, saying why), and the daemon
// does not start without its journal; without it the read is shown with a
// note that nothing was recorded.
func TestRequiredJournalFailsClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "secret-free text\n", 0o644)
	writeFile(t, filepath.Join(dir, "blocker"), "a file where the journal's directory would be\n", 0o644)
	bad := "FSGUARD_JOURNAL=" + filepath.Join(dir, "blocker", "journal.db") // its directory is a file
	for _, required := range []bool{true, false} {
		pol := filepath.Join(t.TempDir(), "policy.toml")
		writePolicy(t, pol, []string{dir}, fmt.Sprintf("[journal]\nrequired = %v\n", required))
		out, errs, code, _ := runBinary(t, dir, []string{bad, "FSGUARD_POLICY=" + pol, "FSGUARD_SOCKET="}, "", "read", "a.txt")
		switch {
		case required && (code != 1 || strings.Contains(out, "secret-free") || !strings.Contains(errs, "required = true")):
			t.Errorf("required: exit %d\n%s%s", code, out, errs)
		case !required && (code != 0 || !strings.Contains(out+errs, "nothing was recorded")):
			t.Errorf("not required: exit %d\n%s%s", code, out, errs)
		}
	}
}

// TestJSONOnEveryResult: check, write, edit and status answer --format
// json with one object carrying status (and, refused, the code), with the
// exit status of the text form.
func TestJSONOnEveryResult(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := filepath.Join(t.TempDir(), "j.db")
	writeFile(t, filepath.Join(dir, "a.txt"), "one\ntwo\n", 0o644)
	type facts struct {
		Status, Code, Path, ContentID, Shown string
		Start                                int64
	}
	run := func(stdin string, wantExit int, args ...string) facts {
		t.Helper()
		out, errs, code := fsguard(t, dir, j, stdin, append(args, "--format", "json")...)
		var f facts
		if code != wantExit || errs != "" || json.Unmarshal([]byte(out), &f) != nil {
			t.Fatalf("%v: exit %d (want %d), stdout %q, stderr %q", args, code, wantExit, out, errs)
		}
		return f
	}
	if f := run("", 3, "check", "a.txt"); f.Status != "refused" || f.Code != "FS_NOT_OBSERVED" {
		t.Fatalf("check before a read: %+v", f)
	}
	fsguard(t, dir, j, "", "read", "a.txt")
	if f := run("", 0, "check", "a.txt"); f.Status != "fresh" || !strings.HasSuffix(f.Path, "a.txt") {
		t.Fatalf("check: %+v", f)
	}
	if f := run("three\n", 0, "write", "a.txt", "--id", "w1"); f.Status != "written" || f.ContentID == "" {
		t.Fatalf("write: %+v", f)
	}
	if f := run("", 0, "edit", "a.txt", "--old", "three", "--new", "four"); f.Status != "edited" || f.Start != 1 || !strings.Contains(f.Shown, "four") {
		t.Fatalf("edit: %+v", f)
	}
	if f := run("", 0, "status", "w1"); f.Status != "" {
		// status answers with its own object: state, not status
		t.Fatalf("status: %+v", f)
	}
	out, _, code := fsguard(t, dir, j, "", "status", "w1", "--format", "json")
	var st struct{ State string }
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.State != "written" {
		t.Fatalf("status: exit %d %q", code, out)
	}
	if _, errs, code := fsguard(t, dir, j, "x\n", "write", "a.txt", "--id", strings.Repeat("i", 129)); code != 2 || !strings.Contains(errs, "at most 128") {
		t.Fatalf("a 129-byte request id: exit %d %s", code, errs)
	}
	if _, errs, code := fsguard(t, dir, j, "", "check", "a.txt", "--format", "yaml"); code != 2 || !strings.Contains(errs, "--format must be text or json") {
		t.Fatalf("--format yaml: exit %d %s", code, errs)
	}
}

// TestPolicyCheckJSON: policy check --format json gives the effective
// policy, or valid false with the error and exit status 2.
func TestPolicyCheckJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.toml"), filepath.Join(dir, "bad.toml")
	writePolicy(t, good, []string{dir}, "[audit]\nexclude = [\"**/node_modules/**\"]\n")
	writeFile(t, bad, "[[root]]\npath = \"relative\"\n", 0o644)
	out, errs, code := fsguard(t, dir, "", "", "policy", "check", good, "--format", "json")
	var v struct {
		Valid  bool
		Error  string
		Policy struct {
			Audit struct {
				Opens   string
				Exclude []string
			}
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || !v.Valid || v.Policy.Audit.Opens != "record" || len(v.Policy.Audit.Exclude) != 1 {
		t.Fatalf("good policy: exit %d %s %s", code, out, errs)
	}
	out, _, code = fsguard(t, dir, "", "", "policy", "check", bad, "--format", "json")
	v.Valid, v.Error = true, ""
	if code != 2 || json.Unmarshal([]byte(out), &v) != nil || v.Valid || !strings.Contains(v.Error, "relative") {
		t.Fatalf("bad policy: exit %d %s", code, out)
	}
}
