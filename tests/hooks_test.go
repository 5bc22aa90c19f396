package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestHooksOutsideTheGitDir: the hooks a commit runs need not be in the
// git directory. An agent (a second user who owns every file and could
// write them itself) writes, through the control socket and `fsguard
// write`, husky's .husky/pre-commit, pre-commit's and lefthook's configs,
// a hook in a directory core.hooksPath names (in the repository's config,
// or in a file it includes), and one through a symbolic link to a hooks
// directory: each is refused with FS_WRITE_DENIED, and the developer's
// next `git commit` on the host runs nothing the agent wrote. Reading
// them stays allowed, ordinary files stay writable, and [write]
// hook_managers = "allow" lets the agent change a hook manager's files
// but never a core.hooksPath directory.
func TestHooksOutsideTheGitDir(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := openDir(t)
	root, mp, sock, pol := filepath.Join(base, "root"), filepath.Join(base, "mnt"), filepath.Join(base, "ctl.sock"), filepath.Join(base, "policy.toml")
	marker := filepath.Join(base, "pwned")
	for _, d := range []string{root, mp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitEnv := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_AUTHOR_NAME=d", "GIT_AUTHOR_EMAIL=d@x", "GIT_COMMITTER_NAME=d", "GIT_COMMITTER_EMAIL=d@x")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "safe.directory=*"}, args...)...)
		cmd.Dir = dir
		cmd.Env = gitEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	mk := func(rel, body string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	// husky: core.hooksPath = .husky/_, whose scripts run .husky/<hook>.
	git(root, "init", "-q", "husky")
	git(filepath.Join(root, "husky"), "config", "core.hooksPath", ".husky/_")
	mk("husky/.husky/_/pre-commit", "#!/bin/sh\nh=\"$(dirname \"$0\")/../pre-commit\"\n[ -f \"$h\" ] && . \"$h\"\nexit 0\n", 0o755)
	os.MkdirAll(filepath.Join(root, "husky", ".lefthook", "pre-commit"), 0o755)
	// A custom hooks directory, named in the config.
	git(root, "init", "-q", "custom")
	git(filepath.Join(root, "custom"), "config", "core.hooksPath", "tools/hooks")
	mk("custom/tools/hooks/README", "hooks\n", 0o644)
	// Named in a file the config includes.
	git(root, "init", "-q", "incl")
	mk("incl/.git/hooks.cfg", "[core]\n\thooksPath = \"ci/hk\" ; a comment\n", 0o644)
	git(filepath.Join(root, "incl"), "config", "include.path", "hooks.cfg")
	mk("incl/ci/hk/README", "hooks\n", 0o644)
	// A symbolic link to the hooks directory.
	git(root, "init", "-q", "linked")
	git(filepath.Join(root, "linked"), "config", "core.hooksPath", ".githooks")
	mk("linked/scripts/real-hooks/README", "hooks\n", 0o644)
	os.Symlink("scripts/real-hooks", filepath.Join(root, "linked", ".githooks"))
	for _, r := range []string{"husky", "custom", "incl", "linked"} {
		mk(r+"/main.go", "package main\n", 0o644)
		git(filepath.Join(root, r), "add", "main.go")
	}
	filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, agentUID, agentGID) })
	writePolicy(t, pol, []string{root}, fmt.Sprintf("[control]\nallow_uids = [%d]\n", agentUID))
	startMount(t, mp, "--allow-other", "--policy", pol, "--socket", sock)

	agent := &syscall.Credential{Uid: agentUID, Gid: agentGID}
	viaSocket := func(stdin string, args ...string) (string, string, int) {
		out, errs, code, _ := runBinaryAs(t, agent, mp, []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=agent"}, stdin, args...)
		return out, errs, code
	}
	direct := func(policy, stdin string, args ...string) (string, string, int) {
		out, errs, code, _ := runBinary(t, root, []string{"FSGUARD_POLICY=" + policy, "FSGUARD_SOCKET=", "FSGUARD_SESSION=cli", "FSGUARD_JOURNAL=" + filepath.Join(base, "cli.db")}, stdin, args...)
		return out, errs, code
	}
	hook := "#!/bin/sh\ntouch " + marker + "\n"
	for _, c := range []struct{ rel, why string }{
		{"husky/.husky/pre-commit", "a hook manager's file"},
		{"husky/.husky/_/pre-commit", "a hook manager's file"},
		{"husky/.pre-commit-config.yaml", "a hook manager's file"},
		{"husky/lefthook.yml", "a hook manager's file"},
		{"husky/.lefthook/pre-commit/run.sh", "a hook manager's file"},
		{"custom/tools/hooks/pre-commit", "hooks directory"},
		{"custom/tools/hooks/README", "hooks directory"},
		{"incl/ci/hk/pre-commit", "hooks directory"},
		{"linked/.githooks/pre-commit", "hooks directory"},
		{"linked/scripts/real-hooks/pre-commit", "hooks directory"},
	} {
		for door, write := range map[string]func() (string, string, int){
			"socket": func() (string, string, int) { return viaSocket(hook, "write", c.rel, "--format", "json") },
			"direct": func() (string, string, int) { return direct(pol, hook, "write", c.rel, "--format", "json") },
		} {
			out, errs, code := write()
			if code != 1 || !strings.Contains(out+errs, "FS_WRITE_DENIED") || !strings.Contains(out+errs, c.why) {
				t.Errorf("%s write %s: exit %d, want FS_WRITE_DENIED (%s)\n%s%s", door, c.rel, code, c.why, out, errs)
			}
		}
	}
	// Reading them stays allowed.
	if out, errs, code := viaSocket("", "read", "custom/tools/hooks/README"); code != 0 || !strings.Contains(out, "hooks") {
		t.Errorf("socket read of a hooks directory's file: exit %d %s%s", code, out, errs)
	}
	// Ordinary files of the same repositories stay the agent's.
	for _, rel := range []string{"husky/new.go", "custom/tools/build.sh", "linked/scripts/lint.sh"} {
		if out, errs, code := viaSocket("package main\n", "write", rel); code != 0 {
			t.Errorf("socket write %s: exit %d\n%s%s", rel, code, out, errs)
		}
	}
	// The developer commits: nothing the agent wrote runs.
	for _, r := range []string{"husky", "custom", "incl", "linked"} {
		git(filepath.Join(root, r), "commit", "-q", "-m", "x")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a git commit on the host ran a hook the agent wrote")
	}
	// hook_managers = "allow": the hook manager's files are the agent's,
	// a core.hooksPath directory never is.
	allow := filepath.Join(base, "allow.toml")
	writePolicy(t, allow, []string{root}, "[write]\nhook_managers = \"allow\"\n")
	if out, errs, code := direct(allow, "echo hi\n", "write", "husky/lefthook.yml"); code != 0 {
		t.Errorf("hook_managers = allow: write lefthook.yml: exit %d %s%s", code, out, errs)
	}
	if out, errs, code := direct(allow, hook, "write", "custom/tools/hooks/pre-commit", "--format", "json"); code != 1 || !strings.Contains(out+errs, "hooks directory") {
		t.Errorf("hook_managers = allow: write into core.hooksPath: exit %d %s%s", code, out, errs)
	}
}
