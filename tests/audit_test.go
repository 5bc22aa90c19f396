package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/store/journal"
	"github.com/fsguard/fsguard/internal/testenv"

	"golang.org/x/sys/unix"
)

// runToFull runs the fsguard binary with its stdout on /dev/full and
// returns its stderr and exit status.
func runToFull(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env, cmd.Stdout = dir, append(os.Environ(), env...), full
	var errb strings.Builder
	cmd.Stderr = &errb
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return errb.String(), 0
}

// auditFixture is a directory with a text file and a journal that a direct
// read of it made, and the environment that names them.
func auditFixture(t *testing.T) (dir, jpath string, env []string) {
	t.Helper()
	dir = openDir(t)
	jpath = filepath.Join(t.TempDir(), "j.db")
	env = []string{"FSGUARD_JOURNAL=" + jpath, "FSGUARD_SESSION=s", "FSGUARD_POLICY=", "FSGUARD_SOCKET="}
	writeFile(t, filepath.Join(dir, "a.txt"), "a line of text\n", 0o644)
	if _, errs, code, _ := runBinary(t, dir, env, "", "read", "a.txt"); code != 0 {
		t.Fatalf("read: %s", errs)
	}
	return dir, jpath, env
}

// TestOutputThatCannotBeWrittenFails: every command whose output cannot be
// written (stdout on /dev/full) exits non-zero and says so on stderr; an
// audit that reports success having printed nothing is a silent gap.
func TestOutputThatCannotBeWrittenFails(t *testing.T) {
	t.Parallel()
	dir, _, env := auditFixture(t)
	for _, args := range [][]string{
		{"journal", "query"}, {"journal", "query", "--format", "json"}, {"journal", "stats"},
		{"journal", "stats", "--format", "json"}, {"journal", "export", "--jsonl"}, {"journal", "tail"},
		{"journal", "tail", "--jsonl"}, {"journal", "verify"}, {"read", "a.txt"}, {"read", "a.txt", "--format", "json"},
		{"version"}, {"policy", "check"}, {"completion", "bash"}, {"help"},
	} {
		errs, code := runToFull(t, dir, env, args...)
		if code == 0 || !strings.Contains(errs, "no space left on device") {
			t.Errorf("%v > /dev/full: exit %d, stderr %q", args, code, errs)
		}
	}
}

// TestAuditCommandsNeverMakeAJournal: with no journal at its path (none
// ever, or one deleted with what remembered it), verify and every other
// journal command say there is none, exit 1, and leave nothing behind: not
// an empty journal that verifies "ok", not a directory.
func TestAuditCommandsNeverMakeAJournal(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	jpath := filepath.Join(base, "state", "j.db")
	env := []string{"FSGUARD_JOURNAL=" + jpath, "FSGUARD_POLICY="}
	for _, args := range [][]string{{"verify"}, {"query"}, {"stats"}, {"tail"}, {"export", "--jsonl"}} {
		out, errs, code, _ := runBinary(t, base, env, "", append([]string{"journal"}, args...)...)
		if code != 1 || !strings.Contains(errs, "no journal at "+jpath) || strings.Contains(out, "ok") {
			t.Errorf("journal %v with no journal: exit %d %s%s", args, code, out, errs)
		}
	}
	if names, _ := os.ReadDir(base); len(names) != 0 {
		t.Errorf("a command that reads the journal made %v", names)
	}
	// Made by a read, then deleted with everything beside it.
	dir, jpath, env := auditFixture(t)
	for _, suffix := range []string{"", "-wal", "-shm", ".id"} {
		os.Remove(jpath + suffix)
	}
	os.Remove(strings.TrimSuffix(jpath, ".db") + ".held.db")
	out, errs, code, _ := runBinary(t, dir, env, "", "journal", "verify")
	if code != 1 || !strings.Contains(errs, "no journal at") {
		t.Errorf("verify with the journal, its id and held store gone: exit %d %s%s", code, out, errs)
	}
	if _, err := os.Stat(jpath); err == nil {
		t.Error("verify made a journal")
	}
}

// TestReadOnlyCopyVerifies: a copy of a journal that no one may write —
// files 0444 in a 0555 directory, read by another user; or on a read-only
// bind mount, read by root, whom modes do not stop — verifies, is queried,
// and gains no file. Copied with a WAL that holds records (taken while a
// process had it open) as well as without one.
func TestReadOnlyCopyVerifies(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	for _, withWAL := range []bool{false, true} {
		_, jpath, _ := auditFixture(t)
		var held *journal.Journal
		if withWAL {
			// Kept open (so its WAL stays) while a record is appended and
			// the files are copied.
			j, err := journal.Open(jpath)
			if err != nil {
				t.Fatal(err)
			}
			held = j
			if err := j.Append(&journal.Record{Kind: journal.KindDenial, Path: "/x", Code: "DENIED"}); err != nil {
				t.Fatal(err)
			}
		}
		src := openDir(t)
		for _, suffix := range []string{"", "-wal", "-shm"} {
			b, err := os.ReadFile(jpath + suffix)
			if err != nil {
				if suffix == "" || withWAL {
					t.Fatalf("copying the journal: %v", err)
				}
				continue
			}
			writeFile(t, filepath.Join(src, "j.db"+suffix), string(b), 0o444)
		}
		if held != nil {
			held.Close()
		}
		if withWAL {
			if fi, err := os.Stat(filepath.Join(src, "j.db-wal")); err != nil || fi.Size() <= 32 {
				t.Fatalf("the copy's WAL holds no records: %v", err)
			}
		}
		want := "2 records"
		if !withWAL {
			want = "1 records"
		}
		check := func(who string, cred *syscall.Credential, dir string) {
			before, _ := os.ReadDir(dir)
			env := []string{"FSGUARD_JOURNAL=" + filepath.Join(dir, "j.db"), "FSGUARD_POLICY="}
			out, errs, code, _ := runBinaryAs(t, cred, dir, env, "", "journal", "verify")
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("verify of a read-only copy (WAL %v) as %s: exit %d %s%s", withWAL, who, code, out, errs)
			}
			out, errs, code, _ = runBinaryAs(t, cred, dir, env, "", "journal", "query", "--kind", "observation")
			if code != 0 || !strings.Contains(out, "a.txt") {
				t.Errorf("query of a read-only copy (WAL %v) as %s: exit %d %s%s", withWAL, who, code, out, errs)
			}
			if after, _ := os.ReadDir(dir); len(after) != len(before) {
				t.Errorf("reading a read-only copy as %s left files: %v, was %v", who, after, before)
			}
		}
		// Another user: modes hold.
		if err := os.Chmod(src, 0o555); err != nil {
			t.Fatal(err)
		}
		check("another user", &syscall.Credential{Uid: agentUID, Gid: agentGID}, src)
		// Root on a read-only bind mount.
		ro := openDir(t)
		if err := unix.Mount(src, ro, "", unix.MS_BIND, ""); err != nil {
			t.Fatalf("bind mount: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(ro, unix.MNT_DETACH) })
		if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			t.Fatalf("read-only remount: %v", err)
		}
		check("root", nil, ro)
	}
}

// follower is a running `fsguard journal tail --follow --jsonl`.
type follower struct {
	cmd   *exec.Cmd
	lines chan string
	errs  strings.Builder
	done  chan struct{}
}

func startFollower(t *testing.T, jpath string, args ...string) *follower {
	t.Helper()
	f := &follower{lines: make(chan string, 1024), done: make(chan struct{})}
	f.cmd = exec.Command(binary, append([]string{"journal", "tail", "--follow", "--jsonl", "--after", "0"}, args...)...)
	f.cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+jpath, "FSGUARD_POLICY=")
	f.cmd.Stderr = &f.errs
	out, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		io.Copy(io.Discard, out)
		f.cmd.Wait()
		close(f.done)
	}()
	t.Cleanup(func() {
		f.cmd.Process.Kill()
		<-f.done
	})
	return f
}

// next returns the next line of the stream that contains s.
func (f *follower) next(t *testing.T, s string) string {
	t.Helper()
	deadline := time.After(60 * time.Second) // a hang guard
	for {
		select {
		case l := <-f.lines:
			if strings.Contains(l, s) {
				return l
			}
		case <-f.done:
			t.Fatalf("the follower exited (%v) before a line with %q: %s", f.cmd.ProcessState, s, f.errs.String())
		case <-deadline:
			t.Fatalf("no line with %q from the follower", s)
		}
	}
}

// TestFollowerNoticesStartAnew: a follower of the journal, while the
// operator starts anew as the docs say (daemon stopped, the journal's files
// moved aside, daemon started), does not stay alive receiving nothing: it
// exits 5 saying the journal is no longer the one it followed, or, with
// --reopen, says so in its stream and follows the new journal.
func TestFollowerNoticesStartAnew(t *testing.T) {
	t.Parallel()
	for _, reopen := range []bool{false, true} {
		f := newFixture(t)
		sock := filepath.Join(f.base, "ctl.sock")
		jpath := filepath.Join(f.base, "journal.db")
		d := startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
		env := []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=s"}
		if _, errs, code, _ := runBinary(t, f.mp, env, "", "read", "README.md"); code != 0 {
			t.Fatalf("read: %s", errs)
		}
		var args []string
		if reopen {
			args = []string{"--reopen"}
		}
		fl := startFollower(t, jpath, args...)
		fl.next(t, "README.md")
		d.stop()
		aside := filepath.Join(f.base, "old")
		os.Mkdir(aside, 0o700)
		for _, n := range []string{"journal.db", "journal.db-wal", "journal.db-shm", "journal.held.db", "journal.db.id"} {
			os.Rename(filepath.Join(f.base, n), filepath.Join(aside, n))
		}
		startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
		if !reopen {
			select {
			case <-fl.done:
			case <-time.After(60 * time.Second): // a hang guard
				t.Fatalf("the follower is still running after the journal was started anew: %s", fl.errs.String())
			}
			if code := fl.cmd.ProcessState.ExitCode(); code != 5 || !strings.Contains(fl.errs.String(), "no longer the journal this follower followed") {
				t.Errorf("follower across a start anew: exit %d, %s", code, fl.errs.String())
			}
			continue
		}
		note := fl.next(t, `"reopened"`)
		var n struct{ Reopened, Journal, Was string }
		if err := json.Unmarshal([]byte(note), &n); err != nil || n.Reopened != jpath || n.Journal == n.Was || n.Journal == "" {
			t.Errorf("the stream's note of the new journal: %s (%v)", note, err)
		}
		if _, errs, code, _ := runBinary(t, f.mp, env, "", "read", "src/main.go"); code != 0 {
			t.Fatalf("read after the start anew: %s", errs)
		}
		fl.next(t, "main.go") // from the new journal, after the note
	}
}

// tracedMount starts the daemon under strace, which injects faults into
// its system calls (strace's -e inject), traced with seccomp so only the
// calls named stop it.
func tracedMount(t *testing.T, f *fixture, sock string, strace ...string) *daemon {
	t.Helper()
	via := append([]string{requireTool(t, "strace"), "-f", "--seccomp-bpf", "-qq", "-o", "/dev/null"}, strace...)
	return startMountVia(t, via, f.mp, nil, "--policy", f.policy, "--socket", sock)
}

// signalTracee sends sig to the daemon strace runs (strace passes no
// signal on), and waits for both to exit.
func signalTracee(t *testing.T, d *daemon, sig syscall.Signal) {
	t.Helper()
	children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", d.cmd.Process.Pid, d.cmd.Process.Pid))
	var pid int
	if _, err := fmt.Sscan(string(children), &pid); err != nil {
		t.Fatalf("the daemon under strace: %q", children)
	}
	syscall.Kill(pid, sig)
	select {
	case <-d.done:
	case <-time.After(testenv.HangGuard):
		d.cmd.Process.Kill()
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the daemon under strace did not exit on %v", sig)
	}
}

// TestWrittenThoughTheDirectorySyncFailed: the directory's fsync after the
// rename fails (strace injects EIO into it, and into nothing else): the
// file was replaced, so the write is reported written — exit 0, with a note
// that its durability is not confirmed — and recorded, so the journal
// verifies, rather than "cannot write" and a dangling intent that fails
// every verify from then on.
func TestWrittenThoughTheDirectorySyncFailed(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	f := newFixture(t)
	sock := filepath.Join(f.base, "ctl.sock")
	d := tracedMount(t, f, sock, "-P", f.root, "-e", "trace=fsync", "-e", "inject=fsync:error=EIO")
	env := []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=s"}
	if _, errs, code, _ := runBinary(t, f.mp, env, "", "read", "README.md"); code != 0 {
		t.Fatalf("read: %s", errs)
	}
	for _, args := range [][]string{{"write", "README.md"}, {"write", "new.txt"}} {
		out, errs, code, _ := runBinary(t, f.mp, env, "# changed\n", args...)
		if code != 0 || !strings.Contains(errs, "durability not confirmed") || !strings.Contains(out, "bytes") {
			t.Errorf("%v with the directory's fsync failing: exit %d %s%s", args, code, out, errs)
		}
		if b, _ := os.ReadFile(filepath.Join(f.root, args[1])); string(b) != "# changed\n" {
			t.Errorf("%s holds %q", args[1], b)
		}
	}
	env = []string{"FSGUARD_JOURNAL=" + d.journal, "FSGUARD_POLICY="}
	if out, errs, code, _ := runBinary(t, f.base, env, "", "journal", "verify"); code != 0 {
		t.Errorf("verify: %s%s", out, errs)
	}
	out, _, _, _ := runBinary(t, f.base, env, "", "journal", "query", "--kind", "observation", "--path", "new.txt", "--format", "json")
	if !strings.Contains(out, "durability not confirmed") {
		t.Errorf("the write's record does not say its durability is unconfirmed: %s", out)
	}
	signalTracee(t, d, syscall.SIGTERM)
}
