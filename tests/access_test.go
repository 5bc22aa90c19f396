package tests

import (
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
)

// accessEnv is a mount whose opens are recorded, over a tree with a
// config file, a thousand small files, a Python module, a git repository
// and an excluded node_modules.
type accessEnv struct {
	root, mp string
	d        *daemon
}

func newAccessEnv(t *testing.T, audit string) *accessEnv {
	t.Helper()
	testenv.RequireRoot(t, needsRoot)
	base := openDir(t)
	e := &accessEnv{root: filepath.Join(base, "root"), mp: filepath.Join(base, "mnt")}
	writeFile(t, filepath.Join(e.root, "conf", "prod.yaml"), "db: prod\ntoken_ref: vault:prod\n", 0o644)
	for i := range 1000 {
		writeFile(t, filepath.Join(e.root, "many", fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d.txt", i)), fmt.Sprintf("line %d\nneedle %d\n", i, i), 0o644)
	}
	writeFile(t, filepath.Join(e.root, "pkg", "mod.py"), "ANSWER = 42\n", 0o644)
	writeFile(t, filepath.Join(e.root, "node_modules", "x", "index.js"), "module.exports = 1\n", 0o644)
	writeFile(t, filepath.Join(e.root, "sentinel.txt"), "after the excluded one\n", 0o644)
	if err := os.Mkdir(e.mp, 0o755); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(base, "policy.toml")
	writePolicy(t, policy, []string{e.root}, audit)
	e.d = startMount(t, e.mp, "--allow-other", "--session", "agent-7", "--policy", policy)
	return e
}

// accesses reads the access records now in the daemon's journal.
func accesses(t *testing.T, d *daemon) []*journal.Record {
	t.Helper()
	j, err := journal.Open(d.journal)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	recs, err := j.Query(journal.Filter{Kind: journal.KindAccess})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// awaitAccess waits until the journal holds an access record that ok
// accepts, and returns it.
func awaitAccess(t *testing.T, d *daemon, what string, ok func(*journal.Record) bool) *journal.Record {
	t.Helper()
	var found *journal.Record
	testenv.Within(t, 60*time.Second, what, func() error {
		recs := accesses(t, d)
		for _, r := range recs {
			if ok(r) {
				found = r
				return nil
			}
		}
		var have strings.Builder
		for _, r := range recs[max(0, len(recs)-20):] {
			fmt.Fprintf(&have, "\n  pid %d %q uid %d %q %s", r.Pid, r.Process, r.Uid, r.Path, r.Detail)
		}
		log := d.log.String()
		return fmt.Errorf("no such access record among the %d there (the last of them:%s); the daemon's log ends: %s", len(recs), have.String(), log[max(0, len(log)-2000):])
	})

	return found
}

// held starts a process whose stdin stays open until release is called:
// it lives on while the test waits for its records.
func held(t *testing.T, cred *syscall.Credential, dir, name string, args ...string) (*exec.Cmd, func() string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if cred != nil {
		testenv.As(cmd, cred.Uid, cred.Gid, cred.Groups...)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() string {
		if !released {
			released = true
			in.Close()
			cmd.Wait()
		}
		return out.String()
	}
	t.Cleanup(func() { release() })
	return cmd, release
}

// TestAccessRecordsNameWhoOpenedWhat: what a shell tool opens through the
// mount is journaled with its pid, process name, uid and the path where
// it saw the file, and the file version an observation would name.
func TestAccessRecordsNameWhoOpenedWhat(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, "[audit]\nexclude = [\"**/node_modules/**\"]\n")
	conf := filepath.Join(e.mp, "conf", "prod.yaml")

	cat, release := held(t, nil, e.mp, "cat", "conf/prod.yaml", "-")
	r := awaitAccess(t, e.d, "cat's open", func(r *journal.Record) bool { return r.Pid == uint32(cat.Process.Pid) })
	if out := release(); !strings.Contains(out, "db: prod") {
		t.Fatalf("cat read %q", out)
	}
	if r.Path != conf || r.Process != "cat" || r.Uid != 0 || r.Session != "agent-7" || r.Opens != 1 {
		t.Fatalf("cat's record: %+v", r)
	}
	if want := filepath.Join(e.root, "conf", "prod.yaml"); r.RealPath != want {
		t.Fatalf("realPath %q, want %q", r.RealPath, want)
	}
	// The version is named as an observation of it names it.
	out, errs, code := fsguard(t, e.root, filepath.Join(t.TempDir(), "j.db"), "", "read", "--format", "json", "conf/prod.yaml")
	if code != 0 {
		t.Fatalf("read: %d %s", code, errs)
	}
	var obs struct {
		Observation struct {
			StatID string `json:"statId"`
		} `json:"observation"`
	}
	if err := json.Unmarshal([]byte(out), &obs); err != nil || obs.Observation.StatID == "" {
		t.Fatalf("read output: %v %s", err, out)
	}
	if r.StatID != obs.Observation.StatID {
		t.Fatalf("access statId %s, the observation of the same version says %s", r.StatID, obs.Observation.StatID)
	}

	// An access is not an observation: a write precondition is not met.
	_, errs, code = fsguard(t, e.root, e.d.journal, "", "check", "conf/prod.yaml", "--session", "agent-7")
	if code != 3 || !strings.Contains(errs, "has not been read") {
		t.Fatalf("check after a mere open: exit %d %s", code, errs)
	}

	// grep -r over a thousand files: one record per file, all grep's.
	grep, release := held(t, nil, e.mp, "grep", "-r", "needle 999", "many", "-")
	testenv.Within(t, 60*time.Second, "grep's thousand opens", func() error {
		files := map[string]bool{}
		for _, r := range accesses(t, e.d) {
			if r.Pid == uint32(grep.Process.Pid) {
				if r.Process != "grep" || !strings.HasPrefix(r.Path, filepath.Join(e.mp, "many")+"/") || r.StatID == "" {
					return fmt.Errorf("grep's record %+v", r)
				}
				files[r.Path] = true
			}
		}
		if len(files) != 1000 {
			return fmt.Errorf("%d of 1000 files recorded", len(files))
		}
		return nil
	})

	if out := release(); !strings.Contains(out, "needle 999") {
		t.Fatalf("grep found %q", out)
	}

	// A Python import.
	py, release := held(t, nil, e.mp, "python3", "-c", "import sys; sys.path.insert(0, 'pkg'); import mod; print(mod.ANSWER); sys.stdin.read()")
	awaitAccess(t, e.d, "python's import", func(r *journal.Record) bool {
		return r.Pid == uint32(py.Process.Pid) && r.Process == "python3" && r.Path == filepath.Join(e.mp, "pkg", "mod.py")
	})
	if out := release(); strings.TrimSpace(out) != "42" {
		t.Fatalf("python printed %q", out)
	}

	// Another user's open carries that user's uid.
	other, release := held(t, &syscall.Credential{Uid: agentUID, Gid: agentGID}, e.mp, "cat", "conf/prod.yaml", "-")
	r = awaitAccess(t, e.d, "the second user's open", func(r *journal.Record) bool { return r.Pid == uint32(other.Process.Pid) })
	release()
	if r.Uid != agentUID || r.Process != "cat" || r.Path != conf {
		t.Fatalf("second user's record: %+v", r)
	}

	// An excluded path leaves no record; the sentinel opened after it
	// by the same process shows the batch was written.
	ex, release := held(t, nil, e.mp, "cat", "node_modules/x/index.js", "sentinel.txt", "-")
	awaitAccess(t, e.d, "the sentinel", func(r *journal.Record) bool { return r.Pid == uint32(ex.Process.Pid) })
	release()
	for _, r := range accesses(t, e.d) {
		if strings.Contains(r.Path, "node_modules") {
			t.Fatalf("an excluded open was recorded: %+v", r)
		}
	}

	// The operator's one command: which files did python3 open?
	out, errs, code = fsguard(t, e.root, e.d.journal, "", "journal", "query", "--kind", "access", "--process", "python3", "--format", "json")
	if code != 0 {
		t.Fatalf("query: %d %s", code, errs)
	}
	var recs []journal.Record
	if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) == 0 {
		t.Fatalf("query output: %v %s", err, out)
	}
	for _, r := range recs {
		if r.Process != "python3" || r.Kind != journal.KindAccess {
			t.Fatalf("query --process python3 gave %+v", r)
		}
	}
	out, _, _ = fsguard(t, e.root, e.d.journal, "", "journal", "stats", "--format", "json")
	var st journal.Stats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if g := st.Accesses["grep"]; g == nil || g.Files < 1000 || g.Versions < 1000 {
		t.Fatalf("stats for grep: %+v", g)
	}
}

// TestAccessGitThroughTheMount: git log -p reads the repository's objects
// through the mount, and each open is git's.
func TestAccessGitThroughTheMount(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := openDir(t)
	root, mp := filepath.Join(base, "root"), filepath.Join(base, "mnt")
	repo := filepath.Join(root, "repo")
	// A diff larger than a pipe: git blocks writing it until the test
	// reads, so it lives while its opens are named.
	writeFile(t, filepath.Join(repo, "big.txt"), strings.Repeat("a line of the big file\n", 20000), 0o644)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@e"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "big")
	os.Mkdir(mp, 0o755)
	policy := filepath.Join(base, "policy.toml")
	writePolicy(t, policy, []string{root}, "")
	d := startMount(t, mp, "--session", "agent-7", "--policy", policy)

	cmd := exec.Command("git", "-c", "safe.directory=*", "-C", filepath.Join(mp, "repo"), "log", "-p")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	awaitAccess(t, d, "git's opens", func(r *journal.Record) bool {
		return r.Pid == uint32(cmd.Process.Pid) && r.Process == "git" && strings.HasSuffix(r.Path, "/repo/.git/HEAD")
	})
	b, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil || !strings.Contains(string(b), "+a line of the big file") {
		t.Fatalf("git log -p through the mount: %v, %d bytes", err, len(b))
	}
	awaitAccess(t, d, "git's object reads", func(r *journal.Record) bool {
		return r.Pid == uint32(cmd.Process.Pid) && r.Process == "git" && strings.Contains(r.Path, "/repo/.git/objects/")
	})
}

// TestAccessSeenFromAnotherMountNamespace: a container sees the mount
// through its own bind of it; its opens are recorded with the path it
// used, not the daemon's.
func TestAccessSeenFromAnotherMountNamespace(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, "")
	ws := filepath.Join(filepath.Dir(e.mp), "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, release := held(t, nil, "/", "unshare", "-m", "--propagation", "private", "sh", "-c",
		fmt.Sprintf("mount --bind %s %s && exec cat %s/conf/prod.yaml -", e.mp, ws, ws))
	r := awaitAccess(t, e.d, "the other namespace's open", func(r *journal.Record) bool { return r.Pid == uint32(cmd.Process.Pid) })
	if out := release(); !strings.Contains(out, "db: prod") {
		t.Fatalf("cat in the namespace: %q", out)
	}
	if want := filepath.Join(ws, "conf", "prod.yaml"); r.Path != want || r.Process != "cat" || r.StatID == "" {
		t.Fatalf("record %+v, want path %s", r, want)
	}

	// A denial there is journaled in the same view, with the real path.
	writeFile(t, filepath.Join(e.root, ".env"), "SECRET=1\n", 0o644)
	cmd, release = held(t, nil, "/", "unshare", "-m", "--propagation", "private", "sh", "-c",
		// As in a container, the daemon's mount point is not visible there.
		fmt.Sprintf("mount --bind %s %s && umount -l %s && exec cat %s/.env -", e.mp, ws, e.mp, ws))
	var denial *journal.Record
	testenv.Within(t, 60*time.Second, "the other namespace's denial", func() error {
		j, err := journal.Open(e.d.journal)
		if err != nil {
			return err
		}
		defer j.Close()
		recs, err := j.Query(journal.Filter{Kind: journal.KindDenial})
		for _, r := range recs {
			if r.Pid == uint32(cmd.Process.Pid) {
				denial = r
				return nil
			}
		}
		return fmt.Errorf("no denial yet (%v)", err)
	})

	release()
	if want := filepath.Join(ws, ".env"); denial.Path != want || denial.RealPath != filepath.Join(e.root, ".env") || denial.Session != "agent-7" {
		t.Fatalf("denial %+v, want path %s", denial, want)
	}
}

// TestAccessStormNeverSilent: 100,000 opens of a thousand files, as fast
// as one process can make them, are all accounted for: every file has a
// record of this process, or a record says opens were lost. (The kernel
// merges a process's repeated opens of a file while they wait in its
// queue, so a record's count is at most the opens made.)
func TestAccessStormNeverSilent(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, "")
	var names []string
	filepath.WalkDir(filepath.Join(e.mp, "many"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	if len(names) != 1000 {
		t.Fatalf("%d files in the mount", len(names))
	}
	const n = 100_000
	for i := range n {
		fd, err := syscall.Open(names[i%len(names)], syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(fd)
	}
	self := uint32(os.Getpid())
	var counted int64
	var lost []string
	testenv.Within(t, 120*time.Second, "the storm's records", func() error {
		counted, lost = 0, nil
		files := map[string]bool{}
		for _, r := range accesses(t, e.d) {
			switch {
			case r.Code == "ACCESS_LOST":
				lost = append(lost, r.Detail)
			case r.Pid == self:
				counted += r.Opens
				files[r.Path] = true
			}
		}
		if len(files) == len(names) || len(lost) > 0 {
			return nil
		}
		return fmt.Errorf("%d of %d files recorded, nothing said lost", len(files), len(names))
	})

	if counted > n {
		t.Fatalf("%d opens counted for %d made", counted, n)
	}
	t.Logf("%d open events counted for %d opens; lost: %v", counted, n, lost)
}

// TestAccessRecordNamesAFileItsNameDropped: a process opens a file
// through the mount, and before its open is recorded the mount has the
// kernel drop the name (here a policy reload, which drops every name; the
// watch does so for a file written just before it is opened, which under
// load is handled after the open). The kernel then calls the open's path
// "… (deleted)", but the file is there: the access record names its path.
// Another process opening files without a pause keeps the batch of opens,
// the holder's among them, unrecorded until a pause, past the reload.
func TestAccessRecordNamesAFileItsNameDropped(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, "")
	busy := exec.Command("sh", "-c", "while :; do cat sentinel.txt; done >/dev/null")
	busy.Dir = e.mp
	testenv.Must(t, busy.Start())
	stopBusy := func() { busy.Process.Kill(); busy.Wait() }
	defer stopBusy()
	holder, release := held(t, nil, e.mp, "sh", "-c", "exec 3< conf/prod.yaml; read w")
	defer release()
	testenv.Within(t, testenv.HangGuard, "the holder's open", func() error {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", holder.Process.Pid)); err != nil || filepath.Base(link) != "prod.yaml" {
			return fmt.Errorf("fd 3: %q %v", link, err)
		}
		return nil
	})
	testenv.Must(t, e.d.cmd.Process.Signal(syscall.SIGHUP))
	e.d.log.waitFor(t, "policy reloaded", 1, testenv.HangGuard)
	stopBusy()
	conf := filepath.Join(e.mp, "conf", "prod.yaml")
	awaitAccess(t, e.d, "the holder's open, named as it opened it", func(r *journal.Record) bool {
		return r.Pid == uint32(holder.Process.Pid) && r.Path == conf
	})
}

// TestAccessOff: with [audit] opens = "off" nothing is recorded, and the
// readiness line says so.
func TestAccessOff(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, "[audit]\nopens = \"off\"\n")
	if e.d.ready["opens"] != "off" {
		t.Fatalf("readiness line: %v", e.d.ready)
	}
	if b, err := os.ReadFile(filepath.Join(e.mp, "conf", "prod.yaml")); err != nil || !strings.Contains(string(b), "prod") {
		t.Fatalf("read through the mount: %v", err)
	}
	e.d.stop() // whatever was pending is written before it exits
	if recs := accesses(t, e.d); len(recs) != 0 {
		t.Fatalf("%d access records with opens = off: %+v", len(recs), recs[0])
	}
}

// TestAccessTableNeverCarriesEscapes: a process names itself with a
// terminal escape sequence and a newline (prctl PR_SET_NAME) and opens a
// file: the operator's journal table shows the name quoted, never raw.
func TestAccessTableNeverCarriesEscapes(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, "")
	py, release := held(t, nil, e.mp, "python3", "-c",
		`import ctypes, sys; ctypes.CDLL(None).prctl(15, b"\x1b[2J\nforged", 0, 0, 0); open("conf/prod.yaml").read(); sys.stdin.read()`)
	awaitAccess(t, e.d, "the renamed process's open", func(r *journal.Record) bool { return r.Pid == uint32(py.Process.Pid) })
	release()
	out, errs, code := fsguard(t, e.root, e.d.journal, "", "journal", "query", "--kind", "access")
	if code != 0 {
		t.Fatalf("query: %s", errs)
	}
	if strings.ContainsRune(out, 0x1b) || strings.Contains(out, "\nforged") {
		t.Fatalf("a raw escape or a forged row reached the table:\n%q", out)
	}
	if !strings.Contains(out, `\x1b[2J\nforged`) {
		t.Fatalf("the name is not shown quoted:\n%s", out)
	}
}
