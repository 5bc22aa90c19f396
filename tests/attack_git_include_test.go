package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fsguard/fsguard/internal/testenv"
)

// A repository whose config includes a file of its work tree
// (`git config include.path ../.gitconfig-shared`, a way projects share
// settings) takes that file for its own config: an agent that writes
// core.fsmonitor there has the host run its command at the next
// `git status`. The write is refused, for a file that exists and for one
// not made yet, and the host's git runs nothing; a file beside it is
// written.
func TestAttackGitIncludedConfig(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := openDir(t)
	root, pol := filepath.Join(base, "root"), filepath.Join(base, "policy.toml")
	marker := filepath.Join(base, "pwned")
	repo := filepath.Join(root, "repo")
	os.MkdirAll(repo, 0o755)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "safe.directory=*"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("config", "include.path", "../.gitconfig-shared")
	git("config", "--add", "includeIf.gitdir:/.path", "../tools/git.cfg")
	os.MkdirAll(filepath.Join(repo, "tools"), 0o755)
	os.WriteFile(filepath.Join(repo, ".gitconfig-shared"), []byte("[core]\n\tautocrlf = false\n"), 0o644)
	state := filepath.Join(base, "state")
	os.MkdirAll(state, 0o700)
	os.Lchown(state, agentUID, agentGID)
	filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, agentUID, agentGID) })
	writePolicy(t, pol, []string{root}, "")
	agent := &syscall.Credential{Uid: agentUID, Gid: agentGID}
	write := func(rel, body string) (string, int) {
		out, errs, code, _ := runBinaryAs(t, agent, repo, []string{"FSGUARD_POLICY=" + pol, "FSGUARD_SOCKET=", "FSGUARD_SESSION=agent", "FSGUARD_JOURNAL=" + filepath.Join(state, "j.db")}, body, "write", rel)
		return out + errs, code
	}
	evil := "[core]\n\tfsmonitor = \"touch " + marker + "; false\"\n"
	for _, rel := range []string{".gitconfig-shared", "tools/git.cfg"} {
		out, code := write(rel, evil)
		if code == 0 || !strings.Contains(out, "includes it") {
			t.Errorf("write %s: exit %d: %s", rel, code, out)
		}
	}
	if out, code := write("notes.cfg", evil); code != 0 {
		t.Errorf("write notes.cfg beside them: exit %d: %s", code, out)
	}
	git("status", "--porcelain")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the host's git status ran the agent's core.fsmonitor")
	}
}
