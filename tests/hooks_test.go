package tests

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestHooksFoundWhereverGitFindsThem: a hooks directory or an included
// config need not lie in its repository's work tree, nor be named by the
// tree owner's config. The agent writes, through the control socket, a
// hook into ../common-hooks (a work tree's core.hooksPath), into a bare
// repository's relative hooks directory (relative to its git directory),
// a config file a repository includes from outside its work tree (with a
// core.fsmonitor command), and a hook into the directory another user's
// global config names (a developer who owns nothing of the tree). Each is
// refused with FS_WRITE_DENIED, and the git commands the developers run
// next on the host (commit, push, status) run nothing the agent wrote.
func TestHooksFoundWhereverGitFindsThem(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := openDir(t)
	root, mp, sock, pol := filepath.Join(base, "root"), filepath.Join(base, "mnt"), filepath.Join(base, "ctl.sock"), filepath.Join(base, "policy.toml")
	ran := filepath.Join(base, "ran") // what the agent wrote touches a file here when it runs
	devHome := filepath.Join(base, "devhome")
	for _, d := range []string{root, mp, devHome, ran} {
		testenv.Must(t, os.MkdirAll(d, 0o755))
	}
	testenv.Must(t, os.Chmod(ran, 0o1777))
	// A developer of the host, a real user whose global config names a
	// team's hooks directory under the root.
	dev := addUser(t, devHome)
	testenv.Must(t, os.WriteFile(filepath.Join(devHome, ".gitconfig"), []byte("[core]\n\thooksPath = "+filepath.Join(root, "team-hooks")+"\n[safe]\n\tdirectory = *\n"), 0o644))
	gitEnv := append(os.Environ(), "GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_AUTHOR_NAME=d", "GIT_AUTHOR_EMAIL=d@x", "GIT_COMMITTER_NAME=d", "GIT_COMMITTER_EMAIL=d@x")
	gitAs := func(cred *syscall.Credential, home, dir string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "safe.directory=*"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(gitEnv, "HOME="+home, "GIT_CONFIG_GLOBAL="+filepath.Join(home, ".gitconfig"))
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	rootHome := filepath.Join(base, "roothome") // root's git here reads no global config
	testenv.Must(t, os.MkdirAll(rootHome, 0o755))
	testenv.Must(t, os.WriteFile(filepath.Join(rootHome, ".gitconfig"), []byte("[safe]\n\tdirectory = *\n"), 0o644)) // a push's receive-pack reads no -c
	git := func(dir string, args ...string) {
		t.Helper()
		if out, err := gitAs(nil, rootHome, dir, args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	mk := func(rel, body string) {
		t.Helper()
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		testenv.Must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	// A work tree whose hooks are beside it.
	git(root, "init", "-q", "app")
	git(filepath.Join(root, "app"), "config", "core.hooksPath", "../common-hooks")
	mk("common-hooks/README", "hooks\n")
	// A bare repository whose hooks are beside its git directory, and a
	// clone that pushes to it.
	git(root, "init", "-q", "--bare", "srv/origin.git")
	git(filepath.Join(root, "srv", "origin.git"), "config", "core.hooksPath", "../bare-hooks")
	mk("srv/bare-hooks/README", "hooks\n")
	git(root, "clone", "-q", "srv/origin.git", "clone")
	// A work tree including a config from outside it.
	git(root, "init", "-q", "lib")
	git(filepath.Join(root, "lib"), "config", "include.path", "../../shared/git.inc")
	mk("shared/README", "shared\n")
	// The developer's own work tree: only their global config names the
	// team's hooks.
	mk("team-hooks/README", "hooks\n")
	for _, r := range []string{"app", "clone", "lib", "mine"} {
		mk(r+"/main.go", "package main\n")
	}
	filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, agentUID, agentGID) })
	git(filepath.Join(root, "mine"), "init", "-q")
	filepath.Walk(filepath.Join(root, "mine"), func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, int(dev.Uid), int(dev.Gid)) })
	filepath.Walk(devHome, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, int(dev.Uid), int(dev.Gid)) })
	writePolicy(t, pol, []string{root}, fmt.Sprintf("[control]\nallow_uids = [%d]\n", agentUID))
	startMount(t, mp, "--allow-other", "--policy", pol, "--socket", sock)

	agent := &syscall.Credential{Uid: agentUID, Gid: agentGID}
	hook := func(name string) string { return "#!/bin/sh\ntouch " + filepath.Join(ran, name) + "\n" }
	for _, c := range []struct{ rel, body, why string }{
		{"common-hooks/pre-commit", hook("common-hooks"), "hooks directory"},
		{"srv/bare-hooks/pre-receive", hook("bare-hooks"), "hooks directory"},
		{"shared/git.inc", "[core]\n\tfsmonitor = \"touch " + filepath.Join(ran, "included-config") + "; false\"\n", "includes it"},
		{"team-hooks/pre-commit", hook("team-hooks"), "hooks directory"},
	} {
		out, errs, code, _ := runBinaryAs(t, agent, mp, []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=agent"}, c.body, "write", c.rel, "--format", "json")
		if code != 1 || !strings.Contains(out+errs, "FS_WRITE_DENIED") || !strings.Contains(out+errs, c.why) {
			t.Errorf("socket write %s: exit %d, want FS_WRITE_DENIED (%s)\n%s%s", c.rel, code, c.why, out, errs)
		}
		os.Chmod(filepath.Join(root, c.rel), 0o755) // a hook git runs must be executable
	}
	// Ordinary files beside them stay the agent's.
	if out, errs, code, _ := runBinaryAs(t, agent, mp, []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=agent"}, "notes\n", "write", "shared/notes.txt"); code != 0 {
		t.Errorf("socket write shared/notes.txt: exit %d\n%s%s", code, out, errs)
	}
	// The developers work: nothing the agent wrote runs.
	git(filepath.Join(root, "app"), "add", "main.go")
	git(filepath.Join(root, "app"), "commit", "-q", "-m", "x")
	git(filepath.Join(root, "clone"), "add", "main.go")
	git(filepath.Join(root, "clone"), "commit", "-q", "--no-verify", "-m", "x")
	git(filepath.Join(root, "clone"), "push", "-q", "origin", "HEAD:main")
	git(filepath.Join(root, "lib"), "status", "--short")
	cred := &syscall.Credential{Uid: dev.Uid, Gid: dev.Gid}
	for _, args := range [][]string{{"add", "main.go"}, {"commit", "-q", "-m", "x"}} {
		if out, err := gitAs(cred, devHome, filepath.Join(root, "mine"), args...); err != nil {
			t.Fatalf("the developer's git %v: %v\n%s", args, err, out)
		}
	}
	if ents, _ := os.ReadDir(ran); len(ents) > 0 {
		for _, e := range ents {
			t.Errorf("git on the host ran a command the agent wrote (%s)", e.Name())
		}
	}
}

// hostUser is a user added to the host's user database for a test.
type hostUser struct {
	Name     string
	Uid, Gid uint32
}

// addUser adds a user whose home is home to the host's user database (a
// daemon reads the real one), removed when the test ends. useradd takes
// the database's lock, which another test may hold a moment: it is tried
// again until the hang guard.
func addUser(t *testing.T, home string) hostUser {
	t.Helper()
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("no useradd")
	}
	var u hostUser
	testenv.Within(t, 60*time.Second, "useradd", func() error {
		b := make([]byte, 4)
		rand.Read(b)
		u = hostUser{Name: fmt.Sprintf("fsgt%x", b), Uid: 20000 + (uint32(b[0])<<8 | uint32(b[1])), Gid: 100}
		out, err := exec.Command("useradd", "--no-create-home", "--home-dir", home, "--shell", "/bin/sh",
			"--no-user-group", "--gid", "100", "--uid", fmt.Sprint(u.Uid), u.Name).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	t.Cleanup(func() {
		testenv.Within(t, 60*time.Second, "userdel", func() error {
			if out, err := exec.Command("userdel", u.Name).CombinedOutput(); err != nil && !strings.Contains(string(out), "does not exist") {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
	})
	return u
}
