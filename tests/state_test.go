package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// stagedEnv makes a git repository at repo, owned by uid/gid, with one
// commit and a .env that is staged and never committed: the history scan
// reports it as "staged .env (denied path)".
func stagedEnv(t *testing.T, repo string, uid, gid int) {
	t.Helper()
	gitIn := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	writeFile(t, filepath.Join(repo, "main.go"), "package main\n", 0o644)
	gitIn("init", "-q")
	gitIn("add", "-A")
	gitIn("commit", "-qm", "first")
	writeFile(t, filepath.Join(repo, ".env"), canary+"=1\n", 0o644)
	gitIn("add", ".env")
	filepath.Walk(repo, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, gid) })
}

// daemonState is the part of `fsguard status --format json` the tests read.
type daemonState struct {
	Version  string   `json:"version"`
	Scope    string   `json:"scope"`
	Roots    []string `json:"roots"`
	Sessions int      `json:"sessions"`
	Policy   struct {
		Source, SHA256 string
	} `json:"policy"`
	Mount struct {
		Point, Open, Watch, WarmWalk string
	} `json:"mount"`
	Journal struct {
		Path string
		Head int64
	} `json:"journal"`
	History struct {
		Mode, State string
		Finished    *time.Time
		Repos       []struct {
			Path     string
			Complete bool
			Findings []struct {
				Text, Path, Where, Why string
			}
		}
	} `json:"history"`
}

// TestDaemonStatus: `fsguard status` with no id says what the daemon is
// doing, the history scan's findings included, in text and JSON; with an
// id it still answers for a write. A second uid allowed on the socket
// sees only what it could read itself: not a root it cannot open, nor the
// findings in that root's repositories, nor root's sessions. A repository
// named with terminal escapes reaches the terminal escaped.
func TestDaemonStatus(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := openDir(t)
	shared, secret, mp, sock := filepath.Join(base, "shared"), filepath.Join(base, "secret"), filepath.Join(base, "mnt"), filepath.Join(base, "ctl.sock")
	testenv.Must(t, os.Mkdir(mp, 0o755))
	writeFile(t, filepath.Join(shared, "README.md"), "shared\n", 0o644)
	stagedEnv(t, filepath.Join(shared, "app"), agentUID, agentGID)
	evil := "x\x1b]0;owned\x07\x1b[2J"
	stagedEnv(t, filepath.Join(shared, evil), agentUID, agentGID)
	// A repository whose work tree all may list and whose git directory
	// only root may open: its history is root's alone.
	stagedEnv(t, filepath.Join(shared, "locked"), 0, 0)
	testenv.Must(t, os.Chmod(filepath.Join(shared, "locked", ".git"), 0o700))
	// A repository in a root only root may open.
	stagedEnv(t, filepath.Join(secret, "vault"), 0, 0)
	testenv.Must(t, os.Chmod(secret, 0o700))
	pol := filepath.Join(base, "policy.toml")
	writePolicy(t, pol, []string{shared, secret}, fmt.Sprintf("[control]\nallow_uids = [%d]\n", agentUID))
	startMount(t, mp, "--allow-other", "--policy", pol, "--socket", sock)

	root := func(args ...string) (string, string, int) {
		t.Helper()
		out, errs, code, _ := runBinary(t, mp, []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=root-s"}, "", args...)
		return out, errs, code
	}
	agent := func(args ...string) (string, string, int) {
		t.Helper()
		out, errs, code, _ := runBinaryAs(t, &syscall.Credential{Uid: agentUID, Gid: agentGID}, mp,
			[]string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=agent-s"}, "", args...)
		return out, errs, code
	}
	if _, errs, code := root("read", "shared/README.md"); code != 0 {
		t.Fatalf("read: %d %s", code, errs)
	}
	var st daemonState
	testenv.Within(t, 60*time.Second, "the history scan's end in status", func() error {
		out, errs, code := root("status", "--format", "json")
		if code != 0 {
			return fmt.Errorf("exit %d: %s%s", code, out, errs)
		}
		st = daemonState{}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if st.History.State != "done" {
			return fmt.Errorf("history %s: %s", st.History.State, out)
		}
		return nil
	})

	// The operator sees everything.
	sum := sha256.Sum256(mustRead(t, pol))
	if st.Scope != "all" || st.Version == "" || st.Policy.Source != pol || st.Policy.SHA256 != hex.EncodeToString(sum[:]) ||
		st.Mount.Point != mp || st.Mount.Open == "" || st.Mount.Watch == "" || st.Mount.WarmWalk == "" ||
		st.Journal.Path == "" || st.Journal.Head == 0 || st.Sessions != 1 || len(st.Roots) != 2 || st.History.Finished == nil {
		t.Errorf("the operator's status: %+v", st)
	}
	found := map[string]string{}
	for _, r := range st.History.Repos {
		if !r.Complete || len(r.Findings) != 1 {
			t.Errorf("repository %q: %+v", r.Path, r)
			continue
		}
		f := r.Findings[0]
		if f.Text != "staged .env (denied path)" || f.Where != "staged" || f.Path != ".env" {
			t.Errorf("finding in %q: %+v", r.Path, f)
		}
		found[r.Path] = f.Text
	}
	for _, want := range []string{filepath.Join(shared, "app"), filepath.Join(shared, evil), filepath.Join(shared, "locked"), filepath.Join(secret, "vault")} {
		if _, ok := found[want]; !ok {
			t.Errorf("status lacks the repository %q: %v", want, found)
		}
	}
	out, errs, code := root("status")
	if code != 0 {
		t.Fatalf("status: %d %s", code, errs)
	}
	for _, want := range []string{"policy:   " + pol, "history:  done", filepath.Join(secret, "vault") + ": complete:\n    staged .env (denied path)\n", fmt.Sprintf("%q", filepath.Join(shared, evil))} {
		if !strings.Contains(out, want) {
			t.Errorf("status text lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("status text holds raw terminal escapes:\n%q", out)
	}

	// status ID keeps its meaning.
	if _, errs, code := root("status", "never-sent"); code != 1 || !strings.Contains(errs, "not written") {
		t.Errorf("status of an id never sent: %d %s", code, errs)
	}

	// The second uid: only the root it can read, its repositories' findings
	// in its own view, and none of root's sessions.
	out, errs, code = agent("status", "--format", "json")
	var ag daemonState
	if code != 0 || json.Unmarshal([]byte(out), &ag) != nil {
		t.Fatalf("the agent's status: %d %s%s", code, out, errs)
	}
	if ag.Scope != fmt.Sprintf("uid %d", agentUID) || len(ag.Roots) != 1 || ag.Roots[0] != filepath.Join(mp, "shared") || ag.Sessions != 0 || ag.Mount.Point != mp {
		t.Errorf("the agent's status: %+v", ag)
	}
	if len(ag.History.Repos) != 2 {
		t.Errorf("the agent sees %d repositories, want the 2 of the root it can read: %+v", len(ag.History.Repos), ag.History.Repos)
	}
	for _, r := range ag.History.Repos {
		if !strings.HasPrefix(r.Path, filepath.Join(mp, "shared")+"/") {
			t.Errorf("the agent sees a repository outside its root, or not in its view: %q", r.Path)
		}
	}
	text, errs, code := agent("status")
	if code != 0 {
		t.Fatalf("the agent's status text: %d %s", code, errs)
	}
	for _, leak := range []string{secret, "vault", "locked", base + "/shared"} {
		if strings.Contains(out+text, leak) {
			t.Errorf("the agent's status names %q:\n%s\n%s", leak, out, text)
		}
	}
}
