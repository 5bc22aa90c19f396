package tests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestListingIsAskedOnceUntilItChanges: a directory listed once is listed
// again, by anyone, without a request to the daemon (no OPENDIR, READDIR
// or RELEASEDIR: the kernel keeps the listing), until the directory
// changes; then the next listing shows the change. And `ls -l` asks the
// daemon for no attribute per file once it has been told the view has
// none (ENOTSUP), where ENODATA cost a request per file, every time.
//
// Not parallel, like the tests that count READs: a parallel test that
// kills a daemon makes the next mount drop the machine's clean caches
// (mount.ClearStale), listings with them.
func TestListingIsAskedOnceUntilItChanges(t *testing.T) {
	f := newFixture(t)
	files := map[string]string{}
	var want []string
	for i := range 60 { // more than one READDIRPLUS reply holds
		name := fmt.Sprintf("f%02d.txt", i)
		files[name] = name + "\n"
		want = append(want, name)
	}
	mdir, sock := quietMount(t, f, files)
	ops := func(op string) float64 {
		return counters(scrape(t, sock))[fmt.Sprintf(`fsguard_fuse_op_seconds_count{op=%q}`, op)]
	}
	list := func() []string {
		ents, err := os.ReadDir(mdir)
		testenv.Must(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	if got := list(); !slices.Equal(got, want) {
		t.Fatalf("listed %q", got)
	}
	made, opened := ops("readdir"), ops("opendir")
	if made == 0 || opened == 0 {
		t.Fatal("the first listing was never asked of the daemon: the test measures nothing")
	}
	for range 3 {
		mustRun(t, "ls", mdir)
		mustRun(t, "find", mdir)
	}
	if again, reopened := ops("readdir")-made, ops("opendir")-opened; again != 0 || reopened != 0 {
		t.Errorf("listing the directory again opened it %v times in the daemon and listed it %v times", reopened, again)
	}

	dir := filepath.Join(f.root, "quiet")
	writeFile(t, filepath.Join(dir, "new.txt"), "new\n", 0o644)
	testenv.Must(t, os.Remove(filepath.Join(dir, "f00.txt")))
	want = append(want[1:], "new.txt")
	slices.Sort(want)
	testenv.Within(t, 10*time.Second, "a file added and one removed, in the listing", func() error {
		if got := list(); !slices.Equal(got, want) {
			return fmt.Errorf("listed %q", got)
		}
		return nil
	})

	// Attributes: none is in the view, POSIX ACLs included (the mode bits
	// stand for them).
	p := filepath.Join(mdir, "f01.txt")
	buf := make([]byte, 256)
	for _, name := range []string{"security.selinux", "user.note", "trusted.x", "system.posix_acl_access", "system.posix_acl_default"} {
		if _, err := unix.Lgetxattr(p, name, buf); !errors.Is(err, unix.ENOTSUP) {
			t.Errorf("getxattr %s: %v, want ENOTSUP", name, err)
		}
	}
	mustRun(t, "ls", "-l", mdir)
	asked := ops("getxattr")
	mustRun(t, "ls", "-l", mdir)
	if n := ops("getxattr") - asked; n > 5 {
		t.Errorf("ls -l of 60 files asked the daemon for %v attributes", n)
	}
}
