package edit

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPlanningImportsNoStorage: edit plans on values alone; nothing it
// depends on, however indirectly, is storage or a door.
func TestPlanningImportsNoStorage(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, layer := range []string{"/internal/store/", "/internal/door/", "/internal/view/", "/internal/daemon"} {
			if strings.Contains(p, layer) {
				t.Errorf("edit depends on %s", p)
			}
		}
	}
}
