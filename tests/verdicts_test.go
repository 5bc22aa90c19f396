package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/testenv"
)

// verdictTree is a root of text files, one with a private key 1 MiB into
// it (past every sample: only the whole-content scan finds it), and
// later.txt, a text file as long as a key; it waits until every file's
// last change is more than a second old, as a saved verdict requires.
type verdictTree struct {
	base, root, mp, sock, saved string
	key                         string
}

func newVerdictTree(t *testing.T) *verdictTree {
	t.Helper()
	base := openDir(t)
	v := &verdictTree{base: base, root: filepath.Join(base, "root"), mp: filepath.Join(base, "mnt"), sock: filepath.Join(base, "ctl.sock"),
		saved: filepath.Join(base, "journal.db.verdicts"), key: realKeys(t)["rsa"]}
	testenv.Must(t, os.Mkdir(v.mp, 0o755))
	for i := range 20 {
		writeFile(t, filepath.Join(v.root, "src", fmt.Sprintf("f%02d.txt", i)), fmt.Sprintf("line %d\n", i), 0o644)
	}
	writeFile(t, filepath.Join(v.root, "deep.txt"), strings.Repeat("line of text\n", 1<<20/13)+v.key, 0o644)
	writeFile(t, filepath.Join(v.root, "later.txt"), strings.Repeat("l", len(v.key)-1)+"\n", 0o644)
	aged(t, v.root)
	return v
}

// aged waits until every file under dir last changed more than a second
// ago: the clock condition under which a verdict may be saved (see
// admit.Save), not a synchronisation.
func aged(t *testing.T, dir string) {
	t.Helper()
	var newest int64
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil {
			newest = max(newest, st.Ctim.Nano())
		}
		return nil
	})
	for time.Now().UnixNano() < newest+int64(1100*time.Millisecond) {
		time.Sleep(time.Until(time.Unix(0, newest+int64(1100*time.Millisecond))))
	}
}

// run mounts the tree under the policy extra, reads all of it the way an
// agent's grep does, and returns the content scans the daemon made, what
// the mount showed of deep.txt and later.txt, and the daemon's log.
func (v *verdictTree) run(t *testing.T, extra string) (scans float64, shown map[string]bool, log string) {
	t.Helper()
	pol := filepath.Join(v.base, "policy.toml")
	writePolicy(t, pol, []string{v.root}, extra)
	d := startMount(t, v.mp, "--policy", pol, "--socket", v.sock)
	exec.Command("grep", "-r", "line", v.mp).Run() // 1 when no line matched: not an error here
	shown = map[string]bool{}
	for _, name := range []string{"deep.txt", "later.txt", "src/f07.txt"} {
		_, err := os.ReadFile(filepath.Join(v.mp, name))
		shown[name] = err == nil
	}
	scans = counters(scrape(t, v.sock))["fsguard_admit_scans_total"]
	d.stop()
	return scans, shown, d.log.String()
}

// TestVerdictsSurviveARestart: a daemon started again on an unchanged tree
// reads and scans none of its files again; the file whose key only the
// whole scan found stays hidden.
func TestVerdictsSurviveARestart(t *testing.T) {
	t.Parallel()
	v := newVerdictTree(t)
	first, shown, _ := v.run(t, "")
	if first < 22 || shown["deep.txt"] || !shown["later.txt"] || !shown["src/f07.txt"] {
		t.Fatalf("first run: %v scans, shown %v", first, shown)
	}
	var st unix.Stat_t
	if err := unix.Lstat(v.saved, &st); err != nil || st.Uid != uint32(os.Geteuid()) || st.Mode&0o077 != 0 {
		t.Fatalf("saved verdicts %s: %v, uid %d, mode %o", v.saved, err, st.Uid, st.Mode&0o7777)
	}
	second, shown, log := v.run(t, "")
	if second != 0 || shown["deep.txt"] || !shown["later.txt"] || !shown["src/f07.txt"] {
		t.Errorf("second run: %v scans (want 0), shown %v\n%s", second, shown, log)
	}
}

// TestWalkVerdictsSurviveAKill: what the warm walk decided is saved while
// the daemon runs, in the first pause after the walk (not beside the
// agent's next command), so a daemon killed with SIGKILL, which saves
// nothing at exit, restarts with the tree's content classes and scans no
// file again.
func TestWalkVerdictsSurviveAKill(t *testing.T) {
	t.Parallel()
	v := newVerdictTree(t)
	pol := filepath.Join(v.base, "policy.toml")
	writePolicy(t, pol, []string{v.root}, "")
	d := startMount(t, v.mp, "--policy", pol, "--socket", v.sock)
	d.log.waitFor(t, "verdicts saved", 1, 60*time.Second) // a hang guard: the walk takes well under a second
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	syscall.Unmount(v.mp, syscall.MNT_DETACH)
	if scans, shown, log := v.run(t, ""); scans != 0 || shown["deep.txt"] || !shown["later.txt"] || !shown["src/f07.txt"] {
		t.Errorf("after a kill: %v scans (want 0), shown %v\n%s", scans, shown, log)
	}
}

// TestSavedVerdictsAreNotTrustedBeyondTheirVersion is the attacker's side:
// a saved class is used only for the very version, policy and file it was
// saved for, and only from a file no one but the daemon's user could
// have written.
func TestSavedVerdictsAreNotTrustedBeyondTheirVersion(t *testing.T) {
	t.Parallel()
	v := newVerdictTree(t)
	// A policy that refuses nothing does not search past the sample, so
	// deep.txt's class is "text" under it: never under one that refuses
	// keys.
	if _, shown, _ := v.run(t, "[sniff]\nrefuse = []\n"); !shown["deep.txt"] {
		t.Fatalf("deep.txt hidden under a policy that refuses nothing")
	}
	if _, shown, log := v.run(t, ""); shown["deep.txt"] {
		t.Errorf("deep.txt shown under the default policy after a run that refused nothing\n%s", log)
	}

	// The same size, the same mtime, the same inode, a key for content:
	// another version (its ctime moved), decided afresh.
	later := filepath.Join(v.root, "later.txt")
	var before unix.Stat_t
	testenv.Must(t, unix.Stat(later, &before))
	testenv.Must(t, os.WriteFile(later, []byte(v.key), 0o644))
	testenv.Must(t, os.Chtimes(later, time.Unix(before.Atim.Unix()), time.Unix(before.Mtim.Unix())))
	var after unix.Stat_t
	testenv.Must(t, unix.Stat(later, &after))
	if after.Size != before.Size || after.Ino != before.Ino || after.Mtim != before.Mtim {
		t.Fatalf("later.txt: size %d→%d, inode %d→%d, mtime %v→%v", before.Size, after.Size, before.Ino, after.Ino, before.Mtim, after.Mtim)
	}
	if _, shown, log := v.run(t, ""); shown["later.txt"] {
		t.Errorf("later.txt shown after it became a key of the same size and mtime\n%s", log)
	}

	// A saved file another user owns, or could have written, or reaches
	// through a link, or whose bytes changed, is not used at all.
	good, err := os.ReadFile(v.saved)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, why string
		spoil     func()
	}{
		{"owned by the agent", "owned by uid", func() { testenv.Must(t, os.Chown(v.saved, agentUID, agentGID)) }},
		{"writable by others", "writable by group or others", func() { testenv.Must(t, os.Chmod(v.saved, 0o666)) }},
		{"a symbolic link", "too many levels of symbolic links", func() {
			real := filepath.Join(v.base, "real.verdicts")
			testenv.Must(t, os.Rename(v.saved, real))
			testenv.Must(t, os.Symlink(real, v.saved))
		}},
		{"one byte changed", "checksum mismatch", func() {
			bad := append([]byte(nil), good...)
			bad[len(bad)/2] ^= 1
			testenv.Must(t, os.WriteFile(v.saved, bad, 0o600))
		}},
	} {
		os.Remove(v.saved)
		testenv.Must(t, os.WriteFile(v.saved, good, 0o600))
		c.spoil()
		scans, _, log := v.run(t, "")
		if scans == 0 || !strings.Contains(log, "saved verdicts not used") || !strings.Contains(log, c.why) {
			t.Errorf("saved verdicts %s: %v scans, log:\n%s", c.name, scans, log)
		}
	}
}
