package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestControlSocket drives read, check and write through the daemon: paths
// are in the caller's view of the mount, never the backing tree's; the
// daemon stamps records with the caller's pid from SO_PEERCRED.
func TestControlSocket(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sock := filepath.Join(f.base, "ctl.sock")
	d := startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	client := func(stdin string, args ...string) (string, string, int, int) {
		return runBinary(t, filepath.Join(f.mp, "src"), []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=sock", "FSGUARD_JOURNAL=/nonexistent/should-not-be-used.db"}, stdin, args...)
	}
	out, errs, code, pid := client("", "read", "main.go")
	if code != 0 || !strings.HasPrefix(out, "<path>"+filepath.Join(f.mp, "src", "main.go")+"</path>") || !strings.Contains(out, "1: package main") {
		t.Fatalf("read through the socket: exit %d\n%s\n%s", code, out, errs)
	}
	for _, leak := range []string{f.root, canary} {
		for _, args := range [][]string{{"read", "main.g"}, {"read", "../.env"}, {"read", "/etc/passwd"}, {"read", "../notes.txt"}} {
			o, e, _, _ := client("", args...)
			if strings.Contains(o+e, leak) {
				t.Errorf("%v leaks %q: %s%s", args, leak, o, e)
			}
		}
	}
	if _, e, _, _ := client("", "read", "main.g"); !strings.Contains(e, `did you mean "`+filepath.Join(f.mp, "src", "main.go")+`"`) {
		t.Errorf("suggestion not in the caller's view: %s", e)
	}
	if _, e, c, _ := client("", "read", "/etc/passwd"); c != 1 || !strings.Contains(e, "outside the allowed roots") {
		t.Errorf("outside: %d %s", c, e)
	}
	// check and write: the write lands in the backing tree.
	if _, e, c, _ := client("", "check", "main.go"); c != 0 {
		t.Fatalf("check after a read: %d %s", c, e)
	}
	if o, e, c, _ := client("package main // edited\n", "write", "main.go"); c != 0 || !strings.Contains(o, filepath.Join(f.mp, "src", "main.go")) {
		t.Fatalf("write: %d %s %s", c, o, e)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "src", "main.go")); string(b) != "package main // edited\n" {
		t.Fatalf("backing file after write: %q", b)
	}
	// An edit through the daemon shows through the mount at once.
	if o, e, c, _ := client("", "read", "main.go", "--anchors"); c != 0 || !strings.Contains(o, "#") {
		t.Fatalf("anchored read: %d %s %s", c, o, e)
	}
	if o, e, c, _ := client("", "edit", "main.go", "--old", "// edited", "--new", "// edited twice"); c != 0 || !strings.Contains(o, "<type>edit</type>") {
		t.Fatalf("edit: %d %s %s", c, o, e)
	}
	if b, _ := os.ReadFile(filepath.Join(f.mp, "src", "main.go")); string(b) != "package main // edited twice\n" {
		t.Fatalf("the mount after an edit: %q", b)
	}
	if _, e, c, _ := client("x", "write", "../README.md"); c != 3 {
		t.Fatalf("write of an unread file: %d %s", c, e)
	}
	// /metrics on the socket counts what happened.
	mout := scrape(t, sock)
	// The CLI's requests are labelled as the CLI's: a label, not a decision.
	for _, want := range []string{`fsguard_reads_total{origin="read"} 2`, `fsguard_denials_total{source="cli",code="DENIED"}`, `fsguard_writes_total{origin="write"} 1`, `fsguard_fuse_op_seconds_count{op="lookup"}`} {
		if !strings.Contains(string(mout), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, mout)
		}
	}
	// The daemon's journal holds the read, stamped with the client's pid.
	cmd := exec.Command(binary, "journal", "query", "--session", "sock", "--format", "json")
	cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+d.journal)
	js, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("journal query: %v %s", err, js)
	}
	var recs []map[string]any
	json.Unmarshal(js, &recs)
	if len(recs) == 0 || recs[0]["pid"] != float64(pid) || recs[0]["path"] != filepath.Join(f.mp, "src", "main.go") {
		t.Fatalf("first record %v, want pid %d and the view path", recs[0], pid)
	}
}
