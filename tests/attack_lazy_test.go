package tests

// A file is listed by its name and place; its content is decided at its
// first read (or by the warming engine in the agent's pauses). Until then
// its name and size may show; its bytes never do, and a file whose content
// turns out refused (a key) leaves the view at once.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/testenv"

	"golang.org/x/sys/unix"
)

// lazyFixture is a root holding clean files and a key under a name that
// says nothing, mounted with the given [mount] settings.
func lazyFixture(t *testing.T, mountExtra string) (root, mp string, d *daemon) {
	t.Helper()
	base := openDir(t)
	root, mp = filepath.Join(base, "root"), filepath.Join(base, "mnt")
	testenv.Must(t, os.Mkdir(mp, 0o755))
	testenv.WriteTree(t, root, map[string]string{
		"src/main.go":   "package main\n\nfunc main() {}\n",
		"src/deploy.md": testKey,
		"src/later.txt": strings.Repeat("clean text, nothing to see\n", len(testKey)/27+1)[:len(testKey)],
	})
	pol := filepath.Join(base, "policy.toml")
	writePolicy(t, pol, []string{root}, "[mount]\n"+mountExtra)
	return root, mp, startMount(t, mp, "--policy", pol)
}

// names lists dir (through the mount) as ls does.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("ls %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func lists(t *testing.T, dir, name string) bool {
	t.Helper()
	for _, n := range names(t, dir) {
		if n == name {
			return true
		}
	}
	return false
}

// TestAttackKeyListedColdThenReadIsGone: with nothing deciding content in
// the background (warm off), a cold ls may show a key file by name; its
// first read is refused as a hidden file is (ENOENT, a denial record), and
// from then on it is gone: from the directory's listing the kernel had
// cached, and by name (no stale entry: stat fails too).
func TestAttackKeyListedColdThenReadIsGone(t *testing.T) {
	t.Parallel()
	_, mp, d := lazyFixture(t, "warm = false\n")
	dir := filepath.Join(mp, "src")
	if !lists(t, dir, "main.go") {
		t.Fatalf("ls lacks main.go: %v", names(t, dir))
	}
	t.Logf("cold ls: %v", names(t, dir)) // deploy.md may show here: listed by name
	var before unix.Stat_t
	statErr := unix.Stat(filepath.Join(dir, "deploy.md"), &before)
	out, err := exec.Command("cat", filepath.Join(dir, "deploy.md")).CombinedOutput()
	if err == nil || strings.Contains(string(out), keyMaterial) {
		t.Fatalf("cat of a key listed by name: %v %q", err, out)
	}
	if !strings.Contains(string(out), "No such file") {
		t.Errorf("cat of a key fails as a hidden file does (ENOENT): %q", out)
	}
	if lists(t, dir, "deploy.md") {
		t.Errorf("the key still listed after its read was refused: %v", names(t, dir))
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(dir, "deploy.md"), &st); err != unix.ENOENT {
		t.Errorf("stat of the key after its read was refused: %v (stat before: %v), want ENOENT", err, statErr)
	}
	if err := unix.Lstat(filepath.Join(dir, "deploy.md"), &st); err != unix.ENOENT {
		t.Errorf("lstat of the key after its read was refused: %v, want ENOENT", err)
	}
	d.log.waitFor(t, `"code":"DENIED"`, 1, 30*time.Second)
	if got := mustRun(t, "cat", filepath.Join(dir, "main.go")); !strings.Contains(got, "package main") {
		t.Errorf("a clean neighbour: %q", got)
	}
}

// TestAttackKeyListedThenOpenedInDaemonMode: the same in daemon open
// mode, where the open itself is refused.
func TestAttackKeyListedThenOpenedInDaemonMode(t *testing.T) {
	t.Parallel()
	_, mp, _ := lazyFixture(t, "warm = false\nopen = \"daemon\"\n")
	dir := filepath.Join(mp, "src")
	names(t, dir)
	if _, err := os.Open(filepath.Join(dir, "deploy.md")); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("open of a key listed by name: %v, want ENOENT", err)
	}
	if lists(t, dir, "deploy.md") {
		t.Errorf("the key still listed after its open was refused: %v", names(t, dir))
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(dir, "deploy.md"), &st); err != unix.ENOENT {
		t.Errorf("stat of the key after its open was refused: %v, want ENOENT", err)
	}
}

// TestAttackKeyWrittenIntoListedFileNeverServed: a host writer puts a key
// into a file the agent listed (by name, undecided) but never opened. No
// way of reading it through the mount gets a byte of it: read, O_DIRECT,
// mmap, splice.
func TestAttackKeyWrittenIntoListedFileNeverServed(t *testing.T) {
	t.Parallel()
	root, mp, _ := lazyFixture(t, "warm = false\n")
	dir := filepath.Join(mp, "src")
	if !lists(t, dir, "later.txt") {
		t.Fatalf("ls lacks later.txt: %v", names(t, dir))
	}
	var st unix.Stat_t
	testenv.Must(t, unix.Stat(filepath.Join(dir, "later.txt"), &st)) // its size and attributes are cached too
	// Same length, in place: the size the kernel holds stays true.
	w, err := os.OpenFile(filepath.Join(root, "src", "later.txt"), os.O_WRONLY, 0)
	testenv.Must(t, err)
	_, err = w.WriteAt([]byte(testKey), 0)
	testenv.Must(t, err)
	testenv.Must(t, w.Close())
	p := filepath.Join(dir, "later.txt")

	leaked := func(how string, b []byte) {
		if bytes.Contains(b, []byte(keyMaterial)) {
			t.Errorf("%s through the mount served the key written into a listed file", how)
		}
	}
	buf := directBuf(1 << 16)
	if n, err := readDirect(p, buf); err == nil {
		leaked("an O_DIRECT read", buf[:n])
	}
	if b, err := os.ReadFile(p); err == nil {
		leaked("a read", b)
	}
	leaked("mmap", mmapFaulting(t, p))
	leaked("splice", spliceWhole(t, p))
}

// mmapFaulting maps p and copies what the mapping holds; a fault (SIGBUS:
// the READ behind the page was refused) yields what was copied before it.
func mmapFaulting(t *testing.T, p string) (got []byte) {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil // refused at open: nothing mapped
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size == 0 {
		return nil
	}
	m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	defer unix.Munmap(m)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { _ = recover() }() // a fault: the page was refused
	for i := range m {
		got = append(got, m[i])
	}
	return got
}

// spliceWhole moves p's bytes into a pipe with splice(2) and returns them.
func spliceWhole(t *testing.T, p string) []byte {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var pipe [2]int
	testenv.Must(t, unix.Pipe2(pipe[:], unix.O_CLOEXEC))
	defer unix.Close(pipe[0])
	defer unix.Close(pipe[1])
	n, err := unix.Splice(fd, nil, pipe[1], nil, 1<<16, 0)
	if err != nil || n <= 0 {
		return nil
	}
	b := make([]byte, n)
	k, _ := unix.Read(pipe[0], b)
	return b[:k]
}

// TestAttackWarmFindsKeyInListedDirectory: a key the agent listed by name
// and never opened leaves the view once the warming engine decides it in
// the agent's pause: from the listing, and by name.
func TestAttackWarmFindsKeyInListedDirectory(t *testing.T) {
	t.Parallel()
	_, mp, _ := lazyFixture(t, "warm_walk = false\n")
	dir := filepath.Join(mp, "src")
	t.Logf("cold ls: %v", names(t, dir))
	testenv.Within(t, testenv.HangGuard, "the key gone from the listing without a read", func() error {
		if lists(t, dir, "deploy.md") {
			return fmt.Errorf("still listed")
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, "deploy.md"), &st); err != unix.ENOENT {
			return fmt.Errorf("lstat: %v", err)
		}
		return nil
	})
	if !lists(t, dir, "main.go") || !lists(t, dir, "later.txt") {
		t.Errorf("clean files gone too: %v", names(t, dir))
	}
}

// TestLazyListingSecondUserSeesAsNatively: a caller without read rights
// sees through the mount what it sees natively: the names of files it
// may not read (listed by name and place, as natively), their sizes, and
// EACCES at their read; nothing of a directory it may not list.
func TestLazyListingSecondUserSeesAsNatively(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, "runs commands as a second user")
	base := openDir(t)
	testenv.Must(t, os.Chmod(base, 0o755))
	root, mp := filepath.Join(base, "root"), filepath.Join(base, "mnt")
	testenv.Must(t, os.Mkdir(mp, 0o755))
	testenv.WriteTree(t, root, map[string]string{
		"pub/open.txt":   "anyone may read\n",
		"pub/closed.txt": "root only\n",
		"shut/inner.txt": "in a directory only root may list\n",
	})
	testenv.Must(t, os.Chmod(root, 0o755))
	testenv.Must(t, os.Chmod(filepath.Join(root, "pub"), 0o755))
	testenv.Must(t, os.Chmod(filepath.Join(root, "pub", "open.txt"), 0o644))
	testenv.Must(t, os.Chmod(filepath.Join(root, "pub", "closed.txt"), 0o600))
	testenv.Must(t, os.Chmod(filepath.Join(root, "shut"), 0o700))
	pol := filepath.Join(base, "policy.toml")
	writePolicy(t, pol, []string{root}, "[mount]\nwarm = false\n")
	startMount(t, mp, "--allow-other", "--policy", pol)

	sh := func(top string) string {
		script := `cd "$1" && for p in pub shut; do echo "ls $p: $(ls -A $p 2>&1 | tr '\n' ' ')"; done
for f in pub/open.txt pub/closed.txt shut/inner.txt; do
  echo "stat $f: $(stat -c '%s %a' $f 2>&1 | sed 's|.*: ||')"
  echo "cat $f: $(cat $f 2>&1 | sed 's|.*: ||')"
done`
		cmd := testenv.As(exec.Command("sh", "-c", script, "sh", top), 65534, 65534)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("as uid 65534 in %s: %v\n%s", top, err, out)
		}
		return string(out)
	}
	native, through := sh(root), sh(mp)
	if native != through {
		t.Errorf("uid 65534 sees through the mount what it does not natively:\nnative:\n%s\nthrough the mount:\n%s", native, through)
	}
	if !strings.Contains(through, "cat pub/closed.txt: Permission denied") {
		t.Errorf("a file uid 65534 may not read:\n%s", through)
	}
}
