package tests

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testVersion is stamped into the binary TestMain builds, as
// scripts/release.sh stamps a release's (-ldflags -X).
const testVersion = "0.0.0~git20260101.0123456789ab"

// TestVersionIsOneString: the stamped version is what --version, the
// version command, the MCP serverInfo and the fsguard_build_info metric all
// say (before, every build said "devel" whatever the release stamped).
func TestVersionIsOneString(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, errs, code, _ := runBinary(t, t.TempDir(), nil, "", args...)
		if code != 0 || out != "fsguard "+testVersion+"\n" {
			t.Errorf("fsguard %s: %q %q (exit %d), want %q", args[0], out, errs, code, "fsguard "+testVersion)
		}
	}

	cmd := exec.Command(binary, "mcp", "--session", "version")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+filepath.Join(t.TempDir(), "j.db"), "FSGUARD_POLICY=", "FSGUARD_SOCKET=")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fsguard-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ir := cs.InitializeResult(); ir == nil || ir.ServerInfo == nil || ir.ServerInfo.Version != testVersion {
		t.Errorf("MCP serverInfo: %+v, want version %q", ir, testVersion)
	}
	cs.Close()

	f := newFixture(t)
	sock := filepath.Join(f.base, "ctl.sock")
	startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	m := regexp.MustCompile(`(?m)^fsguard_build_info\{version="([^"]*)"`).FindStringSubmatch(scrape(t, sock))
	if m == nil || m[1] != testVersion {
		t.Errorf("fsguard_build_info: %q, want version %q", m, testVersion)
	}
}

// TestTryOutJournalsInUsersState: the README's first command, run without a
// policy file (the embedded default), journals in the user's own state
// directory and says where, once — as root too, never in the packaged
// service's journal in /var/lib/fsguard (TestMain checks that directory is
// untouched by the whole run).
func TestTryOutJournalsInUsersState(t *testing.T) {
	t.Parallel()
	root, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(root, "README.md"), "# try\n", 0o644)
	env := []string{"FSGUARD_JOURNAL=", "FSGUARD_POLICY=", "FSGUARD_SOCKET=", "XDG_STATE_HOME=" + state}
	want := filepath.Join(state, "fsguard", "journal.db")
	for i := range 2 {
		out, errs, code, _ := runBinary(t, root, env, "", "read", "README.md")
		if code != 0 || !strings.Contains(out, "# try") {
			t.Fatalf("read: exit %d\n%s\n%s", code, out, errs)
		}
		if said := strings.Contains(errs, "journaling this session in "+want); said != (i == 0) {
			t.Errorf("run %d: stderr %q (the journal's place is said once, when it is made)", i+1, errs)
		}
	}
	if _, err := os.Stat(want); err != nil {
		t.Fatalf("no journal in the user's state directory: %v", err)
	}
}

// TestSecondDaemonRefusesALiveSocket: a second `fsguard mount` on the
// socket of a live daemon (another mount point) refuses, naming the
// first's pid, and leaves the socket alone: the first still answers on it,
// after the second has exited. Before, the second took the socket over and
// deleted it on exit, leaving the first mounted but unreachable.
func TestSecondDaemonRefusesALiveSocket(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sock := filepath.Join(f.base, "ctl.sock")
	first := startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	other := filepath.Join(f.base, "mnt2")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	second := exec.CommandContext(ctx, binary, "mount", "--policy", f.policy, "--socket", sock, other)
	second.Env = append(os.Environ(), "FSGUARD_JOURNAL="+filepath.Join(f.base, "second.db"))
	out, err := second.CombinedOutput()
	if err == nil {
		exec.Command(binary, "unmount", other).Run()
		t.Fatalf("a second daemon served the live socket:\n%s", out)
	}
	if want := fmt.Sprintf("pid %d", first.cmd.Process.Pid); !strings.Contains(string(out), want) || !strings.Contains(string(out), sock) {
		t.Errorf("the refusal does not name the socket and the first daemon (%s):\n%s", want, out)
	}
	if o, errs, code, _ := runBinary(t, f.base, nil, "", "health", "--socket", sock); code != 0 || strings.TrimSpace(o) != "ok" {
		t.Fatalf("the first daemon no longer answers on its socket after the second exited: %q %q (exit %d)", o, errs, code)
	}
}

// TestMountWithoutFUSERightsSaysWhatToAdd: `fsguard mount` run by a user
// who may neither open /dev/fuse nor mount answers FUSE_UNAVAILABLE with
// the flags a container needs, before touching anything; before, it said
// only `exec: "/bin/fusermount": stat /bin/fusermount: no such file or
// directory` (or mounted through a setuid fusermount3, where one exists —
// the test then has nothing to prove and skips).
func TestMountWithoutFUSERightsSaysWhatToAdd(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, "it runs the mount as another user")
	for _, n := range []string{"fusermount3", "fusermount"} {
		if p, err := exec.LookPath(n); err == nil {
			t.Skipf("%s exists here: an unprivileged user can mount", p)
		}
	}
	base := openDir(t)
	os.Chmod(base, 0o777)
	root, mp := filepath.Join(base, "root"), filepath.Join(base, "mnt")
	for _, d := range []string{root, mp} {
		testenv.Must(t, os.Mkdir(d, 0o777))
	}
	policy := filepath.Join(base, "policy.toml")
	writePolicy(t, policy, []string{root}, "")
	out, errs, code, _ := runBinaryAs(t, &syscall.Credential{Uid: 65534, Gid: 65534}, base,
		[]string{"FSGUARD_JOURNAL=" + filepath.Join(base, "j", "j.db")}, "", "mount", "--policy", policy, mp)
	if code == 0 || !strings.Contains(errs, "FUSE_UNAVAILABLE") || !strings.Contains(errs, "--device /dev/fuse --cap-add SYS_ADMIN") {
		t.Fatalf("exit %d, want FUSE_UNAVAILABLE with the docker flags:\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(base, "j")); err == nil {
		t.Error("the refused mount made its journal directory")
	}
}

// unitDirectives reads a systemd unit's [Service] directives (the last
// value of each wins, as systemd's assignments do for these).
func unitDirectives(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	testenv.Must(t, err)
	out := map[string]string{}
	section := ""
	for _, ln := range strings.Split(string(b), "\n") {
		ln = strings.TrimSpace(ln)
		if strings.HasPrefix(ln, "[") {
			section = ln
			continue
		}
		if k, v, ok := strings.Cut(ln, "="); ok && section == "[Service]" && !strings.HasPrefix(ln, "#") {
			if prev, ok := out[k]; ok && k == "ExecStartPre" {
				v = prev + "\n" + v
			}
			out[k] = v
		}
	}
	return out
}

// TestUnitLetsAgentsReachTheSocket: the shipped unit's socket directory,
// made as its directives make it (systemd's RuntimeDirectoryMode for a
// RuntimeDirectory, else an ExecStartPre mkdir under the unit's UMask),
// lets a user other than root connect to a socket in it. Before, mkdir
// under UMask=0077 made /run/fsguard 0700 and every agent in allow_uids got
// "connect: permission denied". The client's error for that case names the
// socket and its directory.
func TestUnitLetsAgentsReachTheSocket(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, "it connects as another user")
	u := unitDirectives(t, "../deploy/fsguard.service")
	m := regexp.MustCompile(`--socket (\S+)`).FindStringSubmatch(u["ExecStart"])
	if m == nil {
		t.Fatalf("the unit's ExecStart names no --socket: %q", u["ExecStart"])
	}
	dir := filepath.Dir(m[1])
	umask, err := strconv.ParseUint(u["UMask"], 8, 32)
	if err != nil {
		umask = 0o022 // systemd's default
	}
	var mode os.FileMode
	switch {
	case u["RuntimeDirectory"] != "" && filepath.Join("/run", u["RuntimeDirectory"]) == dir:
		rm, err := strconv.ParseUint(u["RuntimeDirectoryMode"], 8, 32)
		if err != nil {
			rm = 0o755 // systemd's default
		}
		mode = os.FileMode(rm)
	case strings.Contains(u["ExecStartPre"], dir):
		mode = os.FileMode(0o777 &^ umask)
	default:
		t.Fatalf("nothing in the unit makes the socket's directory %s", dir)
	}
	if systemdAnalyze, err := exec.LookPath("systemd-analyze"); err == nil {
		// Where systemd is, it parses the unit too (unknown directives, bad
		// values); missing binaries and a non-running manager are not ours.
		out, _ := exec.Command(systemdAnalyze, "verify", "../deploy/fsguard.service").CombinedOutput()
		for _, ln := range strings.Split(string(out), "\n") {
			if strings.Contains(ln, "Unknown key") || strings.Contains(ln, "Failed to parse") {
				t.Errorf("systemd-analyze verify: %s", ln)
			}
		}
	}

	// The directory as the unit makes it, a socket in it as the daemon
	// makes it (0666), and another user connecting.
	base := openDir(t)
	run := filepath.Join(base, "run")
	testenv.Must(t, os.Mkdir(run, 0o700))
	testenv.Must(t, os.Chmod(run, mode))
	sock := filepath.Join(run, "fsguard.sock")
	ln, err := net.Listen("unix", sock)
	testenv.Must(t, err)
	defer ln.Close()
	testenv.Must(t, os.Chmod(sock, 0o666))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	agent := &syscall.Credential{Uid: 65534, Gid: 65534}
	_, errs, _, _ := runBinaryAs(t, agent, base, nil, "", "health", "--socket", sock)
	if strings.Contains(errs, "permission denied") {
		t.Errorf("the unit's socket directory (%s as %04o) keeps an agent out: %s", dir, mode, errs)
	}

	// The client's words when a directory does keep it out.
	testenv.Must(t, os.Chmod(run, 0o700))
	_, errs, _, _ = runBinaryAs(t, agent, base, nil, "", "health", "--socket", sock)
	if !strings.Contains(errs, "permission denied") || !strings.Contains(errs, sock) || !strings.Contains(errs, "its directory "+run) {
		t.Errorf("the refused connection does not name the socket and its directory: %s", errs)
	}
}

// TestReadOnlyRootWarnsAtStart: a project bound read-only into the
// daemon's container (the Kubernetes mistake: readOnly on the daemon's
// volume, where only the agent's view was meant to be) makes every write
// fail with EROFS; the daemon says so when it starts, naming that root
// and no other.
func TestReadOnlyRootWarnsAtStart(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, "bind mounts a root read-only")
	base := t.TempDir()
	src, ro, rw, mp := filepath.Join(base, "src"), filepath.Join(base, "ro"), filepath.Join(base, "rw"), filepath.Join(base, "mnt")
	for _, d := range []string{src, ro, rw, mp} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644)
	mustRun(t, "mount", "--bind", src, ro)
	t.Cleanup(func() { syscall.Unmount(ro, syscall.MNT_DETACH) })
	mustRun(t, "mount", "-o", "remount,bind,ro", ro)
	policy := filepath.Join(base, "policy.toml")
	writePolicy(t, policy, []string{ro, rw}, "")
	d := startMount(t, mp, "--policy", policy)
	d.log.waitFor(t, "root on a read-only mount", 1, testenv.HangGuard)
	for _, line := range strings.Split(d.log.String(), "\n") {
		if strings.Contains(line, "read-only mount") && (!strings.Contains(line, ro) || strings.Contains(line, rw)) {
			t.Errorf("the warning names the wrong root: %s", line)
		}
	}
}
