package mount

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/testenv"

	"golang.org/x/sys/unix"
)

// parsePolicy is policy.Parse, with the warming engine off when the
// environment says so (FSGUARD_WARM=0), as the daemon has it: CI runs the
// package's tests a second time so.
func parsePolicy(text []byte) (*policy.Policy, error) {
	pol, err := policy.Parse(text)
	if err == nil && warmOff() {
		pol.Mount.Warm = false
	}
	return pol, err
}

// warmOff reports whether the tests run with the warming engine off.
func warmOff() bool { return os.Getenv("FSGUARD_WARM") == "0" }

// needWarm skips a test of the warming engine itself when it is off.
func needWarm(t *testing.T) {
	t.Helper()
	if warmOff() {
		t.Skip("the warming engine is off (FSGUARD_WARM=0)")
	}
}

// mountRoot mounts root, with no warm walk (none is started), at a new directory,
// and skips where the view has no watch: nothing is pushed or listed
// ahead without one.
func mountRoot(t *testing.T, root string, cfg Config) (*Server, string) {
	t.Helper()
	mp := filepath.Join(t.TempDir(), "mnt")
	testenv.Must(t, os.Mkdir(mp, 0o755))
	pol, err := parsePolicy([]byte("[[root]]\npath = \"" + root + "\"\n"))
	testenv.Must(t, err)
	cfg.Policy, cfg.MountPoint = pol, mp
	s, err := Mount(cfg)
	testenv.Must(t, err)
	t.Cleanup(func() { s.Unmount() })
	if !s.v.watched() {
		t.Skip("no watch here: nothing is pushed or listed ahead, nor kept fresh by events")
	}
	return s, mp
}

// quietDir makes dir (and its parents) and dates it an hour back once
// fill has written in it: a directory unchanged for a while is listed
// with its entries and its files' content kept for pushes.
func quietDir(t *testing.T, dir string, fill func()) {
	t.Helper()
	testenv.Must(t, os.MkdirAll(dir, 0o755))
	fill()
	old := time.Now().Add(-time.Hour)
	testenv.Must(t, os.Chtimes(dir, old, old))
}

// TestKeptPushOfAnOldVersion is the attacker's race, made to happen: a
// listing read a small file and queued its content for a push; before the
// push, the file changed — to other text, or to a private key. The push of
// the listing's bytes must not happen (the mount would serve a version
// that is gone), and nothing of the key may be served. Without the checks
// around the store, the old bytes are read back; so they are if the check
// trusts the view's count of changes without comparing it with the count
// the listing took before its read, or trusts an unmoved count (a watch
// that has not reported the change yet) after a READ gave the kernel the
// new version.
func TestKeptPushOfAnOldVersion(t *testing.T) {
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	const (
		v1  = "version one of this file, ordinary text\n"
		v2  = "version two of this file, ordinary text\n"
		key = testKey
	)
	names := map[string]string{"text.txt": v2, "key.txt": key}
	quietDir(t, dir, func() { // READDIRPLUS hands over entries
		for name := range names {
			testenv.Must(t, os.WriteFile(filepath.Join(dir, name), []byte(v1), 0o644))
		}
	})
	s, mp := mountRoot(t, root, Config{})

	// The listing: the kernel now knows both inodes.
	if _, err := os.ReadDir(filepath.Join(mp, "d")); err != nil {
		t.Fatal(err)
	}
	for name, now := range names {
		var st unix.Stat_t
		testenv.Must(t, unix.Stat(filepath.Join(dir, name), &st))
		was := fileid.Of(&st)
		in := s.root.EmbeddedInode().GetChild("d").GetChild(name)
		if in == nil {
			t.Fatalf("%s: the kernel does not hold it after the listing", name)
		}
		// The listing's count of changes: taken before it read the file.
		before := s.v.changes.Load()
		// The change, in place (same inode): text of the same size, or a
		// key. Seen through the mount before the push: a READ gave the
		// kernel the new version (or refused it), whether or not the
		// watch has reported the change yet.
		testenv.Must(t, os.WriteFile(filepath.Join(dir, name), []byte(now), 0o644))
		testenv.Eventually(t, name+": the change shown through the mount", func() bool {
			got, err := os.ReadFile(filepath.Join(mp, "d", name))
			return string(got) != v1 && (err != nil || string(got) == now)
		})
		// The listing's count, and the count now: as if the watch had
		// not reported the change yet. The mount showed the new version
		// (a READ), so the old one must not come back either way.
		for _, count := range []int64{before, s.v.changes.Load()} {
			s.v.push(ref{in}, was, []byte(v1), nil, false) // as the engine pushes a listing's kept content
			got, _ := os.ReadFile(filepath.Join(mp, "d", name))
			if string(got) == v1 || strings.Contains(string(got), "PRIVATE KEY") {
				t.Errorf("%s: after the push of its old version (count %d, was %d) the mount serves %q", name, count, before, got)
			}
		}
	}
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
