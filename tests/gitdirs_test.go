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

	"github.com/fsguard/fsguard/internal/testenv"
)

// mcpCall calls one tool through `fsguard mcp` (args choose the policy or
// the socket) as cred (nil: this process's user), in dir, with raw
// JSON-RPC lines, and returns the tool call's answer line.
func mcpCall(t *testing.T, cred *syscall.Credential, dir string, args []string, tool string, arguments map[string]any) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+filepath.Join(t.TempDir(), "j.db"))
	if cred != nil {
		testenv.As(cmd, cred.Uid, cred.Gid, cred.Groups...)
	}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("fsguard mcp %v: no answer in 60s", args)
		}
		return ""
	}
	call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": arguments}})
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	next() // the initialize answer
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+string(call)+"\n")
	return next()
}

// TestGitDirsThroughEveryDoor: a git directory not named .git — made with
// --separate-git-dir, a bare repository by any name, Google repo's
// .repo/projects/*.git, one made after the daemon started — is refused to
// write by the default policy through every door: the control socket and
// MCP over it for a second user who owns the files and could write them
// itself, the CLI and MCP on their own for root, and the read-only mount.
// The hook and config an agent writes there are what the developer's next
// `git status` would run.
func TestGitDirsThroughEveryDoor(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := openDir(t)
	root, mp, sock, pol := filepath.Join(base, "root"), filepath.Join(base, "mnt"), filepath.Join(base, "ctl.sock"), filepath.Join(base, "policy.toml")
	for _, d := range []string{root, mp, filepath.Join(root, "work"), filepath.Join(root, ".repo", "projects")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	own := func() { // the agent owns everything: only fsguard stands in its way
		filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, agentUID, agentGID) })
	}
	git(root, "init", "-q", "--separate-git-dir="+filepath.Join(root, "sepgit"), "sepwork")
	git(root, "init", "-q", "--bare", "origin.git")
	git(root, "init", "-q", "--bare", "plain")
	git(filepath.Join(root, ".repo", "projects"), "init", "-q", "--bare", "x.git")
	os.Symlink("../plain", filepath.Join(root, "work", "alias"))
	own()
	writePolicy(t, pol, []string{root}, fmt.Sprintf("[control]\nallow_uids = [%d]\n", agentUID))
	startMount(t, mp, "--allow-other", "--policy", pol, "--socket", sock)
	git(root, "init", "-q", "--bare", "late") // after the daemon started
	own()

	agent := &syscall.Credential{Uid: agentUID, Gid: agentGID}
	viaSocket := func(dir, stdin string, args ...string) (string, string, int) {
		out, errs, code, _ := runBinaryAs(t, agent, dir, []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=agent"}, stdin, args...)
		return out, errs, code
	}
	direct := func(dir, stdin string, args ...string) (string, string, int) {
		out, errs, code, _ := runBinary(t, dir, []string{"FSGUARD_POLICY=" + pol, "FSGUARD_SOCKET=", "FSGUARD_SESSION=cli", "FSGUARD_JOURNAL=" + filepath.Join(base, "cli.db")}, stdin, args...)
		return out, errs, code
	}
	const evil = "[core]\n\tfsmonitor = touch /tmp/fsguard-pwned\n"
	// refused: the door said no (exit 1, or an MCP tool error) with the
	// code and the reason's words.
	refused := func(door, name string, no bool, answer string) {
		t.Helper()
		if !no || !strings.Contains(answer, "FS_WRITE_DENIED") || !strings.Contains(answer, "git directory") {
			t.Errorf("%s write %s: want FS_WRITE_DENIED naming the git directory, got\n%s", door, name, answer)
		}
	}
	for _, d := range []string{"sepgit", "origin.git", "plain", ".repo/projects/x.git", "late"} {
		for _, name := range []string{"config", "hooks/pre-commit", "info/attributes", "new-file"} {
			rel := filepath.Join(d, name)
			out, errs, code := viaSocket(mp, evil, "write", rel, "--format", "json")
			refused("socket", rel, code == 1, out+errs)
			out, errs, code = direct(root, evil, "write", rel, "--format", "json")
			refused("direct", rel, code == 1, out+errs)
		}
		// An edit, after a read: the read is allowed, the edit is not.
		rel := filepath.Join(d, "config")
		if _, errs, code := viaSocket(mp, "", "read", rel); code != 0 {
			t.Fatalf("socket read %s: %s", rel, errs)
		}
		out, errs, code := viaSocket(mp, "", "edit", rel, "--old", "[core]", "--new", evil, "--format", "json")
		refused("socket edit", rel, code == 1, out+errs)
		// MCP, over the socket as the agent and on its own as root.
		ans := mcpCall(t, agent, mp, []string{"--socket", sock}, "write", map[string]any{"path": rel, "content": evil})
		refused("MCP (socket)", rel, strings.Contains(ans, `"isError":true`), ans)
		ans = mcpCall(t, nil, root, []string{"--policy", pol}, "write", map[string]any{"path": filepath.Join(d, "hooks", "post-checkout"), "content": "#!/bin/sh\ntouch /tmp/fsguard-pwned\n"})
		refused("MCP (direct)", d+"/hooks/post-checkout", strings.Contains(ans, `"isError":true`), ans)
		// The mount is read-only.
		if err := os.WriteFile(filepath.Join(mp, d, "config"), []byte(evil), 0o644); err == nil {
			t.Errorf("the mount let %s/config be written", d)
		}
	}
	// A relative path through a symbolic link, from another directory.
	out, errs, code := viaSocket(filepath.Join(mp, "work"), evil, "write", "alias/config", "--format", "json")
	refused("socket", "work/alias/config", code == 1, out+errs)
	// Nothing of git's changed or appeared.
	for _, d := range []string{"sepgit", "origin.git", "plain", ".repo/projects/x.git", "late"} {
		if b, _ := os.ReadFile(filepath.Join(root, d, "config")); strings.Contains(string(b), "fsmonitor") {
			t.Errorf("%s/config was written: %q", d, b)
		}
		for _, name := range []string{"hooks/pre-commit", "hooks/post-checkout", "info/attributes", "new-file"} {
			if _, err := os.Lstat(filepath.Join(root, d, name)); err == nil {
				t.Errorf("%s/%s was created", d, name)
			}
		}
	}
	// Ordinary files beside them and in the work tree stay the agent's.
	for _, rel := range []string{"work/new.txt", "sepwork/main.go"} {
		if out, errs, code := viaSocket(mp, "package main\n", "write", rel); code != 0 {
			t.Errorf("socket write %s: exit %d\n%s%s", rel, code, out, errs)
		}
	}
}
