package warm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestListerFollowsNoLink is the attacker's swap, made to have happened:
// a directory the daemon names (the kernel held it) is a link by the time
// the child, which is root, resolves it; here to a directory outside the
// mount, in place of /dev. The child must neither list what the link
// leads to nor open a file there, nor a file that is itself a link; what
// is beneath the mount point, and no link, it lists and counts.
func TestListerFollowsNoLink(t *testing.T) {
	t.Parallel()
	top, outside := t.TempDir(), t.TempDir()
	testenv.Must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("outside\n"), 0o644))
	testenv.Must(t, os.Mkdir(filepath.Join(top, "real"), 0o755))
	testenv.Must(t, os.WriteFile(filepath.Join(top, "real", "f"), []byte("inside\n"), 0o644))
	testenv.Must(t, os.Symlink(outside, filepath.Join(top, "a")))
	testenv.Must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(top, "real", "link")))
	for _, p := range []string{filepath.Join(outside, "secret"), filepath.Join(top, "real", "f")} {
		if _, err := os.ReadFile(p); err != nil { // both in the page cache
			t.Fatal(err)
		}
	}
	var st unix.Stat_t
	testenv.Must(t, unix.Stat(top, &st))
	ask := listerOf(t, top, fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if got := ask("l"+filepath.Join(top, "a")+"\x00", -1); len(got) != 2 || got[0][0] != 'e' {
		t.Errorf("a listing through a link: %q, want an error", got)
	}
	if got := ask("l"+outside+"\x00", -1); len(got) != 2 || got[0][0] != 'e' {
		t.Errorf("a listing outside the mount point: %q, want an error", got)
	}
	if got := ask("c"+filepath.Join(top, "a")+"\x00secret\x00\x00", 1); got[0] != "0" {
		t.Errorf("pages of a file through a linked directory: %s, want 0 (not opened)", got[0])
	}
	if got := ask("c"+filepath.Join(top, "real")+"\x00link\x00f\x00../a/secret\x00\x00", 3); got[0] != "0" || got[1] != "1" || got[2] != "0" {
		t.Errorf("pages of a link, a file, a name with a slash: %q, want 0 1 0", got)
	}
	if got := ask("l"+filepath.Join(top, "real")+"\x00", -1); len(got) != 3 || !slices.Contains(got, "ff") || !slices.Contains(got, "flink") {
		t.Errorf("the listing of a directory of the mount: %q", got)
	}
	// The mount point is not the mount any more (a directory above it
	// moved, another put in its place): nothing is listed or counted.
	ask = listerOf(t, top, "0:0")
	if got := ask("l"+filepath.Join(top, "real")+"\x00", -1); len(got) != 2 || got[0][0] != 'e' {
		t.Errorf("a listing when the mount point is not the mount: %q, want an error", got)
	}
	if got := ask("c"+filepath.Join(top, "real")+"\x00f\x00\x00", 1); got[0] != "0" {
		t.Errorf("pages counted when the mount point is not the mount: %s, want 0", got[0])
	}
}

// listerOf runs a lister of the mount point top, of device dev, and returns
// a function that sends it a request and reads answers records (-1:
// through the listing's end).
func listerOf(t *testing.T, top, dev string) func(req string, answers int) []string {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { runLister(top, dev, inR, outW); outW.Close() }()
	t.Cleanup(func() { inW.Close() })
	out := bufio.NewReader(outR)
	if _, err := out.ReadString('\n'); err != nil { // the thread id
		t.Fatal(err)
	}
	return func(req string, answers int) []string {
		t.Helper()
		if _, err := io.WriteString(inW, req); err != nil {
			t.Fatal(err)
		}
		var got []string
		for len(got) < answers || answers < 0 && (len(got) == 0 || got[len(got)-1] != "z") {
			rec, err := out.ReadString(0)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, strings.TrimSuffix(rec, "\x00"))
		}
		return got
	}
}

// A lister child never holds /dev/fuse: if it did, a daemon killed while
// the child waited on the mount would leave the connection open, the child
// stuck, and the mount point hung for every later access. The descriptor
// is opened as go-fuse opens it, without O_CLOEXEC.
func TestListerHoldsNoFuseDescriptor(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Parallel()
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR, 0)
	if err != nil {
		t.Skipf("/dev/fuse cannot be opened here: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	done := make(chan []string, 1)
	go func() {
		runtime.LockOSThread() // the child lives as long as this thread
		defer runtime.UnlockOSThread()
		l, err := StartLister(t.TempDir(), "0:0") // it opens the mount point only when asked
		if err != nil {
			t.Error(err)
			done <- nil
			return
		}
		defer l.Close()
		var fuse []string
		dir := fmt.Sprintf("/proc/%d/fd", l.Pid())
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if target, _ := os.Readlink(filepath.Join(dir, e.Name())); target == "/dev/fuse" {
				fuse = append(fuse, e.Name())
			}
		}
		done <- fuse
	}()
	if fuse := <-done; len(fuse) != 0 {
		t.Fatalf("the lister child holds /dev/fuse as fd %v", fuse)
	}
}

// TestMain runs the test binary as a lister child when it was started as
// one (see ListerMain), or runs the tests.
func TestMain(m *testing.M) {
	if status, ok := ListerMain(); ok {
		os.Exit(status)
	}
	os.Exit(m.Run())
}
