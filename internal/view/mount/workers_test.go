package mount

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/testenv"
)

// Labeled counts the goroutines of this process that carry the profiler
// label key with value, and returns their stacks.
func labeled(t *testing.T, key, value string) (int, string) {
	t.Helper()
	var b bytes.Buffer
	testenv.Must(t, pprof.Lookup("goroutine").WriteTo(&b, 1))
	want := strconv.Quote(key) + ":" + strconv.Quote(value)
	n, stacks := 0, ""
	for _, rec := range strings.Split(b.String(), "\n\n") {
		if !strings.Contains(rec, "# labels: {") || !strings.Contains(rec, want) {
			continue
		}
		var k int
		fmt.Sscanf(rec, "%d @", &k)
		n += k
		stacks += rec + "\n\n"
	}
	return n, stacks
}

// TestUnmountEndsItsGoroutines: a mount unmounted while its warm walk and
// pushes run leaves no goroutine of its own behind (each carries its mount
// point as a profiler label): Unmount ends them and waits for them.
// listerOf reports whether a child of this process is a lister of the
// mount at mp (see warm.StartLister).
func listerOf(mp string) bool {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		kids, _ := os.ReadFile(f)
		for _, pid := range strings.Fields(string(kids)) {
			env, _ := os.ReadFile("/proc/" + pid + "/environ")
			if slices.Contains(strings.Split(string(env), "\x00"), "FSGUARD_INTERNAL_LISTER="+mp) {
				return true
			}
		}
	}
	return false
}

func TestUnmountEndsItsGoroutines(t *testing.T) {
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	root := t.TempDir()
	for d := range 200 {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", d), "sub")
		testenv.Must(t, os.MkdirAll(dir, 0o755))
		for f := range 10 {
			testenv.Must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", f)), bytes.Repeat([]byte("x"), 2000), 0o644))
		}
	}
	mp := filepath.Join(t.TempDir(), "mnt")
	testenv.Must(t, os.Mkdir(mp, 0o755))
	pol, err := parsePolicy([]byte("[[root]]\npath = \"" + root + "\"\n[mount]\nwarm = true\n"))
	testenv.Must(t, err)
	s, err := Mount(Config{Policy: pol, MountPoint: mp})
	testenv.Must(t, err)
	unmounted := false
	t.Cleanup(func() {
		if !unmounted {
			s.Unmount()
		}
	})
	if !s.v.watched() {
		t.Skip("no watch here: no warm walk")
	}
	s.Warming().Walk()
	// The walk has begun: its lister child runs.
	testenv.Eventually(t, "the warm walk starts", func() bool { return listerOf(s.mp) })
	if n, _ := labeled(t, MountLabel, s.mp); n == 0 {
		t.Fatal("no goroutine of the mount's own while it runs: the label is not set")
	}
	testenv.Must(t, s.Unmount())
	unmounted = true
	if n, stacks := labeled(t, MountLabel, s.mp); n != 0 {
		t.Fatalf("%d goroutines of the mount outlived Unmount:\n%s", n, stacks)
	}
}
