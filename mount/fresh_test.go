package mount

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsguard/fsguard/watch"
)

// TestRemovedDirectoryNeverHandedBack: the watch reports a directory
// removed, and the kernel is told (FUSE_NOTIFY_DELETE), which marks its
// inode dead while anything holds it (here an open descriptor; a listing
// under way or a shell in it, in life): every lookup and listing in it
// fails with ENOENT, and the kernel revives no inode. The directory at the
// name now has the old one's inode number (ext4 gives a new directory the
// number just freed, and a checkout removes and makes directories; here
// it simply stays), so a lookup that hands the kernel the old node again,
// by the name and the number, puts the name on the dead inode for the hour
// an entry is cached: "readdirent d10: no such file or directory" in a
// checkout test under stress. Two ways to it:
//   - raced: a lookup found the node by its name before the removal took
//     the name away, and go-fuse files it under the name after Lookup
//     returns (done here by hand);
//   - generations: the name was removed twice, and the kernel forgot the
//     second generation but not the first; a lookup that found no node
//     for the number asked go-fuse for generation 0, and got the first.
func TestRemovedDirectoryNeverHandedBack(t *testing.T) {
	needFUSE(t)
	t.Parallel()
	for _, name := range []string{"raced", "generations"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			must(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
			must(t, os.WriteFile(filepath.Join(root, "d", "f.txt"), []byte("text\n"), 0o644))
			s, mp := mountRoot(t, root, Config{})
			top := s.root.EmbeddedInode()
			real := s.v.guard.Load().Roots()[0].Real
			removed := func() { s.apply([]watch.Event{{Op: watch.Removed, Dir: real, Name: "d"}}) }
			lsD := func(when string) {
				t.Helper()
				out, err := exec.Command("ls", filepath.Join(mp, "d")).CombinedOutput()
				if err != nil || string(out) != "f.txt\n" {
					t.Fatalf("ls d %s: %v: %q, want f.txt", when, err, out)
				}
			}
			lsD("first")
			first := top.GetChild("d")
			held, err := os.Open(filepath.Join(mp, "d")) // keeps the first inode
			must(t, err)
			defer held.Close()
			removed()
			switch name {
			case "raced":
				top.AddChild("d", first, true)
			case "generations":
				lsD("after the first removal")
				second := top.GetChild("d")
				if second == nil || second == first {
					t.Fatal("the name did not get a node of its own")
				}
				removed() // nothing holds the second: the kernel forgets it
				within(t, 10*time.Second, func() bool { return s.v.held(second.StableAttr().Ino) == nil })
			}
			lsD("after the removal")
		})
	}
}

// TestLookupRacingAWrite: a file is written while the kernel's LOOKUP of
// it is being answered, after its attributes were taken and before the
// reply is in. The watch's invalidation of the change finds no inode the
// kernel knows (the reply is what makes it known), so it tells the kernel
// nothing; the reply must then not let the kernel keep the attributes
// taken before the write for the hour an entry is cached. Seen once in
// TestLoadWithSymlinkSwaps: a file created empty and then written read as
// empty for 5 s. Here the write lands in the window every time: the
// LOOKUP waits in it until the watch has applied the change.
func TestLookupRacingAWrite(t *testing.T) {
	needFUSE(t)
	t.Parallel()
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "x.txt"), nil, 0o644)) // created empty, as os.WriteFile does first
	s, mp := mountRoot(t, root, Config{})
	const content = "written while it was looked up\n"
	var once atomic.Bool
	hook := func(rel string) {
		if rel != "x.txt" || !once.CompareAndSwap(false, true) {
			return
		}
		before := s.v.changes.Load()
		must(t, os.WriteFile(filepath.Join(root, "x.txt"), []byte(content), 0o644))
		for deadline := time.Now().Add(10 * time.Second); s.v.changes.Load() == before; { // a hang guard
			if time.Now().After(deadline) {
				t.Error("the watch applied no change in 10 s")
				return
			}
			time.Sleep(time.Millisecond) // a poll interval
		}
	}
	s.v.looked.Store(&hook)
	first, err := exec.Command("cat", filepath.Join(mp, "x.txt")).Output()
	must(t, err)
	s.v.looked.Store(nil)
	if !once.Load() {
		t.Fatal("the LOOKUP of x.txt never came")
	}
	again, err := exec.Command("cat", filepath.Join(mp, "x.txt")).Output()
	must(t, err)
	if string(again) != content {
		t.Errorf("x.txt reads %q after it was written during its LOOKUP (and %q the first time), want %q", again, first, content)
	}
}
