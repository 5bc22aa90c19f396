package roots

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestViewShowsNothingAMountHides: the view holds the root's own mount
// alone, so beneath a mount point it shows the directory the mount hides.
// The attacker's files there (or a root's, covered on purpose) must never
// be read through it, whether the mount was made before the guard or
// after: a path through a mount point is refused, as the tree refuses it
// (RESOLVE_NO_XDEV), by every door.
func TestViewShowsNothingAMountHides(t *testing.T) {
	t.Parallel()
	root := devDir(t)
	testenv.WriteTree(t, root, map[string]string{
		"pre/hidden.txt": "UNDER-PRE\n", "post/hidden.txt": "UNDER-POST\n",
		"covered.txt": "UNDER-FILE\n", "cover.txt": "the cover\n", "plain.txt": "plain\n",
	})
	mount := func(src, dst, fstype string, flags uintptr) {
		t.Helper()
		if err := unix.Mount(src, dst, fstype, flags, ""); err != nil {
			t.Fatalf("mount %s on %s: %v", src, dst, err)
		}
		t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
	}
	pre, post, covered := filepath.Join(root, "pre"), filepath.Join(root, "post"), filepath.Join(root, "covered.txt")
	mount("tmpfs", pre, "tmpfs", 0)
	g := guardWithView(t, root)
	r := g.Roots()[0]
	changed := mountWatch.changed()
	mount("tmpfs", post, "tmpfs", 0)
	mount(filepath.Join(root, "cover.txt"), covered, "", unix.MS_BIND)
	// Made after the guard: once the watch has read them.
	guard := time.After(30 * time.Second) // a hang guard: the table is read again within microseconds
	for t0 := mountWatch.table(); t0 == nil || !slices.Contains(t0.points, post) || !slices.Contains(t0.points, covered); t0 = mountWatch.table() {
		select {
		case <-changed:
			changed = mountWatch.changed()
		case <-guard:
			t.Fatal("the mount table was not read again after two mounts")
		}
	}
	for _, name := range []string{"pre/hidden.txt", "post/hidden.txt", "covered.txt"} {
		if f, err := g.Open(name, root); err == nil {
			b := make([]byte, 64)
			n, _ := f.ReadAt(b, 0)
			f.Close()
			t.Errorf("Open(%s) read %q; want a refusal", name, b[:n])
		}
		_, f, err := g.EntryFile(Path{Root: r, Rel: name, Shown: name}, func(*unix.Stat_t) bool { return true })
		if f != nil {
			b := make([]byte, 64)
			n, _ := f.ReadAt(b, 0)
			f.Close()
			t.Errorf("EntryFile(%s) read %q (%v); want no file", name, b[:n], err)
		}
	}
	// Beside the mounts, the view still serves.
	if r.oneOpen("plain.txt") != r.view {
		t.Error("plain.txt, under no mount point, is not opened through the view")
	}
	f, err := g.Open("plain.txt", root)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestLeasedFileNotSpunOn: an O_NONBLOCK open of a file whose owner holds
// a write lease fails with EAGAIN for as long as the lease is being broken
// (lease-break-time, 45 s). The one-open ways open with O_NONBLOCK and
// retry EAGAIN (a rename racing the resolution); an attacker's lease on
// their own file must not make the daemon spin on it: the admission
// answers at once, whichever way.
func TestLeasedFileNotSpunOn(t *testing.T) {
	t.Parallel()
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			root := w.dir(t)
			p := filepath.Join(root, "leased.txt")
			if err := os.WriteFile(p, []byte("leased\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			g := w.guard(t, root)
			r := g.Roots()[0]
			if _, err := g.List(r, "."); err != nil {
				t.Fatal(err)
			}
			lfd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(lfd)
			if _, err := unix.FcntlInt(uintptr(lfd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
				t.Fatalf("take a write lease: %v", err)
			}
			defer unix.FcntlInt(uintptr(lfd), unix.F_SETLEASE, unix.F_UNLCK)
			done := make(chan struct{})
			go func() {
				defer close(done)
				if _, f, _ := g.EntryFile(Path{Root: r, Rel: "leased.txt", Shown: "leased.txt"}, func(*unix.Stat_t) bool { return true }); f != nil {
					f.Close()
				}
				if f, err := g.Open("leased.txt", root); err == nil {
					f.Close()
				}
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second): // a hang guard: the admission takes microseconds
				t.Fatal("the admission of a leased file did not answer (spun on EAGAIN)")
			}
		})
	}
}
