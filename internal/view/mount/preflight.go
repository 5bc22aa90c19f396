package mount

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/refusal"
)

// dockerAdvice is what a container needs to mount FUSE.
const dockerAdvice = "in a container, run it with --device /dev/fuse --cap-add SYS_ADMIN (docker, podman; Kubernetes: privileged, or the device and the capability)"

// PreflightError (refusal.FuseUnavailable) says why mounting cannot work here and what to add.
type PreflightError struct {
	Why, Advice string
}

func (e *PreflightError) Error() string {
	return string(refusal.FuseUnavailable) + ": " + e.Why + "; " + e.Advice
}

// host is what the preflight asks of the machine (a test gives another).
type host struct {
	dev         string
	euid        int
	capSysAdmin func() bool
	lookPath    func(string) (string, error)
}

// Preflight checks, before mounting, what go-fuse needs and would
// otherwise report as an exec error: /dev/fuse that this process can
// open, and a way to mount — root with CAP_SYS_ADMIN mounts directly,
// anyone else (root without the capability included) through
// fusermount3 or fusermount, found in PATH or /bin.
func Preflight() error {
	return host{dev: "/dev/fuse", euid: os.Geteuid(), capSysAdmin: capSysAdmin, lookPath: lookFusermount}.check()
}

func (h host) check() error {
	f, err := os.OpenFile(h.dev, os.O_RDWR, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &PreflightError{Why: fmt.Sprintf("there is no FUSE device %s", h.dev), Advice: dockerAdvice + "; on a host, load the fuse module (modprobe fuse)"}
	case err != nil:
		return &PreflightError{Why: fmt.Sprintf("the FUSE device %s cannot be opened (%v)", h.dev, errors.Unwrap(err)), Advice: dockerAdvice + "; on a host, run as root or give this user access to the device"}
	}
	f.Close()
	if h.euid == 0 && h.capSysAdmin() {
		return nil
	}
	if _, err := h.lookPath("fusermount3"); err == nil {
		return nil
	}
	if _, err := h.lookPath("fusermount"); err == nil {
		return nil
	}
	who := fmt.Sprintf("not root (uid %d)", h.euid)
	if h.euid == 0 {
		who = "root without CAP_SYS_ADMIN"
	}
	return &PreflightError{Why: "this process is " + who + " and there is no fusermount3 to mount for it", Advice: dockerAdvice + "; on a host, run as root or install fuse3 (fusermount3)"}
}

// lookFusermount finds a program where go-fuse looks: PATH, then /bin.
func lookFusermount(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := filepath.Join("/bin", name)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		return p, nil
	}
	return "", os.ErrNotExist
}

// capSysAdmin reports whether CAP_SYS_ADMIN (bit 21) is in this
// process's effective set.
func capSysAdmin() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, ln := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(ln, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<21) != 0
		}
	}
	return false
}
