package tests

import (
	"os"
	"os/exec"
	"path/filepath"
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
		{"zero limit", "", []string{"read", "a.txt", "--limit", "0"}, 1, "", "--limit must be a positive integer"},
		{"check before read", "", []string{"check", "a.txt"}, 3, "", "file has not been read"},
		{"write before read", "new\n", []string{"write", "a.txt"}, 3, "", "read the file, then retry"},
		{"read pages", "", []string{"read", "a.txt", "--limit", "2"}, 0, "(Showing lines 1-2 of 3. Use offset=3 to continue.)", ""},
		{"check after a partial read", "", []string{"check", "a.txt"}, 0, "fresh", ""},
		{"write", "ONE\n", []string{"write", "a.txt"}, 0, `replaced "`, ""},
		{"write again without a read", "ONE\nTWO\n", []string{"write", "a.txt"}, 0, "2 lines", ""},
		{"json refusal", "", []string{"read", "missing.txt", "--format", "json"}, 1, `"code":"NOT_FOUND"`, ""},
		{"offset past the end", "", []string{"read", "a.txt", "--offset", "99"}, 1, "", `offset 99 is out of range for "`},
		{"verify", "", []string{"journal", "verify"}, 0, "chain intact", ""},
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

func TestBashCompletion(t *testing.T) {
	script := `source <("$FSG" completion bash)
COMP_WORDS=(fsguard jo); COMP_CWORD=1; _fsguard; echo "1:${COMPREPLY[*]}"
COMP_WORDS=(fsguard read --no); COMP_CWORD=2; _fsguard; echo "2:${COMPREPLY[*]}"
COMP_WORDS=(fsguard journal ve); COMP_CWORD=2; _fsguard; echo "3:${COMPREPLY[*]}"`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "FSG="+binary)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1:journal") || !strings.Contains(string(out), "2:--no-dedupe") || !strings.Contains(string(out), "3:verify") {
		t.Fatalf("completion: %v\n%s", err, out)
	}
}
