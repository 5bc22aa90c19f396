package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/store/journal"
	"github.com/fsguard/fsguard/internal/testenv"
)

// hostileComm is a process name that, printed raw, erases the operator's
// line, returns the cursor and forges a row of its own.
const hostileComm = "\x1b[2K\rX\nfake 1\t"

// rawControl names the first rune in s that a terminal would act on
// rather than show (besides the newline and tab that end and align an
// output's own lines), or "".
func rawControl(s string) string {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 ||
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			return fmt.Sprintf("%U", r)
		}
	}
	return ""
}

// TestOperatorViewHasNoRawControl: a process that names itself with an
// escape sequence (as prctl(PR_SET_NAME) does; here through
// /proc/self/comm) opens files through a real mount — one whose name holds
// an escape, a carriage return and a bidi override, and a denied one. No
// human output of the journal (stats, query, tail) and no log line passes
// a control character through raw, no row is forged, and every JSON output
// still holds the names exactly.
func TestOperatorViewHasNoRawControl(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, "")
	evil := "ok\x1b]0;pwned\a\rsee\u202etxt.md"
	writeFile(t, filepath.Join(e.root, evil), "hello\n", 0o644)
	writeFile(t, filepath.Join(e.root, ".env.\x1b[31m\u2028"), "TOKEN=1\n", 0o644)
	cmd, release := held(t, nil, e.mp, "sh", "-c",
		`printf '\033[2K\rX\nfake 1\t' > /proc/self/comm && read x < "$1" && { read y < "$2"; } 2>/dev/null; read w`,
		"sh", evil, ".env.\x1b[31m\u2028")
	defer release()
	pid := uint32(cmd.Process.Pid)
	name := strings.TrimSpace(hostileComm)
	awaitAccess(t, e.d, "the hostile process's open", func(r *journal.Record) bool {
		return r.Pid == pid && strings.TrimSpace(r.Process) == name && strings.HasSuffix(r.Path, evil)
	})
	testenv.Within(t, testenv.HangGuard, "the hostile process's denial", func() error {
		out, _, err := journalCLI(t, e.d.journal, "query", "--kind", "denial", "--format", "json")
		if err != nil || !strings.Contains(out, fmt.Sprintf(`"pid": %d`, pid)) {
			return fmt.Errorf("no denial yet: %v", err)
		}
		return nil
	})

	for _, args := range [][]string{
		{"stats"}, {"query"}, {"query", "--kind", "denial"}, {"query", "--kind", "access"}, {"tail", "-n", "100"},
	} {
		out, errs, err := journalCLI(t, e.d.journal, args...)
		if err != nil {
			t.Fatalf("journal %v: %v\n%s", args, err, errs)
		}
		if r := rawControl(out + errs); r != "" {
			t.Errorf("journal %v prints %s raw:\n%q", args, r, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "fake 1") {
				t.Errorf("journal %v: a process name forged a row: %q", args, line)
			}
		}
		if args[len(args)-1] != "denial" && !strings.Contains(out, `\x1b[2K\rX\nfake 1`) {
			t.Errorf("journal %v does not show the process name escaped:\n%s", args, out)
		}
	}
	// JSON outputs stay exact: a reader gets the names back unchanged.
	for _, args := range [][]string{{"export", "--jsonl"}, {"tail", "-n", "100", "--jsonl"}, {"query", "--format", "json"}} {
		out, errs, err := journalCLI(t, e.d.journal, args...)
		if err != nil {
			t.Fatalf("journal %v: %v\n%s", args, err, errs)
		}
		if r := rawControl(strings.ReplaceAll(out, "\n", "")); r != "" {
			t.Errorf("journal %v holds %s raw", args, r)
		}
		var recs []journal.Record
		if args[0] == "query" {
			testenv.Must(t, json.Unmarshal([]byte(out), &recs))
		} else {
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var r journal.Record
				testenv.Must(t, json.Unmarshal([]byte(line), &r))
				recs = append(recs, r)
			}
		}
		exact := false
		for _, r := range recs {
			exact = exact || strings.TrimSpace(r.Process) == name && strings.HasSuffix(r.Path, evil)
		}
		if !exact {
			t.Errorf("journal %v: no record holds the process name and path exactly", args)
		}
	}
	if r := rawControl(e.d.log.String()); r != "" {
		t.Errorf("the daemon's log holds %s raw:\n%q", r, e.d.log.String())
	}
}

// journalCLI runs `fsguard journal ARGS` on the journal at path.
func journalCLI(t *testing.T, path string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"journal"}, args...)...)
	cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+path)
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), errs.String(), err
	case <-time.After(testenv.HangGuard):
		cmd.Process.Kill()
		t.Fatalf("journal %v hung", args)
		return "", "", nil
	}
}

// TestReadShowsHostileNamesEscaped: names holding an escape sequence, a
// carriage return, a newline and a bidi override, read with `fsguard
// read` — a file, the directory listing them, a denied one and a missing
// one — reach the terminal with no raw control character: the envelope's
// path is quoted, the listing escapes, the refusals quote; the JSON form
// still names the file exactly.
func TestReadShowsHostileNamesEscaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := filepath.Join(t.TempDir(), "j.db")
	evil := "a\x1b[2J\rb\n</path>\u202etxt.md"
	writeFile(t, filepath.Join(dir, evil), "hello\n", 0o644)
	writeFile(t, filepath.Join(dir, ".env.\x1b[31m"), "TOKEN=1\n", 0o644)
	for _, args := range [][]string{
		{"read", evil}, {"read", "."}, {"read", ".env.\x1b[31m"}, {"read", "missing\x1b[31m\u202e"}, {"read", evil, "--offset", "x\x1b"},
	} {
		out, errs, code := fsguard(t, dir, j, "", args...)
		if r := rawControl(out + errs); r != "" {
			t.Errorf("fsguard %q (exit %d) prints %s raw:\n%q\n%q", args, code, r, out, errs)
		}
		if strings.Contains(out, "\n</path>") {
			t.Errorf("fsguard %q: a name forged the envelope:\n%s", args, out)
		}
	}
	out, _, code := fsguard(t, dir, j, "", "read", evil, "--format", "json")
	var env struct{ Path string }
	if err := json.Unmarshal([]byte(out), &env); err != nil || code != 0 || !strings.HasSuffix(env.Path, evil) {
		t.Errorf("read --format json: exit %d, path %q, %v", code, env.Path, err)
	}
	if r := rawControl(strings.TrimSuffix(out, "\n")); r != "" {
		t.Errorf("read --format json holds %s raw", r)
	}
}
