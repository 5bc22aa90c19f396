// Package testenv is the environment fsguard's tests share: the checks
// that decide whether a test needing FUSE or root runs, skips, or (where
// CI sets FSGUARD_REQUIRE_FUSE=1) fails instead of skipping silently;
// polling with a hang guard; trees of real files in temporary
// directories; and commands run as a second user.
//
// It is imported by _test.go files only.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// HangGuard is the deadline of Eventually: far beyond any wait a test
// expects on a loaded machine, it only turns a hang into a failure.
const HangGuard = 60 * time.Second

// required reports whether CI demands what a test needs: there a test
// that cannot run fails, never skips.
func required() bool { return os.Getenv("FSGUARD_REQUIRE_FUSE") == "1" }

// unavailable skips t for why, or fails it where CI requires FUSE.
func unavailable(t testing.TB, what, why string) {
	t.Helper()
	if required() {
		t.Fatalf("%s required (FSGUARD_REQUIRE_FUSE=1) but unavailable: %s", what, why)
	}
	t.Skipf("%s unavailable: %s", what, why)
}

// RequireFUSE is for a test that mounts in this process as root: it
// skips where root or /dev/fuse is absent, and fails instead when
// FSGUARD_REQUIRE_FUSE=1.
func RequireFUSE(t testing.TB) {
	t.Helper()
	switch {
	case os.Geteuid() != 0:
		unavailable(t, "FUSE", "not root")
	default:
		if _, err := os.Stat("/dev/fuse"); err != nil {
			unavailable(t, "FUSE", "no /dev/fuse")
		}
	}
}

// RequireFUSEOrFusermount is for a test that runs a mount by the fsguard
// binary, which mounts as root or, unprivileged, through fusermount3: it
// skips where /dev/fuse is absent, or this process is neither root nor
// has fusermount3, and fails instead when FSGUARD_REQUIRE_FUSE=1.
func RequireFUSEOrFusermount(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		unavailable(t, "FUSE", "no /dev/fuse")
		return
	}
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			unavailable(t, "FUSE", "not root and no fusermount3")
		}
	}
}

// RequireRoot skips t where this process is not root (why says what
// needs it: a second user, a mount, a device node), and fails instead
// when FSGUARD_REQUIRE_FUSE=1, where the tests run as root.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "root", why)
	}
}

// Must fails t at once if err is not nil.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Within polls cond until it returns nil and returns how long that took
// (a figure to log, never to assert). limit is a hang guard: if cond
// still fails after it, t fails with what and cond's last error. Between
// polls it backs off from 1 ms to 16 ms; the wait is the poll, not a
// synchronisation.
func Within(t testing.TB, limit time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for pause := time.Millisecond; ; pause = min(2*pause, 16*time.Millisecond) {
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("%s: still not so after %v (a hang guard): %v", what, limit, err)
		}
		time.Sleep(pause)
	}
}

// Eventually polls cond until it holds, and fails t, naming what, if it
// does not within HangGuard.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, HangGuard, what, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("the condition does not hold")
	})
}

// Tree makes a temporary directory holding entries (see WriteTree) and
// returns its path.
func Tree(t testing.TB, entries map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	WriteTree(t, dir, entries)
	return dir
}

// WriteTree writes entries under dir, each a slash-separated relative
// path: a name ending in "/" is a directory (0755), any other a file
// (0644) holding its value. Missing parents are made (0755).
func WriteTree(t testing.TB, dir string, entries map[string]string) {
	t.Helper()
	for name, content := range entries {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			Must(t, os.MkdirAll(p, 0o755))
			continue
		}
		Must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		Must(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// Symlinks makes under dir, for each link (a relative path) the symbolic
// link to its target, which is written as given: relative targets stay
// relative. Missing parents are made (0755).
func Symlinks(t testing.TB, dir string, links map[string]string) {
	t.Helper()
	for link, target := range links {
		p := filepath.Join(dir, filepath.FromSlash(link))
		Must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		Must(t, os.Symlink(target, p))
	}
}

// FIFO makes a named pipe at path (0644): a file that blocks whoever
// opens it for reading without O_NONBLOCK until a writer comes.
func FIFO(t testing.TB, path string) {
	t.Helper()
	Must(t, syscall.Mkfifo(path, 0o644))
}

// As makes cmd run as another user: uid, gid and the supplementary
// groups. No account is needed, the kernel takes any ids; only root may
// become another user (see RequireRoot). It returns cmd.
func As(cmd *exec.Cmd, uid, gid uint32, groups ...uint32) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}
	return cmd
}

// HostState is what fsguard keeps on the host outside any test's
// temporary directory: the packaged service's journal directory (root's
// default) and run directory (its socket), and this user's own journal
// directory (everyone else's default, and a run without a policy file's).
func HostState() []string {
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		home, _ := os.UserHomeDir()
		state = filepath.Join(home, ".local", "state")
	}
	return []string{"/var/lib/fsguard", "/run/fsguard", filepath.Join(state, "fsguard")}
}

// Hermetic points every fsguard this test binary starts away from the
// host's state, for the whole run: FSGUARD_JOURNAL (which wins over a
// policy's [journal] path and over root's /var/lib/fsguard),
// XDG_STATE_HOME and XDG_RUNTIME_DIR name places under dir, which must be
// a fresh private temporary directory. A test wanting a journal of its own
// still sets FSGUARD_JOURNAL on its command (the last entry of an Env
// wins). Call it in TestMain before m.Run; the check it returns, run after
// m.Run, says what of HostState the run changed.
func Hermetic(dir string) (check func() error) {
	paths := HostState() // the user's, before XDG_STATE_HOME moves
	before := snapshot(paths)
	os.Setenv("FSGUARD_JOURNAL", filepath.Join(dir, "journal", "journal.db"))
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	os.Setenv("XDG_RUNTIME_DIR", filepath.Join(dir, "run"))
	return func() error {
		after := snapshot(paths)
		var changed []string
		for k, v := range after {
			if before[k] != v {
				changed = append(changed, fmt.Sprintf("%s: %s -> %s", k, orAbsent(before[k]), v))
			}
		}
		for k, v := range before {
			if _, ok := after[k]; !ok {
				changed = append(changed, fmt.Sprintf("%s: %s -> absent", k, v))
			}
		}
		if len(changed) == 0 {
			return nil
		}
		sort.Strings(changed)
		return fmt.Errorf("the tests changed the host's fsguard state (every journal, socket and run directory of a test belongs in a temporary directory):\n  %s", strings.Join(changed, "\n  "))
	}
}

func orAbsent(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}

// snapshot is each entry under paths (absent ones left out) with its
// type, size, modification time and inode: a journal appended to, a
// file made or replaced, all show.
func snapshot(paths []string) map[string]string {
	out := map[string]string{}
	for _, p := range paths {
		filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			ino := uint64(0)
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				ino = st.Ino
			}
			size := fi.Size()
			if fi.IsDir() {
				size = 0 // a directory's size says nothing of what changed in it
			}
			out[path] = fmt.Sprintf("%v size=%d mtime=%s ino=%d", fi.Mode(), size, fi.ModTime().UTC().Format(time.RFC3339Nano), ino)
			return nil
		})
	}
	return out
}

// Stacks ends a Go program that did not exit in time so that it says
// why: SIGQUIT makes the Go runtime print every goroutine's stack to
// the program's standard error before it exits. It waits for done (closed
// once the program was reaped) for grace, then kills it. The dump is on
// whatever the caller gave the program as its standard error; it reports
// whether the program exited on the SIGQUIT rather than the kill.
func Stacks(p *os.Process, done <-chan struct{}, grace time.Duration) bool {
	p.Signal(syscall.SIGQUIT)
	select {
	case <-done:
		return true
	case <-time.After(grace):
		p.Kill()
		<-done
		return false
	}
}

// Holders names what holds the file system whose device is dev: each
// open descriptor, working directory and root of every thread on the
// machine that is on it, as "pid/tid (comm) fd N: path". A mount that
// cannot be unmounted (EBUSY), or whose daemon waits for it to go after
// a lazy unmount, is held by one of these. The paths are as the kernel
// names them: in a detached mount, from its own top.
func Holders(dev uint64) []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		tasks, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "task"))
		for _, task := range tasks {
			dir := filepath.Join("/proc", p.Name(), "task", task.Name())
			comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
			what := []string{"cwd", "root"}
			if fds, err := os.ReadDir(filepath.Join(dir, "fd")); err == nil {
				for _, fd := range fds {
					what = append(what, filepath.Join("fd", fd.Name()))
				}
			}
			for _, w := range what {
				var st syscall.Stat_t
				if syscall.Stat(filepath.Join(dir, w), &st) != nil || st.Dev != dev {
					continue
				}
				link, _ := os.Readlink(filepath.Join(dir, w))
				out = append(out, fmt.Sprintf("%s/%s (%q) %s: %q", p.Name(), task.Name(), strings.TrimSpace(string(comm)), w, link))
			}
		}
	}
	return out
}
