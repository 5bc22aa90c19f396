package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
