package mount

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/fsguard/fsguard/watch"
)

// TestRemovedDirectoryNeverHandedBack is the race behind a checkout's
// "readdirent d10: no such file or directory", made to happen. The watch
// reports a directory removed; the kernel is told (FUSE_NOTIFY_DELETE),
// which marks its inode dead: every lookup and listing in it fails with
// ENOENT. A lookup of the same name that found the node before the
// removal took the name away puts it back (go-fuse files a looked-up node
// under its name after Lookup returns). The directory there now has the
// old one's inode number (ext4 gives a new directory the number just
// freed, and a checkout removes and makes directories; here it simply
// stays), so a lookup that takes the node by its name and number hands
// the kernel the dead inode again, and the name fails for the hour an
// entry is cached. A node the kernel was told is deleted must never be
// handed back.
func TestRemovedDirectoryNeverHandedBack(t *testing.T) {
	needFUSE(t)
	t.Parallel()
	root := t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "d", "f.txt"), []byte("text\n"), 0o644))
	s, mp := mountRoot(t, root, Config{})
	lsBy(t, filepath.Join(mp, "d")) // the kernel holds d's node
	top := s.root.EmbeddedInode()
	old := top.GetChild("d")
	if old == nil {
		t.Fatal("the kernel's node of d is not held")
	}
	// An open descriptor keeps the kernel's inode of d (a listing under
	// way, a shell in it): a dead inode that nothing holds is evicted, and
	// a later lookup makes a live one.
	held, err := os.Open(filepath.Join(mp, "d"))
	must(t, err)
	defer held.Close()
	real := s.v.guard.Load().Roots()[0].Real
	s.apply([]watch.Event{{Op: watch.Removed, Dir: real, Name: "d"}})
	top.AddChild("d", old, true) // the racing lookup files the node it found
	out, err := exec.Command("ls", filepath.Join(mp, "d")).CombinedOutput()
	if err != nil || string(out) != "f.txt\n" {
		t.Fatalf("ls d after the race: %v: %q, want f.txt", err, out)
	}
}
