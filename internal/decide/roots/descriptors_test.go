package roots

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/policy"

	"golang.org/x/sys/unix"
)

// TestFullTableRelievedAndRetried: an open the guard makes when the
// descriptor table is full asks the registered caches to give way and is
// retried, so it succeeds while a cache keeps idle descriptors; with
// nothing to give, it fails with the table's error, not another. It runs
// in a child process: the descriptor limit is the whole process's.
func TestFullTableRelievedAndRetried(t *testing.T) {
	t.Parallel()
	if os.Getenv("FSGUARD_FDCHILD") == "1" {
		fullTableChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFullTableRelievedAndRetried$", "-test.v")
	cmd.Env = append(os.Environ(), "FSGUARD_FDCHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestFullTableRelievedAndRetried")) {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func fullTableChild(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
	p, err := policy.Parse(fmt.Appendf(nil, "[[root]]\npath = %q\n", root))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	var kept []int
	stop := OnDescriptorPressure(func() int {
		n := len(kept)
		for _, fd := range kept {
			unix.Close(fd)
		}
		kept = nil
		return n
	})
	defer stop()
	ents, _ := os.ReadDir("/proc/self/fd")
	lim := unix.Rlimit{Cur: uint64(len(ents) + 16), Max: uint64(len(ents) + 16)}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		kept = append(kept, fd)
	}
	hits := DescriptorLimitHits()
	f, err := g.Open("a.txt", root)
	if err != nil {
		t.Fatalf("open with a full table and idle kept descriptors: %v", err)
	}
	f.Close()
	if DescriptorLimitHits() == hits {
		t.Errorf("the full table was not counted")
	}
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		defer unix.Close(fd)
	}
	if _, err := g.Open("a.txt", root); err == nil {
		t.Errorf("an open succeeded with a full table and nothing to give")
	}
}
