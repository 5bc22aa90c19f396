package roots

import (
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/testenv"

	"golang.org/x/sys/unix"
)

// TestComponentSwapRace flips a directory component between a real
// directory and a symlink to outside (atomically, with RENAME_EXCHANGE)
// while readers open a file through it. Not one byte of the outside canary
// may ever come back.
func TestComponentSwapRace(t *testing.T) {
	t.Parallel()
	onEachWay(t, componentSwapRace)
}

// onEachWay runs race each way a file is opened: resolved with O_PATH
// first (a root with no view, on a mount without nodev), opened at once
// through the root's nodev view, and opened at once on a nodev mount
// (openNodev): each must meet the race. race makes its guard with the
// guard it is given.
func onEachWay(t *testing.T, race func(t *testing.T, base string, guard func(*testing.T, string) *Guard)) {
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			race(t, w.dir(t), w.guard)
		})
	}
}

func componentSwapRace(t *testing.T, base string, guardFor func(*testing.T, string) *Guard) {
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	testenv.WriteTree(t, base, map[string]string{"root/flip/f.txt": "inside\n", "outside/f.txt": "CANARY\n"})
	testenv.Symlinks(t, root, map[string]string{"spare": outside})
	g := guardFor(t, root)
	if _, err := g.List(g.Roots()[0], "."); err != nil { // as a listing does: the mount's flags noted
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go exchange(t, &wg, stop, &flips, filepath.Join(root, "flip"), filepath.Join(root, "spare"))
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

// TestEntryFileSwapRace: EntryFile opens the very inode its stat came from.
// While a final name flips between a regular file and a link to an outside
// canary, and a directory on a path flips between a real one and a link
// outside (both with RENAME_EXCHANGE), every file it hands back holds the
// inside bytes, and its stat is that file's.
func TestEntryFileSwapRace(t *testing.T) {
	t.Parallel()
	onEachWay(t, entryFileSwapRace)
}

func entryFileSwapRace(t *testing.T, base string, guardFor func(*testing.T, string) *Guard) {
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	// Two races that cannot meet: a directory on the path flips in one
	// place, the final name in another (a rename through a flipping
	// directory could carry the canary inside the root).
	testenv.WriteTree(t, base, map[string]string{"root/flip/f.txt": "inside\n", "root/fixed/f.txt": "inside\n", "outside/f.txt": "CANARY\n"})
	testenv.Symlinks(t, root, map[string]string{"spare": outside, "fixed/l.txt": "../../outside/f.txt"})
	g := guardFor(t, root)
	r := g.Roots()[0]
	if _, err := g.List(r, "."); err != nil { // as a listing does, before its files
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Add(2)
	go exchange(t, &wg, stop, &flips, filepath.Join(root, "flip"), filepath.Join(root, "spare"))
	go exchange(t, &wg, stop, &flips, filepath.Join(root, "fixed", "f.txt"), filepath.Join(root, "fixed", "l.txt"))
	var files, leaks atomic.Int64
	deadline := time.Now().Add(2 * time.Second)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64)
			for time.Now().Before(deadline) {
				for _, rel := range []string{"flip/f.txt", "spare/f.txt", "fixed/f.txt", "fixed/l.txt"} {
					e, f, err := g.EntryFile(Path{Root: r, Rel: rel, Shown: rel}, func(*unix.Stat_t) bool { return true })
					if err != nil || f == nil {
						continue
					}
					n, _ := f.ReadAt(buf, 0)
					var st unix.Stat_t
					unix.Fstat(int(f.Fd()), &st)
					f.Close()
					if strings.Contains(string(buf[:n]), "CANARY") || st.Ino != e.Stat.Ino {
						leaks.Add(1)
					}
					files.Add(1)
				}
			}
		}()
	}
	time.Sleep(time.Until(deadline)) // the test's duration, not synchronisation
	close(stop)
	wg.Wait()
	t.Logf("%d flips, %d files opened", flips.Load(), files.Load())
	if leaks.Load() != 0 {
		t.Fatalf("%d files held the outside canary or another inode than their stat", leaks.Load())
	}
	if files.Load() == 0 || flips.Load() < 100 {
		t.Fatalf("the race did not run: %d files, %d flips", files.Load(), flips.Load())
	}
}

// exchange swaps a and b atomically (RENAME_EXCHANGE) until stop closes,
// counting the swaps in flips.
func exchange(t *testing.T, wg *sync.WaitGroup, stop <-chan struct{}, flips *atomic.Int64, a, b string) {
	defer wg.Done()
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
}
