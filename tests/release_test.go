package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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
// directory and says where, once — as root too, where it used to append to
// the packaged service's journal in /var/lib/fsguard (TestMain checks that
// directory is untouched by the whole run).
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
