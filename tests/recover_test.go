package tests

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/store/journal"
	"github.com/fsguard/fsguard/internal/store/sqlitedb"
	"github.com/fsguard/fsguard/internal/testenv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"golang.org/x/sys/unix"
)

// smallDisk mounts a tmpfs of size bytes-ish under the fixture's base,
// for a journal that can be run out of room.
func smallDisk(t *testing.T, f *fixture, size string) string {
	t.Helper()
	dir := filepath.Join(f.base, "jfs")
	os.Mkdir(dir, 0o755)
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=0700,size="+size); err != nil {
		t.Fatalf("a small tmpfs for the journal: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fillDisk fills the file system of dir to its last byte and returns the
// filler, whose removal frees it. A journal there has its WAL emptied
// first: SQLite keeps the room the WAL had, and the next record must need
// new space.
func fillDisk(t *testing.T, dir, journalPath string) string {
	t.Helper()
	if _, err := os.Stat(journalPath); err == nil {
		db, err := sqlitedb.Open(journalPath, sqlitedb.Full)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	filler := filepath.Join(dir, "filler")
	fill, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := fill.Write(chunk); err != nil {
			break // ENOSPC: full, to the last byte (a short write comes first)
		}
	}
	fill.Close()
	return filler
}

// journalHas is how many records of kind the journal holds whose path
// contains path.
func journalHas(t *testing.T, journalPath, kind, path string) int {
	t.Helper()
	out, errs, code, _ := runBinary(t, filepath.Dir(journalPath), []string{"FSGUARD_JOURNAL=" + journalPath, "FSGUARD_POLICY="}, "", "journal", "query", "--kind", kind, "--format", "json")
	if code != 0 {
		t.Fatalf("query: %s", errs)
	}
	var recs []map[string]any
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("query output %q: %v", out, err)
	}
	n := 0
	for _, r := range recs {
		if p, _ := r["path"].(string); strings.Contains(p, path) {
			n++
		}
	}
	return n
}

// TestRequiredJournalThatCannotBeWrittenKeepsTheDaemonDown: with
// [journal] required = true, a journal that opens but cannot be written
// (chattr +i) keeps the daemon from starting — it writes once before it
// serves anything — and the mount is never made.
func TestRequiredJournalThatCannotBeWrittenKeepsTheDaemonDown(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	testenv.RequireFUSEOrFusermount(t)
	f := newFixture(t)
	writePolicy(t, f.policy, []string{f.root}, "[journal]\nrequired = true\n")
	jpath := filepath.Join(f.base, "journal.db")
	env := []string{"FSGUARD_JOURNAL=" + jpath, "FSGUARD_POLICY=", "FSGUARD_SOCKET=", "FSGUARD_SESSION=s"}
	if _, errs, code, _ := runBinary(t, f.root, env, "", "read", "README.md"); code != 0 {
		t.Fatalf("read: %s", errs)
	}
	if out, err := exec.Command("chattr", "+i", jpath).CombinedOutput(); err != nil {
		t.Skipf("chattr +i: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", jpath).Run() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "mount", "--policy", f.policy, f.mp)
	cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+jpath)
	out, err := cmd.CombinedOutput()
	if mounted(f.mp) {
		unix.Unmount(f.mp, unix.MNT_DETACH)
		t.Fatalf("the daemon mounted with a required journal it cannot write: %s", out)
	}
	if err == nil || !strings.Contains(string(out), "required = true") {
		t.Fatalf("mount with an unwritable required journal: %v %s", err, out)
	}
}

// TestRequiredJournalRefusesTheMountWhileItCannotRecord: with [journal]
// required = true and the journal's disk full under the running daemon,
// the mount serves no file — not even one the kernel had cached — as the
// socket serves none; the denials meanwhile are kept; once there is room
// the journal records again without a restart, both doors serve, and the
// kept denials are in the journal.
func TestRequiredJournalRefusesTheMountWhileItCannotRecord(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	f := newFixture(t)
	writePolicy(t, f.policy, []string{f.root}, "[journal]\nrequired = true\n")
	jfs := smallDisk(t, f, "4m")
	jpath := filepath.Join(jfs, "j.db")
	sock := filepath.Join(f.base, "ctl.sock")
	d := startMountEnv(t, f.mp, []string{"FSGUARD_JOURNAL=" + jpath}, "--policy", f.policy, "--socket", sock)
	env := []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=s"}
	readme := filepath.Join(f.mp, "README.md")
	mustRun(t, "cat", readme) // in the kernel's cache from now on
	filler := fillDisk(t, jfs, jpath)
	// The socket's read cannot be recorded: refused, and the daemon
	// learns that its journal does not record.
	if _, errs, code, _ := runBinary(t, f.mp, env, "", "read", "src/main.go"); code == 0 || !strings.Contains(errs, "required = true") {
		t.Fatalf("socket read with the journal's disk full: exit %d %s", code, errs)
	}
	d.log.waitFor(t, "the journal stopped recording", 1, 30*time.Second)
	for _, name := range []string{"README.md", "src/main.go"} {
		if out, err := run(t, 30*time.Second, "cat", filepath.Join(f.mp, name)); err == nil {
			t.Errorf("the mount served %s while the required journal could not record it: %q", name, out)
		}
	}
	run(t, 30*time.Second, "cat", filepath.Join(f.mp, ".env")) // a denial, kept
	os.Remove(filler)
	d.log.waitFor(t, "the journal records again", 1, 60*time.Second)
	if out := mustRun(t, "cat", readme); out != "# hello\nsee src/\n" {
		t.Errorf("README.md once the journal records again: %q", out)
	}
	if _, errs, code, _ := runBinary(t, f.mp, env, "", "read", "src/main.go"); code != 0 {
		t.Errorf("socket read once the journal records again: %s", errs)
	}
	testenv.Within(t, 30*time.Second, "the denial taken on the full disk is recorded", func() error {
		if journalHas(t, jpath, "denial", ".env") == 0 {
			return fmt.Errorf("no denial of .env in the journal")
		}
		return nil
	})
}

// TestJournalRecoversWithoutRestart: a daemon started with its journal's
// disk full (the journal cannot even be made) serves reads saying that
// nothing was recorded and that it retries; once there is room it records
// again by itself — the log says so — and the next read is recorded.
func TestJournalRecoversWithoutRestart(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	f := newFixture(t)
	jfs := smallDisk(t, f, "2m")
	jpath := filepath.Join(jfs, "j.db")
	filler := fillDisk(t, jfs, jpath)
	sock := filepath.Join(f.base, "ctl.sock")
	d := startMountEnv(t, f.mp, []string{"FSGUARD_JOURNAL=" + jpath}, "--policy", f.policy, "--socket", sock)
	env := []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=s"}
	_, errs, code, _ := runBinary(t, f.mp, env, "", "read", "README.md")
	if code != 0 || !strings.Contains(errs, "nothing was recorded") || !strings.Contains(errs, "retries") {
		t.Fatalf("read with the journal's disk full: exit %d %s", code, errs)
	}
	os.Remove(filler)
	d.log.waitFor(t, "the journal records again", 1, 60*time.Second)
	_, errs, code, _ = runBinary(t, f.mp, env, "", "read", "src/main.go")
	if code != 0 || strings.Contains(errs, "nothing was recorded") {
		t.Fatalf("read once there is room: exit %d %s", code, errs)
	}
	if n := journalHas(t, jpath, "observation", "main.go"); n != 1 {
		t.Fatalf("%d observations of main.go in the journal, want 1", n)
	}
}

// TestSocketDenialOnFullDiskIsSaidUnrecorded: with the journal's disk
// full under a running daemon, a socket caller refused a denied file is
// told that its denial was not recorded (CLI and MCP wording, and a field
// in the JSON refusal); once there is room the denial is in the journal.
func TestSocketDenialOnFullDiskIsSaidUnrecorded(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	f := newFixture(t)
	jfs := smallDisk(t, f, "4m")
	jpath := filepath.Join(jfs, "j.db")
	sock := filepath.Join(f.base, "ctl.sock")
	d := startMountEnv(t, f.mp, []string{"FSGUARD_JOURNAL=" + jpath}, "--policy", f.policy, "--socket", sock)
	env := []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=s"}
	filler := fillDisk(t, jfs, jpath)
	_, errs, code, _ := runBinary(t, f.mp, env, "", "read", ".env")
	if code == 0 || !strings.Contains(errs, "DENIED") && !strings.Contains(errs, "denied") || strings.Contains(errs, canary) {
		t.Fatalf("socket read of .env on a full disk: exit %d %s", code, errs)
	}
	if !strings.Contains(errs, "this denial was not recorded") {
		t.Errorf("the CLI's refusal does not say the denial was not recorded: %s", errs)
	}
	out, _, _, _ := runBinary(t, f.mp, env, "", "read", "--format", "json", ".env")
	if !strings.Contains(out, `"unrecorded"`) {
		t.Errorf("the JSON refusal has no unrecorded field: %s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.HangGuard)
	defer cancel()
	cmd := exec.Command(binary, "mcp", "--socket", sock)
	cmd.Dir = f.mp
	cmd.Env = append(os.Environ(), "FSGUARD_SESSION=m")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": ".env"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(got, "this denial was not recorded") || strings.Contains(got, canary) {
		t.Errorf("MCP read of .env on a full disk: %q (error %v)", got, res.IsError)
	}
	os.Remove(filler)
	testenv.Within(t, 60*time.Second, "the socket's denials taken on the full disk are recorded", func() error {
		if n := journalHas(t, jpath, "denial", ".env"); n < 3 {
			return fmt.Errorf("%d denials of .env in the journal, want 3", n)
		}
		return nil
	})
	_ = d
}

// TestPID1DaemonRecoversItsPredecessorsIntents: in a container the daemon
// is PID 1 after every restart. Intents a killed predecessor left (one as
// an older version recorded it, by pid alone; one with the predecessor's
// start time) name pid 1, which lives — the new daemon itself — yet are
// resolved at its start: the writer is known by more than its pid.
func TestPID1DaemonRecoversItsPredecessorsIntents(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	unshare := requireTool(t, "unshare")
	f := newFixture(t)
	target := filepath.Join(f.root, "README.md")
	data, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	sum := fileid.ContentID(sha256.Sum256(data))
	jpath := filepath.Join(f.base, "journal.db")
	j, err := journal.Open(jpath)
	if err != nil {
		t.Fatal(err)
	}
	older := &journal.Record{Kind: journal.KindIntent, Session: "s", Path: target, RealPath: target, ContentID: sum, Writer: 1}
	started := &journal.Record{Kind: journal.KindIntent, Session: "s", Path: target, RealPath: target, ContentID: "sha256:" + strings.Repeat("0", 64), Writer: 1, WriterStart: 1}
	if err := j.Append(older, started); err != nil {
		t.Fatal(err)
	}
	j.Close()
	d := startMountVia(t, []string{unshare, "--pid", "--fork", "--kill-child=SIGTERM", "--"}, f.mp, nil, "--policy", f.policy)
	// The daemon (pid 1 in its namespace) is told to stop itself:
	// unshare, its parent, waits for it to unmount and exit.
	stop := func() {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", d.cmd.Process.Pid, d.cmd.Process.Pid))
		for _, k := range strings.Fields(string(kids)) {
			var pid int
			fmt.Sscan(k, &pid)
			unix.Kill(pid, unix.SIGTERM)
		}
		d.stop()
	}
	t.Cleanup(stop)
	d.log.waitFor(t, "resolved writes interrupted", 1, 30*time.Second)
	stop()
	r, err := journal.OpenReadOnly(jpath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	left, err := r.Dangling()
	if err != nil || len(left) != 0 {
		t.Fatalf("intents left dangling after the PID 1 daemon's start: %d %v", len(left), err)
	}
}
