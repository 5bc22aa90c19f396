package mount

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestKeptCopy: a copy holds the bytes whatever buffer it reuses (one
// given back may be), in a buffer of its size class; a slice of no class
// (a caller's own) is not taken in.
func TestKeptCopy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ n, class int }{{1, 0}, {4096, 0}, {4097, 1}, {8192, 1}, {65537, 5}, {maxPush, 5}} {
		if got := keptClass(c.n); got != c.class {
			t.Errorf("keptClass(%d) = %d, want %d", c.n, got, c.class)
		}
	}
	if keptCopy(nil) != nil {
		t.Error("an empty file's copy holds a buffer")
	}
	for _, n := range []int{1, 100, 4096, 5000, 70000, maxPush} {
		a := bytes.Repeat([]byte{'a'}, n)
		first := keptCopy(a)
		keptDone(first)
		b := bytes.Repeat([]byte{'b'}, n)
		second := keptCopy(b) // may reuse first's buffer
		if !bytes.Equal(second, b) || cap(second) != 1<<(keptClass(n)+minKeptShift) {
			t.Errorf("%d bytes: copy of len %d cap %d, or other bytes", n, len(second), cap(second))
		}
		keptDone(second)
	}
	keptDone(make([]byte, 10, 100)) // no class: not pooled, no panic
}

// TestRecycledBuffersServeTheirOwnFile: a walker that reads nothing
// (find) fills the parked pushes past their budget, and the buffers of
// those dropped are used again for the next listings' copies; reading
// every file afterwards (the parked pushes of the directories still
// held go in then) must show each file's own bytes. A buffer given back
// while a push still held it would put another file's bytes in its
// place.
func TestRecycledBuffersServeTheirOwnFile(t *testing.T) {
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	root := t.TempDir()
	const dirs, files, size = 48, 16, 32 << 10 // 24 MiB: past maxParkedBytes
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", d))
		quietDir(t, dir, func() { // the listings keep content
			for f := range files {
				name := fmt.Sprintf("f%02d.txt", f)
				line := fmt.Sprintf("%s/%s ", filepath.Base(dir), name)
				body := strings.Repeat(line, size/len(line)+1)[:size-1] + "\n"
				testenv.Must(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
			}
		})
	}
	_, mp := mountRoot(t, root, Config{})
	sum := func(dir string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", "find . -type f | sort | xargs cat | sha256sum")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", dir, err, out)
		}
		return string(out)
	}
	if out, err := exec.Command("find", mp).CombinedOutput(); err != nil { // lists, reads nothing
		t.Fatalf("find: %v: %s", err, out)
	}
	if got, want := sum(mp), sum(root); got != want {
		t.Fatalf("the files read through the mount are not the tree's: %s, want %s", got, want)
	}
}
