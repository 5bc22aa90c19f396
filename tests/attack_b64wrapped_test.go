package tests

// A key passed through `base64` as people do (`base64 ~/.ssh/id_ed25519 >
// notes.txt`) is wrapped at 76 columns: its first line alone decodes to
// the key's header and too little material to be a key. The file must be
// refused by the read tool and never served by the mount, as the same key
// base64-encoded on one line is.

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAttackKeyBase64Wrapped(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("base64"); err != nil {
		t.Skip("no base64 tool")
	}
	f := newFixture(t)
	files := map[string]string{}
	for kind, key := range realKeys(t) {
		p := filepath.Join(f.base, kind+".key")
		writeFile(t, p, key, 0o600)
		name := "b64-" + strings.ReplaceAll(kind, " ", "_") + ".txt"
		enc := mustRun(t, "base64", p) // wrapped at 76 columns
		if !strings.Contains(strings.TrimSpace(enc), "\n") {
			t.Fatalf("base64 wrote one line: the test proves nothing")
		}
		writeFile(t, filepath.Join(f.root, name), enc, 0o644)
		// What would be served: any of its lines after the first (the
		// first is the header's, the same for every key of a kind).
		files[name] = strings.Split(enc, "\n")[2]
	}
	startMount(t, f.mp, "--policy", f.policy)
	for name, line := range files {
		if out, _ := run(t, 10*time.Second, "cat", filepath.Join(f.mp, name)); strings.Contains(out, line) {
			t.Errorf("cat %s through the mount served a base64'd key", name)
		}
		out, errs, code, _ := runBinary(t, f.root, []string{"FSGUARD_POLICY=" + f.policy}, "", "read", name, "--format", "json")
		if strings.Contains(out+errs, line) || code != 1 || !strings.Contains(out, `"code":"DENIED"`) {
			t.Errorf("fsguard read %s: exit %d, want DENIED and no material:\n%.300s%s", name, code, out, errs)
		}
	}
}
