package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/store/sqlitedb"
	"github.com/fsguard/fsguard/internal/testenv"

	"golang.org/x/sys/unix"
)

// TestFullDiskWritesNothing: with the journal's disk full under a running
// daemon, a write is not made (record first: its intent cannot be
// recorded), says so, and leaves the target as it was; once there is room
// again the write goes through and the journal verifies. A journal that
// cannot even be opened for lack of space says the disk is full, not that
// it is damaged.
func TestFullDiskWritesNothing(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	f := newFixture(t)
	jfs := filepath.Join(f.base, "jfs")
	os.Mkdir(jfs, 0o755)
	if err := unix.Mount("tmpfs", jfs, "tmpfs", 0, "size=4m"); err != nil {
		t.Fatalf("a small tmpfs for the journal: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(jfs, unix.MNT_DETACH) })
	journalPath := filepath.Join(jfs, "j.db")
	sock := filepath.Join(f.base, "ctl.sock")
	d := startMountEnv(t, f.mp, []string{"FSGUARD_JOURNAL=" + journalPath}, "--policy", f.policy, "--socket", sock)
	env := []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=s"}
	if _, errs, code, _ := runBinary(t, f.mp, env, "", "read", "README.md"); code != 0 {
		t.Fatalf("read: %s", errs)
	}
	// SQLite's WAL keeps the room it had: empty it, so the next record
	// needs new space (as it does whenever the WAL was checkpointed).
	db, err := sqlitedb.Open(journalPath, sqlitedb.Full)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	filler := filepath.Join(jfs, "filler")
	fill, _ := os.Create(filler)
	chunk := make([]byte, 64<<10)
	for {
		if _, err := fill.Write(chunk); err != nil {
			break // ENOSPC: the disk is full
		}
	}
	fill.Close()
	_, errs, code, _ := runBinary(t, f.mp, env, "# changed\n", "write", "README.md")
	if code != 1 || !strings.Contains(errs, "nothing was written") {
		t.Errorf("write on a full journal disk: exit %d %s", code, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "README.md")); string(b) != "# hello\nsee src/\n" {
		t.Errorf("the target changed although its write could not be recorded: %q", b)
	}
	// A process that opens the journal now is told the disk is full.
	_, errs, _, _ = runBinary(t, f.root, []string{"FSGUARD_JOURNAL=" + journalPath}, "", "journal", "verify")
	if strings.Contains(errs, "damaged") {
		t.Errorf("a full disk reported as damage: %s", errs)
	}
	os.Remove(filler)
	if _, errs, code, _ := runBinary(t, f.mp, env, "# changed\n", "write", "README.md"); code != 0 {
		t.Errorf("write with room again: %s", errs)
	}
	d.stop()
	if out, errs, code, _ := runBinary(t, f.root, []string{"FSGUARD_JOURNAL=" + journalPath}, "", "journal", "verify"); code != 0 {
		t.Errorf("verify: %s%s", out, errs)
	}
}

// TestReplacedJournalIsReported: a journal deleted, or truncated to
// nothing, is recreated empty by SQLite; the held-content store beside it
// remembers the journal it belongs to, so verify and every command say the
// journal was replaced instead of trusting an empty one.
func TestReplacedJournalIsReported(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"deleted", "truncated"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			jpath := filepath.Join(t.TempDir(), "j.db")
			env := []string{"FSGUARD_JOURNAL=" + jpath, "FSGUARD_SESSION=s", "FSGUARD_POLICY=", "FSGUARD_SOCKET="}
			writeFile(t, filepath.Join(dir, "a.txt"), "a line of text\n", 0o644)
			if _, errs, code, _ := runBinary(t, dir, env, "", "read", "a.txt"); code != 0 {
				t.Fatalf("read: %s", errs)
			}
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if how == "deleted" || suffix != "" {
					os.Remove(jpath + suffix)
				} else {
					os.Truncate(jpath, 0)
				}
			}
			out, errs, code, _ := runBinary(t, dir, env, "", "journal", "verify")
			if code == 0 || !strings.Contains(errs, "deleted, emptied or replaced") {
				t.Errorf("verify after the journal was %s: exit %d %s%s", how, code, out, errs)
			}
			if _, errs, code, _ := runBinary(t, dir, env, "x\n", "write", "a.txt"); code == 0 || !strings.Contains(errs, "deleted, emptied or replaced") {
				t.Errorf("write after the journal was %s: exit %d %s", how, code, errs)
			}
		})
	}
}

// TestRootFollowsItsPath: a root renamed away and made anew, or deleted
// and recreated, is noticed (a log line); the view shows what is at the
// configured path, and a missing root's names answer ENOENT, not EIO.
func TestRootFollowsItsPath(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d := startMount(t, f.mp, "--policy", f.policy)
	mustRun(t, "cat", filepath.Join(f.mp, "README.md"))
	// Renamed away, and a new directory in its place.
	if err := os.Rename(f.root, f.root+".old"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(f.root, "new.txt"), "the new root\n", 0o644)
	testenv.Within(t, 10*time.Second, "the view follows the configured path", func() error {
		return shows(filepath.Join(f.mp, "new.txt"), []byte("the new root\n"))
	})

	if _, err := os.Stat(filepath.Join(f.mp, "README.md")); err == nil {
		t.Error("the renamed-away root is still served")
	}
	d.log.waitFor(t, "the view follows its configured path", 1, 10*time.Second)
	// Deleted: its names are simply not there.
	os.RemoveAll(f.root)
	d.log.waitFor(t, "a root is missing", 1, 10*time.Second)
	if _, err := os.Stat(filepath.Join(f.mp, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("a name of a missing root: %v, want ENOENT", err)
	}
	// Made again: served again.
	writeFile(t, filepath.Join(f.root, "back.txt"), "back\n", 0o644)
	testenv.Within(t, 10*time.Second, "a recreated root is served", func() error {
		return shows(filepath.Join(f.mp, "back.txt"), []byte("back\n"))
	})

}

// TestJournalErrorsNameTheCause: a user who may not write the journal's
// directory is told so, not "unable to open database file"; a command that
// only reads the journal says there is none.
func TestJournalErrorsNameTheCause(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	dir := openDir(t) // root's, 0755: others may enter, not write
	writeFile(t, filepath.Join(dir, "a.txt"), "a line\n", 0o644)
	agent := &syscall.Credential{Uid: agentUID, Gid: agentGID}
	env := []string{"FSGUARD_JOURNAL=" + filepath.Join(dir, "j.db"), "FSGUARD_POLICY=", "FSGUARD_SOCKET=", "FSGUARD_SESSION=s"}
	_, errs, _, _ := runBinaryAs(t, agent, dir, env, "", "read", "a.txt")
	if !strings.Contains(errs, "may not write in") || strings.Contains(errs, "unable to open database file") {
		t.Errorf("journal in a directory the user may not write: %s", errs)
	}
	_, errs, code, _ := runBinaryAs(t, agent, dir, env, "", "journal", "stats")
	if code != 1 || !strings.Contains(errs, "no journal at") || strings.Contains(errs, "unable to open database file") {
		t.Errorf("journal stats with no journal: exit %d %s", code, errs)
	}
}

// TestDeletedWALLosesNothing: the journal's WAL deleted under the running
// daemon, reads going on meanwhile, then the daemon killed with SIGKILL and
// started again: every read it acknowledged as recorded is in the journal
// (or verify names the records lost — never "intact" with records gone),
// the loss was logged, and the daemon recorded again by itself, into a
// fresh WAL, without a restart.
func TestDeletedWALLosesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 20 {
		writeFile(t, filepath.Join(f.root, "notes", fmt.Sprintf("n%02d.txt", i)), fmt.Sprintf("note %d\n", i), 0o644)
	}
	sock := filepath.Join(f.base, "ctl.sock")
	d := startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	env := []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=wal"}
	for i := range 20 {
		if _, errs, code, _ := runBinary(t, f.mp, env, "", "read", fmt.Sprintf("notes/n%02d.txt", i)); code != 0 {
			t.Fatalf("read %d: %s", i, errs)
		}
	}
	if err := os.Remove(d.journal + "-wal"); err != nil {
		t.Fatal(err)
	}
	// Reads go on: each says whether it was recorded.
	acked := 20
	for i := range 10 {
		_, errs, code, _ := runBinary(t, f.mp, env, "", "read", fmt.Sprintf("notes/n%02d.txt", i))
		if code != 0 {
			t.Fatalf("read after the WAL was deleted: %s", errs)
		}
		if !strings.Contains(errs, "nothing was recorded") {
			acked++
		}
	}
	d.log.waitFor(t, "journal files lost", 1, 60*time.Second)
	d.log.waitFor(t, "the journal records again", 1, 60*time.Second)
	if _, errs, code, _ := runBinary(t, f.mp, env, "", "read", "README.md"); code != 0 || strings.Contains(errs, "nothing was recorded") {
		t.Fatalf("read once the journal records again: exit %d %s", code, errs)
	}
	acked++
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	syscall.Unmount(f.mp, syscall.MNT_DETACH)
	jenv := []string{"FSGUARD_JOURNAL=" + d.journal, "FSGUARD_POLICY="}
	out, errs, code, _ := runBinary(t, f.base, jenv, "", "journal", "query", "--session", "wal", "--kind", "observation", "--format", "json")
	if code != 0 {
		t.Fatalf("query: %s", errs)
	}
	var recs []map[string]any
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatal(err)
	}
	vout, verrs, vcode, _ := runBinary(t, f.base, jenv, "", "journal", "verify")
	if len(recs) < acked && (vcode == 0 || !strings.Contains(vout+verrs, "acknowledged")) {
		t.Fatalf("%d of the %d acknowledged reads survived the WAL's deletion and SIGKILL, and verify says: %s%s", len(recs), acked, vout, verrs)
	}
	if len(recs) >= acked && vcode != 0 {
		t.Fatalf("verify: %s%s", vout, verrs)
	}
	// Started again on the same journal: it opens, and verify still says
	// what it said.
	d = startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	d.stop()
	if _, _, again, _ := runBinary(t, f.base, jenv, "", "journal", "verify"); (again == 0) != (vcode == 0) {
		t.Fatalf("verify after a restart exits %d, before it %d", again, vcode)
	}
}
