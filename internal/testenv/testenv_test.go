package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf and Skipf record the message and
// end the goroutine, as the real ones do.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}

func (r *recorder) TempDir() string { return r.TB.TempDir() }

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// record runs fn with a recorder in its own goroutine and returns what
// it recorded.
func record(t *testing.T, fn func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); fn(r) }()
	<-done
	return r
}

// TestUnavailableFailsInCI: where FSGUARD_REQUIRE_FUSE=1 a test that
// cannot run fails; elsewhere it skips. Not parallel: it sets the
// environment.
func TestUnavailableFailsInCI(t *testing.T) {
	t.Setenv("FSGUARD_REQUIRE_FUSE", "1")
	if r := record(t, func(tb testing.TB) { unavailable(tb, "FUSE", "no /dev/fuse") }); r.fatal == "" || r.skip != "" || !strings.Contains(r.fatal, "no /dev/fuse") {
		t.Errorf("with FSGUARD_REQUIRE_FUSE=1: fatal %q, skip %q", r.fatal, r.skip)
	}
	t.Setenv("FSGUARD_REQUIRE_FUSE", "")
	if r := record(t, func(tb testing.TB) { unavailable(tb, "FUSE", "no /dev/fuse") }); r.fatal != "" || !strings.Contains(r.skip, "no /dev/fuse") {
		t.Errorf("without FSGUARD_REQUIRE_FUSE: fatal %q, skip %q", r.fatal, r.skip)
	}
	// As root with /dev/fuse, RequireFUSE lets the test run.
	if _, err := os.Stat("/dev/fuse"); err == nil && os.Geteuid() == 0 {
		t.Setenv("FSGUARD_REQUIRE_FUSE", "1")
		for name, require := range map[string]func(testing.TB){"RequireFUSE": RequireFUSE, "RequireFUSEOrFusermount": RequireFUSEOrFusermount, "RequireRoot": func(tb testing.TB) { RequireRoot(tb, "a test") }} {
			if r := record(t, require); r.fatal != "" || r.skip != "" {
				t.Errorf("%s as root with /dev/fuse: fatal %q, skip %q", name, r.fatal, r.skip)
			}
		}
	}
}

// TestWithin: a condition that comes to hold ends the poll; one that
// never does fails the test after the limit, naming it and its error.
func TestWithin(t *testing.T) {
	t.Parallel()
	polls := 0
	r := record(t, func(tb testing.TB) {
		Within(tb, HangGuard, "the third poll", func() error {
			if polls++; polls < 3 {
				return errors.New("not yet")
			}
			return nil
		})
	})
	if r.fatal != "" || polls != 3 {
		t.Errorf("a condition holding at the third poll: %d polls, fatal %q", polls, r.fatal)
	}
	r = record(t, func(tb testing.TB) {
		Within(tb, 20*time.Millisecond, "never", func() error { return errors.New("still wrong") })
	})
	if !strings.Contains(r.fatal, "never") || !strings.Contains(r.fatal, "still wrong") {
		t.Errorf("a condition that never holds: fatal %q", r.fatal)
	}
	polls = 0
	r = record(t, func(tb testing.TB) { Eventually(tb, "at once", func() bool { polls++; return true }) })
	if r.fatal != "" || polls != 1 {
		t.Errorf("a condition holding at once: %d polls, fatal %q", polls, r.fatal)
	}
}

// TestTree: files, directories, links and FIFOs land where named, with
// their content and kind.
func TestTree(t *testing.T) {
	t.Parallel()
	dir := Tree(t, map[string]string{"a.txt": "a\n", "d/e/f.txt": "f\n", "empty/": ""})
	Symlinks(t, dir, map[string]string{"l/to-a": "../a.txt", "abs": filepath.Join(dir, "d")})
	FIFO(t, filepath.Join(dir, "fifo"))
	for name, want := range map[string]string{"a.txt": "a\n", "d/e/f.txt": "f\n", "l/to-a": "a\n", "abs/e/f.txt": "f\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", name, b, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "empty")); err != nil || !fi.IsDir() {
		t.Errorf("empty/: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "l/to-a")); err != nil || target != "../a.txt" {
		t.Errorf("l/to-a links to %q %v", target, err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("fifo: %v %v", fi, err)
	}
}

// TestAs: a command made to run as another user runs as that user, in
// its groups.
func TestAs(t *testing.T) {
	t.Parallel()
	RequireRoot(t, "a second user")
	out, err := As(exec.Command("id"), 65534, 65534, 2001).Output()
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, "uid=65534") || !strings.Contains(s, "gid=65534") || !strings.Contains(s, "2001") {
		t.Errorf("id as 65534 in group 2001: %s", s)
	}
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if As(cmd, 1, 1).SysProcAttr.Pdeathsig != syscall.SIGTERM {
		t.Error("As dropped the command's other process attributes")
	}
}

// TestOnlyTestsImportIt: no package of the module imports testenv
// outside its _test.go files, so no binary carries it.
func TestOnlyTestsImportIt(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "github.com/fsguard/fsguard/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const self = "github.com/fsguard/fsguard/internal/testenv"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 && slices.Contains(fields[1:], self) {
			t.Errorf("%s imports testenv outside its tests", fields[0])
		}
	}
}

// TestStacks: a Go program that hangs, ended by Stacks, has printed where
// each of its goroutines waits.
func TestStacks(t *testing.T) {
	t.Parallel()
	if os.Getenv("TESTENV_HANG") == "1" {
		// The program that hangs (this test binary, run again): it says
		// it runs, then waits on its standard input, which stays open.
		fmt.Println("hanging")
		io.ReadAll(os.Stdin)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStacks$")
	cmd.Env = append(os.Environ(), "TESTENV_HANG=1")
	var errb strings.Builder
	cmd.Stderr = &errb
	stdin, err := cmd.StdinPipe()
	Must(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	Must(t, err)
	Must(t, cmd.Start())
	// Its signal handlers are in place once it runs its test.
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "hanging\n" {
		t.Fatalf("the program said %q: %v", line, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	if !Stacks(cmd.Process, done, HangGuard) {
		t.Fatalf("the program did not exit on SIGQUIT: %s", errb.String())
	}
	if !strings.Contains(errb.String(), "SIGQUIT") || !strings.Contains(errb.String(), "testenv.TestStacks") {
		t.Fatalf("no stacks on its standard error:\n%s", errb.String())
	}
}
