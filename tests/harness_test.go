// Package tests holds whole-program tests: they build the fsguard binary,
// mount real fixtures with it and drive the mounts with real processes.
package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/testenv"
)

var binary string

func TestMain(m *testing.M) {
	if role := os.Getenv(helperRole); role != "" {
		os.Exit(runHelper(role))
	}
	dir, err := os.MkdirTemp("", "fsguard-bin")
	if err != nil {
		panic(err)
	}
	os.Chmod(dir, 0o755) // other uids run it too
	// Every fsguard the tests start journals, and keeps its state, in a
	// temporary directory, never in the host's (/var/lib/fsguard as root).
	state, err := os.MkdirTemp("", "fsguard-state")
	if err != nil {
		panic(err)
	}
	hostUntouched := testenv.Hermetic(state)
	binary = filepath.Join(dir, "fsguard")
	// Stamped as a release is (scripts/release.sh), so TestVersionIsOneString
	// can find the one string everywhere.
	build := exec.Command("go", "build", "-ldflags", "-X github.com/fsguard/fsguard/internal/concept/version.stamped="+testVersion, "-o", binary, "../cmd/fsguard")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building fsguard:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := hostUntouched(); err != nil {
		// CI (FSGUARD_REQUIRE_FUSE=1) owns its machine: a change is the
		// suite's. Elsewhere an installed fsguard service, or another
		// checkout's tests, may write there too: said, not failed.
		if os.Getenv("FSGUARD_REQUIRE_FUSE") == "1" {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			code = 1
		} else {
			fmt.Fprintln(os.Stderr, "warning (fails where FSGUARD_REQUIRE_FUSE=1, if not another fsguard's doing):", err)
		}
	}
	os.RemoveAll(dir)
	os.RemoveAll(state)
	os.Exit(code)
}

// requireTool returns the path of a program a test drives (a shell,
// promtool, rsyslogd, node), installed for CI by scripts/deps.sh. Where it
// is missing the test skips — and fails instead when
// FSGUARD_REQUIRE_TOOLS=1 (CI), so it can never skip silently there.
// also, when given, must exist too (a package the program needs).
func requireTool(t *testing.T, name string, also ...string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	for _, p := range also {
		if _, serr := os.Stat(p); serr != nil && err == nil {
			err = serr
		}
	}
	if err == nil {
		return path
	}
	if os.Getenv("FSGUARD_REQUIRE_TOOLS") == "1" {
		t.Fatalf("%s required (FSGUARD_REQUIRE_TOOLS=1; scripts/deps.sh installs it): %v", name, err)
	}
	t.Skipf("no %s: %v (scripts/deps.sh installs it)", name, err)
	return ""
}

// logBuffer collects a daemon's stderr and lets a test wait for a line.
type logBuffer struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  bytes.Buffer
}

func newLogBuffer() *logBuffer {
	l := &logBuffer{}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	l.cond.Broadcast()
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor blocks until the log contains s (n times), or the deadline.
func (l *logBuffer) waitFor(t testing.TB, s string, n int, timeout time.Duration) {
	t.Helper()
	timer := time.AfterFunc(timeout, func() { l.mu.Lock(); l.cond.Broadcast(); l.mu.Unlock() })
	defer timer.Stop()
	deadline := time.Now().Add(timeout)
	l.mu.Lock()
	defer l.mu.Unlock()
	for strings.Count(l.buf.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("daemon log never said %q %d times:\n%s", s, n, l.buf.String())
		}
		l.cond.Wait()
	}
}

// daemon is a running `fsguard mount`.
type daemon struct {
	t     testing.TB
	cmd   *exec.Cmd
	mp    string
	log   *logBuffer
	done  chan struct{}
	ready map[string]any
	// journal is the daemon's journal file (FSGUARD_JOURNAL).
	journal string
	// dev is the mount's device, to name what holds it (see stop).
	dev uint64
}

// startMount runs `fsguard mount` and returns once it printed its
// readiness line, which it does only after the mount answers.
func startMount(t testing.TB, mp string, args ...string) *daemon {
	t.Helper()
	return startMountEnv(t, mp, nil, args...)
}

// startMountEnv is startMount with more environment (later entries win:
// FSGUARD_JOURNAL=... moves the journal).
func startMountEnv(t testing.TB, mp string, env []string, args ...string) *daemon {
	t.Helper()
	return startMountVia(t, nil, mp, env, args...)
}

// startMountVia is startMountEnv with the daemon run by a wrapper: via is
// a command line to which fsguard's own is appended (a shell setting the
// umask first), nil for none.
func startMountVia(t testing.TB, via []string, mp string, env []string, args ...string) *daemon {
	t.Helper()
	testenv.RequireFUSEOrFusermount(t)
	d := &daemon{t: t, mp: mp, log: newLogBuffer(), done: make(chan struct{})}
	argv := append(append(append(via, binary, "mount"), args...), mp)
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.journal = filepath.Join(filepath.Dir(mp), "journal.db")
	d.cmd.Env = append(append(os.Environ(), "FSGUARD_JOURNAL="+d.journal), env...)
	d.cmd.Stderr = d.log
	// A test binary killed (go test's timeout, a kill -9) runs no
	// cleanup: the daemon is told by the kernel instead, and unmounts as
	// on any SIGTERM, so no mount and no daemon outlive the run.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() {
		}
	}()
	go func() { d.cmd.Wait(); close(d.done) }()
	select {
	case line, ok := <-lines:
		if !ok {
			<-d.done
			t.Fatalf("fsguard mount exited (%v) before it was ready: %s", d.cmd.ProcessState, d.log.String())
		}
		if err := json.Unmarshal([]byte(line), &d.ready); err != nil || d.ready["msg"] != "mounted" {
			t.Fatalf("readiness line %q", line)
		}
		var st syscall.Stat_t
		if syscall.Stat(mp, &st) == nil {
			d.dev = st.Dev
		}
	case <-time.After(20 * time.Second):
		d.cmd.Process.Kill()
		t.Fatalf("fsguard mount not ready in 20s: %s", d.log.String())
	}
	t.Cleanup(d.stop)
	return d
}

// stop ends the daemon with SIGTERM and checks that it unmounted.
func (d *daemon) stop() {
	select {
	case <-d.done:
		return
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		// What it waits for: what holds its mount, and every goroutine's
		// stack, on its log.
		holders := testenv.Holders(d.dev)
		testenv.Stacks(d.cmd.Process, d.done, 10*time.Second)
		d.t.Errorf("daemon did not exit on SIGTERM within 15s; what held its mount then:\n  %s\nits log, and its stacks at the deadline: %s", strings.Join(holders, "\n  "), d.log.String())
	}
	if mounted(d.mp) {
		syscall.Unmount(d.mp, syscall.MNT_DETACH)
		d.t.Errorf("%s still mounted after the daemon exited", d.mp)
	}
}

func mounted(mp string) bool {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == mp {
			return true
		}
	}
	return false
}

// run runs a command with a timeout and returns its combined output.
func run(t testing.TB, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %v hung for %v", name, args, timeout)
	}
	return string(out), err
}

func mustRun(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := run(t, 30*time.Second, name, args...)
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return out
}

// openDir makes a directory others can traverse (t.TempDir is 0700).
func openDir(t testing.TB) string {
	t.Helper()
	d := t.TempDir()
	// t.TempDir's parent (one per test) is 0700 too.
	for _, p := range []string{d, filepath.Dir(d)} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, mode)
}

func writePolicy(t testing.TB, path string, roots []string, extra string) {
	t.Helper()
	var b strings.Builder
	for _, r := range roots {
		fmt.Fprintf(&b, "[[root]]\npath = %q\n", r)
	}
	b.WriteString(extra)
	writeFile(t, path, b.String(), 0o644)
}

// runBinary runs the fsguard binary in dir with extra environment and
// stdin, and returns its stdout, stderr, exit status and pid.
func runBinary(t *testing.T, dir string, env []string, stdin string, args ...string) (string, string, int, int) {
	t.Helper()
	return runBinaryAs(t, nil, dir, env, stdin, args...)
}

// runBinaryAs is runBinary as another user (nil: this process's).
func runBinaryAs(t *testing.T, cred *syscall.Credential, dir string, env []string, stdin string, args ...string) (string, string, int, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	if cred != nil {
		testenv.As(cmd, cred.Uid, cred.Gid, cred.Groups...)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code, cmd.Process.Pid
}
