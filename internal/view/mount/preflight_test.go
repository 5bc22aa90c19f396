package mount

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/refusal"
)

// TestPreflightSaysWhatToAdd: a missing FUSE device, and a non-root (or
// unprivileged root) process without fusermount3, are refused with
// FUSE_UNAVAILABLE and the docker flags to add, instead of go-fuse's
// exec error about /bin/fusermount.
func TestPreflightSaysWhatToAdd(t *testing.T) {
	t.Parallel()
	dev := filepath.Join(t.TempDir(), "fuse")
	if err := os.WriteFile(dev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	none := func(string) (string, error) { return "", os.ErrNotExist }
	found := func(n string) (string, error) { return "/usr/bin/" + n, nil }
	yes, no := func() bool { return true }, func() bool { return false }
	for _, c := range []struct {
		name string
		h    host
		want string // "" means no refusal
	}{
		{"no device", host{dev: filepath.Join(t.TempDir(), "absent"), euid: 0, capSysAdmin: yes, lookPath: found}, "there is no FUSE device"},
		{"non-root without fusermount3", host{dev: dev, euid: 1000, capSysAdmin: no, lookPath: none}, "not root (uid 1000)"},
		{"root without the capability", host{dev: dev, euid: 0, capSysAdmin: no, lookPath: none}, "root without CAP_SYS_ADMIN"},
		{"root", host{dev: dev, euid: 0, capSysAdmin: yes, lookPath: none}, ""},
		{"non-root with fusermount3", host{dev: dev, euid: 1000, capSysAdmin: no, lookPath: found}, ""},
	} {
		err := c.h.check()
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", c.name, err)
			}
			continue
		}
		var pe *PreflightError
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), string(refusal.FuseUnavailable)+": ") || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--device /dev/fuse --cap-add SYS_ADMIN") {
			t.Errorf("%s: %v, want %s naming %q and the docker flags", c.name, err, refusal.FuseUnavailable, c.want)
		}
	}
}
