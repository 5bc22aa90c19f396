package roots

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsguard/fsguard/refusal"

	"golang.org/x/sys/unix"
)

// TestComponentSwapRace flips a directory component between a real
// directory and a symlink to outside (atomically, with RENAME_EXCHANGE)
// while readers open a file through it. Not one byte of the outside canary
// may ever come back.
func TestComponentSwapRace(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "flip"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "flip", "f.txt"), []byte("inside\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "f.txt"), []byte("CANARY\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(root, "spare")); err != nil {
		t.Fatal(err)
	}
	g := guardFor(t, root)

	stop := make(chan struct{})
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a, b := filepath.Join(root, "flip"), filepath.Join(root, "spare")
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				t.Error(err)
				return
			}
			flips.Add(1)
		}
	}()
	var reads, refusals, leaks atomic.Int64
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			buf := make([]byte, 64)
			for time.Now().Before(deadline) {
				f, err := g.Open(name, root)
				if err != nil {
					if c := refusal.CodeOf(err); c != refusal.OutsideAllowedRoots && c != refusal.NotFound && c != refusal.NotAFile && c != refusal.ChangedDuringRead {
						t.Errorf("unexpected refusal %s: %v", c, err)
					}
					refusals.Add(1)
					continue
				}
				n, _ := io.ReadFull(f, buf)
				f.Close()
				if strings.Contains(string(buf[:n]), "CANARY") {
					leaks.Add(1)
				}
				reads.Add(1)
			}
		}([]string{"flip/f.txt", "spare/f.txt"}[i%2])
	}
	time.Sleep(time.Until(deadline)) // the test's duration, not synchronisation
	close(stop)
	wg.Wait()
	t.Logf("%d flips, %d admitted reads, %d refusals", flips.Load(), reads.Load(), refusals.Load())
	if leaks.Load() != 0 {
		t.Fatalf("%d reads returned the outside canary", leaks.Load())
	}
	if reads.Load() == 0 || refusals.Load() == 0 || flips.Load() < 100 {
		t.Fatalf("the race did not run both ways: %d reads, %d refusals, %d flips", reads.Load(), refusals.Load(), flips.Load())
	}
}
