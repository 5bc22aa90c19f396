package opens

import (
	"os/exec"
	"testing"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestExitsNameTheReaped: a process that has exited and been reaped, so
// /proc knows it no more, is named from its exit notification.
func TestExitsNameTheReaped(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, "taskstats exit notifications need root")
	e, err := newExits()
	if err != nil {
		t.Fatalf("taskstats: %v", err)
	}
	defer e.close()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	if open(pid) != nil {
		t.Fatalf("pid %d still in /proc after it was reaped", pid)
	}
	ps := &procs{m: map[uint32]*proc{}, ex: e}
	if p := ps.get(pid); p.Name != "true" || p.Uid != 0 {
		t.Errorf("a reaped process named %+v, want true, uid 0", p)
	}
}
