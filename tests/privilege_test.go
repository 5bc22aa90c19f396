package tests

import (
	bin "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/door/control"
	"github.com/fsguard/fsguard/internal/service/api"
	"github.com/fsguard/fsguard/internal/testenv"

	"golang.org/x/sys/unix"
)

// The second user of these tests: no account is needed, the kernel takes
// any uid and gid (SysProcAttr.Credential).
const (
	agentUID  = 1001
	agentGID  = 1001
	sharedGID = 2001 // a supplementary group of the agent
	otherUID  = 1002
)

// needsRoot is why a test with a second user needs root: to become it.
// The FUSE tests that use one run as root wherever FUSE runs (CI).
const needsRoot = "a second user needs root to become"

// privEnv is a daemon serving a tree with files of several owners and
// modes, and a way to run fsguard as another user against its socket.
type privEnv struct {
	base, root, mp, sock string
	d                    *daemon
}

func newPrivEnv(t *testing.T, control string) *privEnv {
	t.Helper()
	testenv.RequireRoot(t, needsRoot)
	base := openDir(t)
	e := &privEnv{base: base, root: filepath.Join(base, "root"), mp: filepath.Join(base, "mnt"), sock: filepath.Join(base, "ctl.sock")}
	for _, d := range []string{e.root, e.mp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := func(rel, content string, mode uint32, uid, gid int) {
		p := filepath.Join(e.root, rel)
		writeFile(t, p, content, 0o600)
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
		// Raw mode bits: os.FileMode spells set-ID differently.
		if err := syscall.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	dir := func(rel string, mode os.FileMode, uid, gid int) {
		p := filepath.Join(e.root, rel)
		if err := os.MkdirAll(p, mode); err != nil {
			t.Fatal(err)
		}
		os.Chown(p, uid, gid)
		os.Chmod(p, mode)
	}
	file("private600.txt", "root only\n", 0o600, 0, 0)
	file("group.txt", "for the shared group\n", 0o640, 0, sharedGID)
	file("acl.txt", "granted by an ACL\n", 0o600, 0, 0)
	setACL(t, filepath.Join(e.root, "acl.txt"), agentUID)
	file("acl-shut.txt", "everyone but the agent\n", 0o600, 0, 0)
	shutACL(t, filepath.Join(e.root, "acl-shut.txt"), agentUID)
	file("rootfile.txt", "root's, readable by all\n", 0o644, 0, 0)
	dir("agent", 0o755, agentUID, agentGID)
	file("agent/suid", "#!/bin/sh\necho hi\n", 0o4755, agentUID, agentGID)
	file("agent/shared.txt", "anyone may write\n", 0o666, 0, 0)
	file("agent/victim.txt", "read by root in session victim\n", 0o666, agentUID, agentGID)
	dir("agent/repo/.git/hooks", 0o755, agentUID, agentGID)
	file("agent/repo/.git/config", "[core]\n", 0o644, agentUID, agentGID)
	dir("rootonly", 0o700, 0, 0)
	file("rootonly/hidden-name.txt", "x\n", 0o644, 0, 0)
	dir("traverse", 0o711, 0, 0)
	file("traverse/unlisted-name.txt", "x\n", 0o644, 0, 0)
	writePolicy(t, filepath.Join(base, "policy.toml"), []string{e.root}, control)
	e.d = startMount(t, e.mp, "--allow-other", "--policy", filepath.Join(base, "policy.toml"), "--socket", e.sock)
	return e
}

// setACL grants uid read access to path with a POSIX access ACL, written as
// the kernel's own xattr (what setfacl writes): user::rw-, user:uid:r--,
// group::---, mask::r--, other::---.
func setACL(t *testing.T, path string, uid uint32) { writeACL(t, path, uid, 4, 0) }

// shutACL shuts uid out of a file everyone else may read: user::rw-,
// user:uid:---, group::---, mask::r--, other::r--.
func shutACL(t *testing.T, path string, uid uint32) { writeACL(t, path, uid, 0, 4) }

func writeACL(t *testing.T, path string, uid uint32, perm, other uint16) {
	t.Helper()
	const undefined = 0xffffffff
	b := bin.LittleEndian.AppendUint32(nil, 2) // POSIX_ACL_XATTR_VERSION
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, 6, undefined}, {0x02, perm, uid}, {0x04, 0, undefined}, {0x10, 4, undefined}, {0x20, other, undefined}} {
		b = bin.LittleEndian.AppendUint16(b, e.tag)
		b = bin.LittleEndian.AppendUint16(b, e.perm)
		b = bin.LittleEndian.AppendUint32(b, e.id)
	}
	if err := unix.Setxattr(path, "system.posix_acl_access", b, 0); err != nil {
		t.Fatalf("setting an ACL on %s: %v (the file system must support POSIX ACLs)", path, err)
	}
}

// as runs fsguard against the daemon's socket as uid/gid with the given
// supplementary groups, in the mount's top directory.
func (e *privEnv) as(t *testing.T, uid, gid uint32, groups []uint32, stdin string, args ...string) (string, string, int) {
	t.Helper()
	out, errs, code, _ := runBinaryAs(t, &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}, e.mp,
		[]string{"FSGUARD_SOCKET=" + e.sock, "FSGUARD_SESSION=agent"}, stdin, args...)
	return out, errs, code
}

func (e *privEnv) agent(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return e.as(t, agentUID, agentGID, []uint32{sharedGID}, stdin, args...)
}

func stat(t *testing.T, path string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// TestSocketRefusesUnlistedUids: by default only root is served; anyone
// else gets a clear refusal, and the daemon logs it (a line per uid and
// interval, see TestSocketRefusedFloodLocksNoOneOut).
func TestSocketRefusesUnlistedUids(t *testing.T) {
	t.Parallel()
	e := newPrivEnv(t, "")
	out, errs, code := e.agent(t, "", "read", "rootfile.txt")
	if code != 1 || out != "" || !strings.Contains(errs, "allow_uids") {
		t.Fatalf("an unlisted uid was not refused: exit %d\n%s%s", code, out, errs)
	}
	// A write is refused before its content is sent, with the same words.
	if out, errs, code := e.agent(t, strings.Repeat("x", 4<<20), "write", "agent/x.txt"); code != 1 || out != "" || !strings.Contains(errs, "allow_uids") {
		t.Errorf("an unlisted uid's write: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Lstat(filepath.Join(e.root, "agent/x.txt")); err == nil {
		t.Error("an unlisted uid's write created a file")
	}
	e.d.log.waitFor(t, `"msg":"control connection refused"`, 1, 10e9)
	if !strings.Contains(e.d.log.String(), fmt.Sprintf(`"uid":%d`, agentUID)) {
		t.Errorf("the refusal log line does not name the uid: %s", e.d.log.String())
	}
	// Root is always served.
	if _, errs, code := e.as(t, 0, 0, nil, "", "read", "rootfile.txt"); code != 0 {
		t.Fatalf("root was refused: %s", errs)
	}
}

// TestSocketActsWithCallersRights: a granted uid gets exactly what it could
// do itself — the kernel decides, with its mode bits, groups and ACLs.
func TestSocketActsWithCallersRights(t *testing.T) {
	t.Parallel()
	e := newPrivEnv(t, fmt.Sprintf("[control]\nallow_uids = [%d]\n", agentUID))
	backing := func(rel string) string { return filepath.Join(e.root, rel) }

	if out, errs, code := e.agent(t, "", "read", "private600.txt", "--format", "json"); code != 1 || !strings.Contains(out, `"code":"PERMISSION_DENIED"`) || strings.Contains(out+errs, "root only") {
		t.Errorf("a root-only 0600 file was served to uid %d: exit %d\n%s%s", agentUID, code, out, errs)
	}
	if out, errs, code := e.agent(t, "", "read", "group.txt"); code != 0 || !strings.Contains(out, "for the shared group") {
		t.Errorf("a file readable through a supplementary group was refused: exit %d\n%s%s", code, out, errs)
	}
	if out, _, code := e.as(t, agentUID, agentGID, nil, "", "read", "group.txt"); code != 1 || strings.Contains(out, "for the shared group") {
		t.Errorf("without the group, the group's file was served: exit %d %s", code, out)
	}
	if out, errs, code := e.agent(t, "", "read", "acl.txt"); code != 0 || !strings.Contains(out, "granted by an ACL") {
		t.Errorf("an ACL-granted file was refused: exit %d\n%s%s", code, out, errs)
	}
	if out, _, code := e.as(t, otherUID, otherUID, nil, "", "read", "acl.txt"); code != 1 || strings.Contains(out, "granted") {
		// otherUID is not granted at all: refused at accept.
		t.Errorf("uid %d read acl.txt: exit %d %s", otherUID, code, out)
	}

	// A directory is listed with the caller's rights: one it may not read
	// (0700 root's, or 0711: enter, not list) shows no name, as ls would.
	for _, d := range []string{"rootonly", "traverse"} {
		if out, errs, code := e.agent(t, "", "read", d, "--format", "json"); code != 1 || !strings.Contains(out, `"code":"PERMISSION_DENIED"`) || strings.Contains(out+errs, "-name") {
			t.Errorf("uid %d listed the root-only directory %s: exit %d\n%s%s", agentUID, d, code, out, errs)
		}
	}
	if out, errs, code := e.agent(t, "", "read", "traverse/unlisted-name.txt"); code != 0 || !strings.Contains(out, "1: x") {
		t.Errorf("a file in a 0711 directory, named, was refused: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code := e.agent(t, "", "read", "agent"); code != 0 || !strings.Contains(out, "repo/\nshared.txt\n") {
		t.Errorf("the agent's own directory was not listed: exit %d\n%s%s", code, out, errs)
	}

	// A root-owned file it may read but not write: refused, untouched.
	if _, errs, code := e.agent(t, "", "read", "rootfile.txt"); code != 0 {
		t.Fatalf("read rootfile.txt: %s", errs)
	}
	if out, errs, code := e.agent(t, "pwned\n", "write", "rootfile.txt"); code != 1 || !strings.Contains(errs, "ermission denied") {
		t.Errorf("a root-owned 0644 file was written by uid %d: exit %d\n%s%s", agentUID, code, out, errs)
	}
	if b, _ := os.ReadFile(backing("rootfile.txt")); string(b) != "root's, readable by all\n" {
		t.Errorf("rootfile.txt changed: %q", b)
	}
	// Nor can it create files where it may not.
	if _, errs, code := e.agent(t, "x\n", "write", "planted.txt"); code != 1 {
		t.Errorf("uid %d created a file in a root-owned 0755 directory: %s", agentUID, errs)
	}
	if _, err := os.Lstat(backing("planted.txt")); err == nil {
		t.Error("planted.txt exists")
	}

	// A new file is the caller's.
	if _, errs, code := e.agent(t, "new\n", "write", "agent/new.txt"); code != 0 {
		t.Fatalf("creating agent/new.txt: %s", errs)
	}
	if st := stat(t, backing("agent/new.txt")); st.Uid != agentUID || st.Gid != agentGID {
		t.Errorf("a new file is owned by %d:%d, want the caller %d:%d", st.Uid, st.Gid, agentUID, agentGID)
	}

	// A set-user-ID file written: the bit is gone, the owner stays the caller.
	if st := stat(t, backing("agent/suid")); st.Mode&syscall.S_ISUID == 0 {
		t.Fatalf("fixture: agent/suid is mode %o, not set-user-ID", st.Mode&0o7777)
	}
	if _, errs, code := e.agent(t, "", "read", "agent/suid"); code != 0 {
		t.Fatalf("read agent/suid: %s", errs)
	}
	id, _ := os.ReadFile("/usr/bin/id")
	if _, errs, code := e.agent(t, string(id), "write", "agent/suid"); code != 0 {
		t.Fatalf("write agent/suid: %s", errs)
	}
	if st := stat(t, backing("agent/suid")); st.Mode&(syscall.S_ISUID|syscall.S_ISGID) != 0 || st.Uid != agentUID {
		t.Errorf("after a write agent/suid is mode %o owned by %d: a set-ID bit survived or the owner changed", st.Mode&0o7777, st.Uid)
	}
	// A root-owned world-writable file may be written, and stays root's.
	if _, errs, code := e.agent(t, "", "read", "agent/shared.txt"); code != 0 {
		t.Fatalf("read agent/shared.txt: %s", errs)
	}
	if _, errs, code := e.agent(t, "changed\n", "write", "agent/shared.txt"); code != 0 {
		t.Fatalf("write agent/shared.txt: %s", errs)
	}
	if st := stat(t, backing("agent/shared.txt")); st.Uid != 0 || st.Gid != 0 || st.Mode&0o7777 != 0o666 {
		t.Errorf("a replaced file lost its owner or mode: %d:%d %o", st.Uid, st.Gid, st.Mode&0o7777)
	}

	// Files the host runs on its own are not the agent's to write.
	for _, rel := range []string{"agent/repo/.git/config", "agent/repo/.git/hooks/pre-commit", "agent/repo/.envrc"} {
		e.agent(t, "", "read", rel)
		out, errs, code := e.agent(t, "[core]\n\tfsmonitor = touch /tmp/pwned\n", "write", rel)
		if code != 1 || !strings.Contains(errs, "[write] deny_globs") {
			t.Errorf("write %s: exit %d, want FS_WRITE_DENIED\n%s%s", rel, code, out, errs)
		}
	}
	if b, _ := os.ReadFile(backing("agent/repo/.git/config")); string(b) != "[core]\n" {
		t.Errorf(".git/config changed: %q", b)
	}
	if _, err := os.Lstat(backing("agent/repo/.git/hooks/pre-commit")); err == nil {
		t.Error("a git hook was created")
	}
	// ... but reading .git stays allowed: git works through the mount.
	if out, errs, code := e.agent(t, "", "read", "agent/repo/.git/config", "--no-dedupe"); code != 0 || !strings.Contains(out, "[core]") {
		t.Errorf("reading .git/config was refused: %s", errs)
	}

	// Sessions belong to their caller: root's session "victim" passes
	// nothing for uid 1001 naming the same id.
	if _, errs, code := e.as(t, 0, 0, nil, "", "read", "agent/victim.txt", "--session", "victim"); code != 0 {
		t.Fatalf("root read: %s", errs)
	}
	if _, errs, code := e.as(t, 0, 0, nil, "", "check", "agent/victim.txt", "--session", "victim"); code != 0 {
		t.Fatalf("root's own check failed: %s", errs)
	}
	// uid 1001 uses the id "victim" too (for another file): two sessions.
	if _, errs, code := e.agent(t, "", "read", "rootfile.txt", "--session", "victim"); code != 0 {
		t.Fatalf("read: %s", errs)
	}
	if _, errs, code := e.agent(t, "", "check", "agent/victim.txt", "--session", "victim"); code == 0 || !strings.Contains(errs, "not been read") {
		t.Errorf("uid %d passed root's session precondition: exit %d %s", agentUID, code, errs)
	}
	if _, errs, code := e.agent(t, "stolen\n", "write", "agent/victim.txt", "--session", "victim"); code == 0 {
		t.Errorf("uid %d wrote through root's session: %s", agentUID, errs)
	}
	if b, _ := os.ReadFile(backing("agent/victim.txt")); !strings.HasPrefix(string(b), "read by root") {
		t.Errorf("victim.txt changed: %q", b)
	}
	// The journal shows whose sessions these were.
	out, _, _, _ := runBinary(t, e.base, []string{"FSGUARD_JOURNAL=" + e.d.journal}, "", "journal", "query", "--session", "victim", "--format", "json")
	if !strings.Contains(out, `"owner": "uid:0 `) || !strings.Contains(out, fmt.Sprintf(`"owner": "uid:%d `, agentUID)) {
		t.Errorf("journal records do not carry both owners:\n%s", out)
	}
}

// TestSocketBoundsResources: concurrent large writes stream to disk, not
// memory; repeated calls reuse connections on both sides.
func TestSocketBoundsResources(t *testing.T) {
	t.Parallel()
	e := newPrivEnv(t, fmt.Sprintf("[control]\nallow_uids = [%d]\n", agentUID))
	big := strings.Repeat(strings.Repeat("x", 99)+"\n", 400<<10) // 40 MiB
	var wg sync.WaitGroup
	errs := make([]string, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, e2, code := e.agent(t, big, "write", fmt.Sprintf("agent/big%d.txt", i))
			if code != 0 {
				errs[i] = e2
			}
		}()
	}
	wg.Wait()
	for i, s := range errs {
		if s != "" {
			t.Fatalf("write %d: %s", i, s)
		}
		if st := stat(t, filepath.Join(e.root, fmt.Sprintf("agent/big%d.txt", i))); st.Size != int64(len(big)) {
			t.Fatalf("big%d.txt has %d bytes", i, st.Size)
		}
	}
	rss := peakRSS(e.d.cmd.Process.Pid)
	t.Logf("daemon peak RSS after 4 concurrent 40 MiB writes: %d kB", rss)
	if rss > 200<<10 {
		t.Errorf("daemon peak RSS %d kB after 4 concurrent 40 MiB writes; bound 200 MB", rss)
	}
}

// TestSocketCallsReuseConnections: 100 calls through control.Call hold the
// number of goroutines and descriptors constant on both sides (one client
// per process, connections reused). Not parallel: it counts this process's
// goroutines and descriptors, which other tests would move. The slack is 10,
// not 0: the daemon's own background work (the verdicts save after a quiet
// spell, the warm walk, SQLite's checkpoint) holds a few descriptors for a
// moment (CI once saw 29→32), while a leak of one per call would show 100.
func TestSocketCallsReuseConnections(t *testing.T) {
	e := newPrivEnv(t, "")
	call := func() {
		t.Helper()
		out, err := control.Call(e.sock, api.Request{Op: "read", Path: "rootfile.txt", Cwd: e.mp, Session: "calls", NoDedupe: true}, nil)
		if err != nil || out.Exit != 0 {
			t.Fatalf("call: %v %s", err, out.Stderr)
		}
	}
	call() // the first call opens the connection both sides then keep
	pid := e.d.cmd.Process.Pid
	g0, f0, dg0, df0 := runtime.NumGoroutine(), fdCount(t, os.Getpid()), daemonGoroutines(t, e.sock), fdCount(t, pid)
	for range 100 {
		call()
	}
	g1, f1, dg1, df1 := runtime.NumGoroutine(), fdCount(t, os.Getpid()), daemonGoroutines(t, e.sock), fdCount(t, pid)
	t.Logf("client: %d→%d goroutines, %d→%d fds; daemon: %d→%d goroutines, %d→%d fds", g0, g1, f0, f1, dg0, dg1, df0, df1)
	const slack = 10
	if g1 > g0+slack || f1 > f0+slack || dg1 > dg0+slack || df1 > df0+slack {
		t.Errorf("100 calls grew goroutines or descriptors: client %d→%d goroutines, %d→%d fds; daemon %d→%d goroutines, %d→%d fds", g0, g1, f0, f1, dg0, dg1, df0, df1)
	}
}

func fdCount(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// daemonGoroutines reads go_goroutines from the daemon's /metrics over a
// connection of its own, closed after the answer.
func daemonGoroutines(t *testing.T, sock string) int {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET /metrics HTTP/1.0\r\n\r\n")
	b, _ := io.ReadAll(c)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "go_goroutines "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatalf("no go_goroutines in /metrics:\n%s", b)
	return 0
}

// TestMountShowsACLsAsModeBits: the mount shows no POSIX ACL (the kernel
// would ask the daemon for each inode's, a round trip per file for every
// caller but its owner); it shows mode bits no more permissive than the
// backing ACL for any entry. So an ACL that grants beyond the mode bits
// (acl.txt, mode 0600, the agent named r--) grants nothing through the
// mount, and one that restricts (acl-shut.txt, the agent named ---, "other"
// r--) still restricts: whether or not root read the file first (its pages
// are then in the shared cache), and after the ACL changed. Asking the
// kernel to check ACLs gave the agent acl.txt and cost a GETXATTR per
// inode; mode bits taken as they are gave the agent acl-shut.txt.
func TestMountShowsACLsAsModeBits(t *testing.T) {
	e := newPrivEnv(t, "")
	t.Parallel()
	agentCat := func(name string) (string, error) {
		cmd := exec.Command("cat", filepath.Join(e.mp, name))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: agentUID, Gid: agentGID}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	modeOf := func(name string) uint32 {
		var st unix.Stat_t
		testenv.Must(t, unix.Stat(filepath.Join(e.mp, name), &st))
		return st.Mode & 0o777
	}
	// user::rw-, user:agent:r--, group::---, mask::r--, other::---: the
	// group bits may grant no more than the owning group's entry.
	if m := modeOf("acl.txt"); m != 0o600 {
		t.Errorf("acl.txt shows mode %04o through the mount, want 0600", m)
	}
	// user::rw-, user:agent:---, group::---, mask::r--, other::r--: "other"
	// may grant no more than the named user's entry.
	if m := modeOf("acl-shut.txt"); m != 0o600 {
		t.Errorf("acl-shut.txt shows mode %04o through the mount, want 0600", m)
	}
	buf := make([]byte, 256)
	if _, err := unix.Getxattr(filepath.Join(e.mp, "acl.txt"), "system.posix_acl_access", buf); !errors.Is(err, unix.ENOTSUP) {
		t.Errorf("the mount shows an ACL of acl.txt: %v", err)
	}
	// The agent, who owns none of these, costs the daemon no GETXATTR.
	getxattrs := func() float64 {
		return counters(scrape(t, e.sock))[`fsguard_fuse_op_seconds_count{op="getxattr"}`]
	}
	asked := getxattrs()
	for _, n := range []string{"rootfile.txt", "private600.txt", "group.txt", "agent/shared.txt"} {
		agentCat(n)
	}
	if n := getxattrs() - asked; n != 0 {
		t.Errorf("the agent's reads of four files asked the daemon for %v attributes", n)
	}
	for _, rootFirst := range []bool{false, true} {
		if rootFirst {
			for _, n := range []string{"acl.txt", "acl-shut.txt"} {
				mustRun(t, "cat", filepath.Join(e.mp, n))
			}
		}
		if out, err := agentCat("acl.txt"); err == nil || strings.Contains(out, "granted") {
			t.Errorf("root read first %v: the agent, granted by the ACL beyond the mode bits, read %q through the mount", rootFirst, out)
		}
		if out, err := agentCat("acl-shut.txt"); err == nil || strings.Contains(out, "everyone") {
			t.Errorf("root read first %v: the agent, shut out by the ACL, read %q", rootFirst, out)
		}
	}
	// The ACL changes on the backing file (user:agent:r--, other::r--):
	// the mount follows.
	writeACL(t, filepath.Join(e.root, "acl-shut.txt"), agentUID, 4, 4)
	testenv.Within(t, 30*time.Second, "the agent let in by the changed ACL", func() error {
		if out, err := agentCat("acl-shut.txt"); err != nil {
			return fmt.Errorf("%v %s", err, out)
		}
		return nil
	})

	shutACL(t, filepath.Join(e.root, "acl-shut.txt"), agentUID)
	testenv.Within(t, 30*time.Second, "the agent shut out again", func() error {
		if out, err := agentCat("acl-shut.txt"); err == nil {
			return fmt.Errorf("read %q", out)
		}
		return nil
	})

}
