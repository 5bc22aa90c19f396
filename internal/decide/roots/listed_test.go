package roots

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/testenv"

	"golang.org/x/sys/unix"
)

// nodevDir returns a fresh directory on a tmpfs mounted nodev (removed at
// the test's end): a root there is admitted by one open per listed file
// (see openListed).
func nodevDir(t *testing.T) string { return tmpfsDir(t, unix.MS_NODEV) }

// devDir is nodevDir without nodev, wherever the test's temporary
// directory is: a root there opens each file through its view, or
// resolves it with O_PATH first when it has none.
func devDir(t *testing.T) string { return tmpfsDir(t, 0) }

// ways are the three ways a file beneath a root is opened: with O_PATH
// first (no view, no nodev), at once through the root's nodev view (a
// mount without nodev), at once on a nodev mount. Each gives a directory
// and the guard to make over a root beneath it; the guard checks that its
// way is the one taken.
var ways = []struct {
	name  string
	dir   func(*testing.T) string
	guard func(*testing.T, string) *Guard
}{
	{"opath", devDir, guardWithoutView},
	{"view", devDir, guardWithView},
	{"nodev", nodevDir, guardFor},
}

// guardWithoutView is guardFor with the roots' views dropped: files are
// resolved with O_PATH first, as where no view can be made.
func guardWithoutView(t *testing.T, root string) *Guard {
	g := guardFor(t, root)
	for _, r := range g.roots {
		if r.view != nil {
			r.view.close()
			r.view = nil
		}
	}
	return g
}

// guardWithView is guardFor, failing unless each root has its view.
func guardWithView(t *testing.T, root string) *Guard {
	g := guardFor(t, root)
	for _, r := range g.roots {
		if r.view == nil {
			t.Fatalf("root %s has no view", r.Path)
		}
	}
	return g
}

func tmpfsDir(t *testing.T, flags uintptr) string {
	t.Helper()
	testenv.RequireRoot(t, "mounting a tmpfs needs root")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, "size=16m"); err != nil {
		t.Fatalf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestListedSpecialFilesNeverOpened is a lost race of a listing: the
// listing saw a regular file, and by its admission the name is a device
// or a FIFO; or a caller names one. A device is never opened (an open can
// act: a tape rewinds, a watchdog arms; the daemon is root), a FIFO never
// blocks, and neither is shown or read — each way a file is opened
// (ways): at once on a nodev root, at once through the view of any other,
// and resolved with O_PATH first where there is no view.
func TestListedSpecialFilesNeverOpened(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, "mknod of a device needs root")
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			root := w.dir(t)
			dev, fifo := filepath.Join(root, "dev.txt"), filepath.Join(root, "fifo.txt")
			// The null device: opening it does nothing, and the open is
			// seen (IN_OPEN), which an O_PATH resolution is not.
			if err := unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mkfifo(fifo, 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "plain.txt"), []byte("plain\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(in)
			if _, err := unix.InotifyAddWatch(in, dev, unix.IN_OPEN); err != nil {
				t.Fatal(err)
			}
			g := w.guard(t, root)
			r := g.Roots()[0]
			if _, err := g.List(r, "."); err != nil {
				t.Fatal(err)
			}
			if nodev := w.name == "nodev"; r.nodev.Load() != nodev {
				t.Fatalf("the root's nodev is %v, its mount's %v", r.nodev.Load(), nodev)
			}
			want := func(*unix.Stat_t) bool { return true }
			// A listing's admission, and an open by name (a READ through
			// the mount, fsguard read): the same two ways to open.
			doors := map[string]func(name string) (*File, error){
				"EntryFile": func(name string) (*File, error) {
					_, f, err := g.EntryFile(Path{Root: r, Rel: name, Shown: name}, want)
					return f, err
				},
				"Open": func(name string) (*File, error) { return g.Open(name, root) },
			}
			for door, open := range doors {
				for _, name := range []string{"dev.txt", "fifo.txt"} {
					done := make(chan error, 1)
					var f *File
					go func() {
						var err error
						f, err = open(name)
						done <- err
					}()
					select {
					case err := <-done:
						if f != nil || refusal.CodeOf(err) != refusal.NotAFile {
							t.Errorf("%s(%s): file %v, %v; want NOT_A_FILE and no file", door, name, f, err)
						}
					case <-time.After(30 * time.Second): // a hang guard: the call takes microseconds
						t.Fatalf("%s(%s): the admission blocked", door, name)
					}
				}
			}
			buf := make([]byte, 4096)
			if n, _ := unix.Read(in, buf); n > 0 {
				t.Errorf("the device was opened (%d bytes of IN_OPEN events)", n)
			}
			for door, open := range doors {
				f, err := open("plain.txt")
				if err != nil || f == nil {
					t.Fatalf("%s(plain.txt): file %v, %v", door, f, err)
				}
				if n, _ := f.ReadAt(buf, 0); string(buf[:n]) != "plain\n" {
					t.Errorf("%s(plain.txt) read %q", door, buf[:n])
				}
				f.Close()
			}
		})
	}
}
