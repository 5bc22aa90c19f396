package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestFewDescriptorsNoEIO: a daemon started with a descriptor limit of 64
// (soft and hard) serves 300 cats of distinct files, and of one file, with
// no failure: its descriptor caches are sized from the limit and give way
// when it is reached, instead of answering EIO; after idle it still serves.
func TestFewDescriptorsNoEIO(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	prlimit := requireTool(t, "prlimit")
	f := newFixture(t)
	const n = 300
	for i := range n {
		writeFile(t, filepath.Join(f.root, "many", fmt.Sprintf("d%d", i%10), fmt.Sprintf("f%03d.txt", i)), fmt.Sprintf("file %d\n", i), 0o644)
	}
	for _, open := range []string{"kernel", "daemon"} {
		writePolicy(t, f.policy, []string{f.root}, fmt.Sprintf("[mount]\nopen = %q\n", open))
		d := startMountVia(t, []string{prlimit, "--nofile=64:64", "--"}, f.mp, nil, "--policy", f.policy)
		cat := func(round string) {
			var mu sync.Mutex
			var failed []string
			var wg sync.WaitGroup
			sem := make(chan struct{}, 8)
			for i := range n {
				wg.Add(2)
				for _, rel := range []string{filepath.Join("many", fmt.Sprintf("d%d", i%10), fmt.Sprintf("f%03d.txt", i)), "README.md"} {
					sem <- struct{}{}
					go func() {
						defer wg.Done()
						defer func() { <-sem }()
						out, err := exec.Command("cat", filepath.Join(f.mp, rel)).CombinedOutput()
						want := "# hello\nsee src/\n"
						if rel != "README.md" {
							want = fmt.Sprintf("file %d\n", i)
						}
						if err != nil || string(out) != want {
							mu.Lock()
							failed = append(failed, fmt.Sprintf("%s: %v %q", rel, err, out))
							mu.Unlock()
						}
					}()
				}
			}
			wg.Wait()
			if len(failed) > 0 {
				t.Errorf("open=%s %s: %d of %d cats failed under a limit of 64 descriptors, e.g. %s\n%s", open, round, len(failed), 2*n, strings.Join(failed[:min(3, len(failed))], "; "), d.log.String())
			}
		}
		cat("first")
		cat("again")
		d.stop()
		os.Remove(d.journal)
	}
}

// TestShortReadersNamedUnderLoad: with both cores kept busy, 100 cats
// through the mount, each exiting at once, are recorded with their
// process name (at least 99): the recorder that takes their opens off the
// queue after they are gone still learns who they were.
func TestShortReadersNamedUnderLoad(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, "")
	stop := make(chan struct{})
	var busy sync.WaitGroup
	for range 2 * runtime.NumCPU() {
		busy.Add(1)
		go func() {
			defer busy.Done()
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range 1 << 16 {
					x += i
				}
			}
		}()
	}
	const n = 100
	pids := map[uint32]bool{}
	for i := range n {
		cat := exec.Command("cat", filepath.Join(e.mp, "many", fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d.txt", i)))
		if out, err := cat.Output(); err != nil || !strings.HasPrefix(string(out), fmt.Sprintf("line %d\n", i)) {
			t.Fatalf("cat %d: %v %q", i, err, out)
		}
		pids[uint32(cat.Process.Pid)] = true
	}
	close(stop)
	busy.Wait()
	var named, unnamed int
	testenv.Within(t, 60*time.Second, "an access record for each cat", func() error {
		named, unnamed = 0, 0
		for _, r := range accesses(t, e.d) {
			if pids[r.Pid] {
				if r.Process == "cat" {
					named++
				} else {
					unnamed++
				}
			}
		}
		if named+unnamed < n {
			return fmt.Errorf("%d of %d cats recorded", named+unnamed, n)
		}
		return nil
	})
	if named < n-1 {
		t.Errorf("%d of %d short-lived cats under load recorded without their name", unnamed, n)
	}
}

// TestUnwatchedDirectoryStaysFresh: a directory made while no inotify
// watch can be added (strace makes each inotify_add_watch of it fail with
// ENOSPC, as an exhausted fs.inotify.max_user_watches does) is served
// fresh all the same: a file in it changed on the host reads as its new
// bytes through the mount, a name made there appears, the log says so
// once, and `fsguard status` shows it.
func TestUnwatchedDirectoryStaysFresh(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	strace := requireTool(t, "strace")
	f := newFixture(t)
	fresh := filepath.Join(f.root, "made-while-full")
	writePolicy(t, f.policy, []string{f.root}, "[mount]\nwatch = \"inotify\"\n")
	sock := filepath.Join(f.base, "ctl.sock")
	d := startMountVia(t, []string{strace, "-qq", "-f", "--seccomp-bpf", "-o", "/dev/null", "-P", fresh,
		"-e", "trace=inotify_add_watch", "-e", "inject=inotify_add_watch:error=ENOSPC:when=1+", "--"},
		f.mp, nil, "--policy", f.policy, "--socket", sock)
	// strace keeps SIGTERM from reaching the daemon: it is told itself.
	t.Cleanup(func() { syscall.Kill(int(d.ready["pid"].(float64)), syscall.SIGTERM) })
	if err := os.Mkdir(fresh, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(fresh, "a.txt")
	writeFile(t, file, "one\n", 0o644)
	through := filepath.Join(f.mp, "made-while-full", "a.txt")
	testenv.Within(t, 20*time.Second, "the new file through the mount", func() error {
		if b, err := os.ReadFile(through); err != nil || string(b) != "one\n" {
			return fmt.Errorf("%q %v", b, err)
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(f.mp, "made-while-full", "b.txt")); err == nil {
		t.Fatal("b.txt before it was made")
	}
	writeFile(t, file, "two, and longer\n", 0o644)
	writeFile(t, filepath.Join(fresh, "b.txt"), "bee\n", 0o644)
	testenv.Within(t, 20*time.Second, "the changed file's new bytes and the new name through the mount", func() error {
		if b, err := os.ReadFile(through); err != nil || string(b) != "two, and longer\n" {
			return fmt.Errorf("a.txt: %q %v", b, err)
		}
		if b, err := os.ReadFile(filepath.Join(f.mp, "made-while-full", "b.txt")); err != nil || string(b) != "bee\n" {
			return fmt.Errorf("b.txt: %q %v", b, err)
		}
		return nil
	})
	d.log.waitFor(t, "cannot be watched", 1, 20*time.Second)
	out, errs, code, _ := runBinary(t, f.mp, []string{"FSGUARD_SOCKET=" + sock}, "", "status")
	if code != 0 || !strings.Contains(out, "not watched since") || !strings.Contains(out, "made-while-full") {
		t.Errorf("status does not show the unwatched directory: %s%s", out, errs)
	}
	if n := strings.Count(d.log.String(), "cannot be watched"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, d.log.String())
	}
}

// TestFewDescriptorsSocketServesAll: a daemon started with a descriptor
// limit of 64 (soft and hard) answers 40 concurrent `fsguard read`s through
// its control socket, every one of them: its connection and request bounds
// are sized from the limit (a client over them waits), and a descriptor
// table found full at accept is relieved and retried, never a client
// dropped or told `too many open files`.
func TestFewDescriptorsSocketServesAll(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	prlimit := requireTool(t, "prlimit")
	f := newFixture(t)
	const n = 40
	for i := range n {
		writeFile(t, filepath.Join(f.root, "many", fmt.Sprintf("f%02d.txt", i)), fmt.Sprintf("file %d\n", i), 0o644)
	}
	writePolicy(t, f.policy, []string{f.root}, "")
	sock := filepath.Join(f.base, "ctl.sock")
	d := startMountVia(t, []string{prlimit, "--nofile=64:64", "--"}, f.mp, nil, "--policy", f.policy, "--socket", sock)
	for round := range 2 {
		var mu sync.Mutex
		var failed []string
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, binary, "read", filepath.Join(f.mp, "many", fmt.Sprintf("f%02d.txt", i)))
				cmd.Dir = f.mp
				cmd.Env = append(os.Environ(), "FSGUARD_SOCKET="+sock, fmt.Sprintf("FSGUARD_SESSION=fd-%d-%d", round, i))
				out, err := cmd.CombinedOutput()
				if err != nil || !strings.Contains(string(out), fmt.Sprintf("file %d", i)) {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("f%02d: %v %q", i, err, out))
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(failed) > 0 {
			t.Fatalf("round %d: %d of %d concurrent socket reads failed under a limit of 64 descriptors, e.g. %s\n%s", round, len(failed), n, strings.Join(failed[:min(3, len(failed))], "; "), d.log.String())
		}
	}
}

// TestUnwatchableRootIsWatchedOnceItCanBe: a root that cannot be watched
// when the daemon starts (strace makes the first inotify_add_watch calls
// on it fail with ENOSPC, as an exhausted fs.inotify.max_user_watches
// does) is served fresh meanwhile and retried: once a watch can be added,
// the log says it is watched again, `fsguard status` shows neither the
// blind root nor short timeouts, and a change on the host shows through
// the mount.
func TestUnwatchableRootIsWatchedOnceItCanBe(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	strace := requireTool(t, "strace")
	f := newFixture(t)
	writePolicy(t, f.policy, []string{f.root}, "[mount]\nwatch = \"inotify\"\n")
	sock := filepath.Join(f.base, "ctl.sock")
	d := startMountVia(t, []string{strace, "-qq", "-f", "--seccomp-bpf", "-o", "/dev/null", "-P", f.root,
		"-e", "trace=inotify_add_watch", "-e", "inject=inotify_add_watch:error=ENOSPC:when=1..3", "--"},
		f.mp, nil, "--policy", f.policy, "--socket", sock)
	t.Cleanup(func() { syscall.Kill(int(d.ready["pid"].(float64)), syscall.SIGTERM) })
	d.log.waitFor(t, "cannot be watched", 1, 20*time.Second)
	d.log.waitFor(t, "watched again", 1, 60*time.Second)
	out, errs, code, _ := runBinary(t, f.mp, []string{"FSGUARD_SOCKET=" + sock}, "", "status")
	if code != 0 || strings.Contains(out, "not watched since") || !strings.Contains(out, "watched again") {
		t.Errorf("status once the root is watched: %s%s", out, errs)
	}
	through := filepath.Join(f.mp, "README.md")
	if b, err := os.ReadFile(through); err != nil || string(b) != "# hello\nsee src/\n" {
		t.Fatalf("README.md: %q %v", b, err)
	}
	writeFile(t, filepath.Join(f.root, "README.md"), "# changed on the host\n", 0o644)
	testenv.Within(t, 20*time.Second, "the changed README through the mount", func() error {
		if b, err := os.ReadFile(through); err != nil || string(b) != "# changed on the host\n" {
			return fmt.Errorf("%q %v", b, err)
		}
		return nil
	})
}
