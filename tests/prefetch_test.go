package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestPushedPagesFollowChanges: the small files a listing named are pushed
// into the kernel's page cache once one of them is read, and not before
// (seen on /metrics, and in that reading the others then sends the daemon
// no READ), and a pushed file changed in place
// (same size, same inode) or replaced by a rename is read as it is now,
// never as it was pushed. A secret never enters by a push: a private key
// in a quiet directory is neither listed nor pushed.
//
// Not parallel, like every test here that counts READs: a parallel test
// that kills a daemon makes the next mount drop the machine's clean caches
// (mount.ClearStale), which would take pushed pages from under the count.
func TestPushedPagesFollowChanges(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.root, "quiet")
	content := func(i, v int) string {
		return fmt.Sprintf("file %02d, version %d: %s\n", i, v, strings.Repeat("x", 100))
	}
	files := map[string]string{"key.txt": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n" + canary + "\n-----END OPENSSH PRIVATE KEY-----\n"}
	for i := range 40 {
		files[fmt.Sprintf("f%02d.txt", i)] = content(i, 1)
	}
	mdir, sock := quietMount(t, f, files)
	readAll := listAndRead(t, sock, mdir, 40, func(i int) (string, string) { return fmt.Sprintf("f%02d.txt", i), content(i, 1) })
	if ls := mustRun(t, "ls", "-l", mdir); strings.Contains(ls, "key.txt") {
		t.Fatalf("the key is listed:\n%s", ls)
	}
	if readAll != 0 {
		t.Errorf("reading the pushed files the kernel held sent %v READs", readAll)
	}
	// In place, same size, same inode: the pushed page must go.
	p := filepath.Join(dir, "f07.txt")
	fh, err := os.OpenFile(p, os.O_WRONLY, 0)
	testenv.Must(t, err)
	_, err = fh.WriteAt([]byte(content(7, 2)), 0)
	testenv.Must(t, err)
	fh.Close()
	testenv.Within(t, 10*time.Second, "an in-place change of a pushed file", func() error {
		return shows(filepath.Join(mdir, "f07.txt"), []byte(content(7, 2)))
	})

	// Replaced by a rename, as editors save.
	writeFile(t, filepath.Join(dir, "f08.tmp"), content(8, 2), 0o644)
	testenv.Must(t, os.Rename(filepath.Join(dir, "f08.tmp"), filepath.Join(dir, "f08.txt")))
	testenv.Within(t, 10*time.Second, "a renamed-over pushed file", func() error {
		return shows(filepath.Join(mdir, "f08.txt"), []byte(content(8, 2)))
	})

	// Once seen, never the pushed version again.
	for range 20 {
		for i, v := range map[int]int{7: 2, 8: 2} {
			if got, err := os.ReadFile(filepath.Join(mdir, fmt.Sprintf("f%02d.txt", i))); err != nil || string(got) != content(i, v) {
				t.Fatalf("f%02d after it changed: %v %q", i, err, got)
			}
		}
	}
	if out, _ := run(t, 10*time.Second, "grep", "-r", canary, f.mp); strings.Contains(out, canary) {
		t.Fatal("the key's material was served")
	}
}

// TestWarmWalkWarmsTheView: right after mounting, with nobody using it,
// the daemon walks its own mount and pushes every small file: reading
// those the kernel still holds afterwards sends no READ (see readsOfHeld).
// With [mount] warm = false none is in the kernel's cache before it is
// read. The directory takes several READDIRPLUS replies, each of which
// go-fuse may start with the entry the one before had no room for.
func TestWarmWalkWarmsTheView(t *testing.T) { // not parallel: see TestPushedPagesFollowChanges
	const files = 300
	name := func(i int) string { return fmt.Sprintf("a-file-with-a-longer-name-%03d.txt", i) }
	for _, warm := range []bool{true, false} {
		t.Run(fmt.Sprint("warm=", warm), func(t *testing.T) {
			f := newFixture(t)
			// The root holds nothing else the walk could push: the pushes
			// counted are these files'.
			root := filepath.Join(f.root, "w")
			dir := filepath.Join(root, "x")
			for i := range files {
				writeFile(t, filepath.Join(dir, name(i)), fmt.Sprintf("file %d\n", i), 0o644)
			}
			// 400 directories: a walk that waited on its own requests (as
			// if they were an agent's) would wait 250 ms after each. Their
			// files are empty: nothing to push.
			for i := range 400 {
				writeFile(t, filepath.Join(root, "many", fmt.Sprintf("d%03d", i), "x.txt"), "", 0o644)
			}
			old := time.Now().Add(-time.Hour)
			for _, d := range []string{dir, root} {
				testenv.Must(t, os.Chtimes(d, old, old))
			}
			writePolicy(t, f.policy, []string{root}, fmt.Sprintf("[mount]\nwarm = %v\n", warm))
			sock := filepath.Join(f.base, "ctl.sock")
			d := startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
			if warm {
				// A hang guard, 20x a walk on a loaded machine: a walk that
				// yields to itself takes 100 s here.
				d.log.waitFor(t, "warm walk done", 1, 15*time.Second)
			}
			var paths []string
			for i := range files {
				paths = append(paths, filepath.Join(f.mp, "x", name(i)))
			}
			if warm {
				// Every small file was given to the kernel whole.
				if p := counters(scrape(t, sock))[`fsguard_prefetch_files_total{result="pushed"}`]; p < files {
					t.Errorf("the warm walk pushed %v files, not the %d small files it listed", p, files)
				}
			}
			sent, gone := readsOfHeld(t, sock, paths, func(i int) {
				if got, err := os.ReadFile(paths[i]); err != nil || string(got) != fmt.Sprintf("file %d\n", i) {
					t.Fatalf("%s: %q %v", name(i), got, err)
				}
			})
			if warm && sent != 0 {
				t.Errorf("after the warm walk, reading the %d small files the kernel held sent %v READs (%d not held: %v)", files-len(gone), sent, len(gone), gone)
			}
			if warm && len(gone) > 0 {
				t.Logf("%d of %d files were reclaimed by the kernel after their push: %v", len(gone), files, gone)
			}
			if !warm && len(gone) != files {
				t.Errorf("without the walk, %d of %d small files were in the kernel's cache before any read: the test measures nothing", files-len(gone), files)
			}
		})
	}
}

// TestForgottenViewIsWarmedAgain: when the kernel forgets the mount's
// names and pages (here: dropped with the machine's reclaimable caches,
// as memory reclaim does on an idle machine), the daemon walks it again
// once nobody has asked anything for a while, so the agent back from a
// pause finds it warm: no READ for files it read before.
//
// Not parallel: dropping the kernel's caches is machine-wide, and would
// take pushed pages from under the tests that count READs; a top-level
// test without t.Parallel runs before the parallel ones start.
func TestForgottenViewIsWarmedAgain(t *testing.T) {
	testenv.RequireRoot(t, needsRoot)
	f := newFixture(t)
	old := time.Now().Add(-time.Hour)
	for i := range 1500 { // more than the 1,024 forgotten nodes that start a walk
		writeFile(t, filepath.Join(f.root, "tree", fmt.Sprintf("d%02d", i/100), fmt.Sprintf("f%04d.txt", i)), fmt.Sprintf("file %d\n", i), 0o644)
	}
	for i := range 15 {
		testenv.Must(t, os.Chtimes(filepath.Join(f.root, "tree", fmt.Sprintf("d%02d", i)), old, old))
	}
	testenv.Must(t, os.Chtimes(filepath.Join(f.root, "tree"), old, old))
	testenv.Must(t, os.Chtimes(f.root, old, old))
	sock := filepath.Join(f.base, "ctl.sock")
	writePolicy(t, f.policy, []string{f.root}, fmt.Sprintf("[control]\nsocket = %q\n", sock))
	d := startMount(t, f.mp, "--policy", f.policy)
	d.log.waitFor(t, "warm walk done", 1, 60*time.Second)
	// The kernel forgets: dentries and inodes go, and their pages with them.
	testenv.Must(t, os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0))
	d.log.waitFor(t, "warm walk done", 2, 60*time.Second)
	some := []int{0, 700, 1499}
	var paths []string
	for _, i := range some {
		paths = append(paths, filepath.Join(f.mp, "tree", fmt.Sprintf("d%02d", i/100), fmt.Sprintf("f%04d.txt", i)))
	}
	sent, gone := readsOfHeld(t, sock, paths, func(k int) {
		if got := mustRun(t, "cat", paths[k]); got != fmt.Sprintf("file %d\n", some[k]) {
			t.Fatalf("%s: %q", paths[k], got)
		}
	})
	if sent != 0 {
		t.Errorf("after the second walk, 3 files read again sent %v READs for those the kernel held (not held: %v)", sent, gone)
	}
}

// TestReclaimedPagesArePushedAgain: an idle machine's memory is reclaimed
// (here the host pages out file pages idle for a minute), and with it the
// pages the mount pushed and its cached listings, while the kernel keeps
// the names. When the agent lists such a directory again, its small files
// are pushed again at once, though their verdicts are known: reading them
// then sends no READ, not even the first.
//
// Not parallel: dropping the page cache is machine-wide.
func TestReclaimedPagesArePushedAgain(t *testing.T) {
	testenv.RequireRoot(t, needsRoot)
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("f%02d.txt", i)] = fmt.Sprintf("file %d\n", i)
	}
	mdir, sock := quietMount(t, newFixture(t), files)
	name := func(i int) (string, string) { return fmt.Sprintf("f%02d.txt", i), fmt.Sprintf("file %d\n", i) }
	listAndRead(t, sock, mdir, 40, name)
	// Clean pages only: the kernel keeps its names and inodes.
	testenv.Must(t, os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0))
	// Listed again, the files are pushed at once, not parked until a
	// read: those the kernel holds are then read with no READ.
	pushed := counters(scrape(t, sock))[`fsguard_prefetch_files_total{result="pushed"}`]
	mustRun(t, "ls", mdir)
	testenv.Within(t, 60*time.Second, "40 files pushed after the listing again", func() error {
		if p := counters(scrape(t, sock))[`fsguard_prefetch_files_total{result="pushed"}`] - pushed; p < 40 {
			return fmt.Errorf("%v pushed", p)
		}
		return nil
	})

	var paths []string
	for i := range 40 {
		n, _ := name(i)
		paths = append(paths, filepath.Join(mdir, n))
	}
	sent, gone := readsOfHeld(t, sock, paths, func(i int) {
		if got, want := mustRun(t, "cat", paths[i]), fmt.Sprintf("file %d\n", i); got != want {
			t.Fatalf("%s: %q", paths[i], got)
		}
	})
	if sent != 0 {
		t.Errorf("after the listing again, reading the reclaimed files pushed again sent %v READs for those the kernel held (not held: %v)", sent, gone)
	}
}

// listAndRead lists dir and reads its n files, as a tree walker does,
// and returns the READs the last n-1 sent while the kernel held them (see
// readsOfHeld). The listing pushes nothing
// before a file of the directory is read (find and git status list and
// read nothing); the first file's READ releases the pushes of the other
// n-1, which are waited for.
func listAndRead(t *testing.T, sock, dir string, n int, file func(i int) (name, content string)) float64 {
	t.Helper()
	pushedNow := func() float64 { return counters(scrape(t, sock))[`fsguard_prefetch_files_total{result="pushed"}`] }
	pushed := pushedNow()
	mustRun(t, "ls", dir) // reads to the end: its last READDIRPLUS hands the pushes over
	if p := pushedNow(); p != pushed {
		t.Fatalf("the listing alone pushed %v files", p-pushed)
	}
	cat := func(i int) {
		name, want := file(i)
		if got := mustRun(t, "cat", filepath.Join(dir, name)); got != want {
			t.Fatalf("%s: %q", name, got)
		}
	}
	cat(0)
	testenv.Within(t, 60*time.Second, fmt.Sprintf("%d pushed files after the first read", n-1), func() error {
		if p := pushedNow() - pushed; p < float64(n-1) {
			return fmt.Errorf("%v pushed", p)
		}
		return nil
	})

	var paths []string
	for i := 1; i < n; i++ {
		name, _ := file(i)
		paths = append(paths, filepath.Join(dir, name))
	}
	sent, gone := readsOfHeld(t, sock, paths, func(i int) { cat(i + 1) })
	if len(gone) > 0 {
		t.Logf("%d of %d pushed files were reclaimed by the kernel before they were read: %v", len(gone), n-1, gone)
	}
	return sent
}

// quietMount writes files into the fixture's directory "quiet", makes it
// look unchanged for an hour (a directory that changed within seconds
// gets no READDIRPLUS entries: see mount's listing.Lookup), and mounts
// without the warm walk, so the test's own listing is the only one and
// its pushes are the ones counted. It returns the directory through the
// mount and the control socket.
func quietMount(t *testing.T, f *fixture, files map[string]string) (string, string) {
	t.Helper()
	dir := filepath.Join(f.root, "quiet")
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), content, 0o644)
	}
	old := time.Now().Add(-time.Hour)
	testenv.Must(t, os.Chtimes(dir, old, old))
	writePolicy(t, f.policy, []string{f.root}, "[mount]\nwarm_walk = false\n")
	sock := filepath.Join(f.base, "ctl.sock")
	startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	return filepath.Join(f.mp, "quiet"), sock
}

// keepBusy has this process use the mount at mp without a pause (a LOOKUP
// of a new name, again and again), as an agent's command does, from the
// moment it returns until the function it returns is called.
func keepBusy(t *testing.T, mp string) (stop func()) {
	return busyWith(t, func(i int) { os.Stat(filepath.Join(mp, fmt.Sprintf("missing-%d", i))) })
}

// keepReading is keepBusy by reading one file of the mount again and
// again: after the first time, its name and pages are in the kernel's
// caches and a read asks the daemon nothing, as a second grep -r does.
func keepReading(t *testing.T, file string) (stop func()) {
	return busyWith(t, func(int) {
		if _, err := os.ReadFile(file); err != nil {
			t.Errorf("keepReading: %v", err)
		}
	})
}

// busyWith calls step without a pause until stop is called, after it has
// run a few times.
func busyWith(t *testing.T, step func(i int)) (stop func()) {
	t.Helper()
	done, stopped := make(chan struct{}), make(chan struct{})
	var asked atomic.Int64
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			step(i)
			asked.Add(1)
		}
	}()
	testenv.Within(t, 30*time.Second, "the agent's requests", func() error {
		if asked.Load() < 10 {
			return fmt.Errorf("%d requests", asked.Load())
		}
		return nil
	})

	return func() { close(done); <-stopped }
}

// TestPushesAfterARestart: a daemon started again on a tree it decided
// before knows every verdict, so its listings read no file; an agent's
// first read in a directory still has the neighbours pushed at once,
// while the agent goes on using the mount, and reading them then sends
// the daemon no READ.
func TestPushesAfterARestart(t *testing.T) { // not parallel: see TestPushedPagesFollowChanges
	f := newFixture(t)
	dir := filepath.Join(f.root, "quiet")
	content := func(i int) string { return fmt.Sprintf("file %02d: %s\n", i, strings.Repeat("y", 100)) }
	for i := range 40 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), content(i), 0o644)
	}
	sock := restarted(t, f, "quiet")
	mdir := filepath.Join(f.mp, "quiet")
	mustRun(t, "ls", mdir) // reads to the end: its last READDIRPLUS hands the pushes over
	if n := counters(scrape(t, sock))["fsguard_admit_scans_total"]; n != 0 {
		t.Fatalf("the second daemon scanned %v files: the verdicts were not kept", n)
	}
	// The attacker's turn: between the listing that parked the pushes and
	// the read that releases them, a file becomes a private key, and a
	// process opened it before (in kernel open mode its reads come from
	// the page cache). The push, made for the version listed, must not
	// put the key there.
	held, err := os.Open(filepath.Join(mdir, "f05.txt"))
	testenv.Must(t, err)
	defer held.Close()
	writeFile(t, filepath.Join(dir, "f05.txt"), realKeys(t)["ec"], 0o644)
	buf := make([]byte, 4096)
	testenv.Within(t, 10*time.Second, "the key refused through the open file", func() error {

		if n, err := held.ReadAt(buf, 0); err == nil || n > 0 {
			return fmt.Errorf("read %q", buf[:n])
		}
		return nil
	})

	idle := keepBusy(t, f.mp)
	defer idle()
	pushed := func() float64 { return counters(scrape(t, sock))[`fsguard_prefetch_files_total{result="pushed"}`] }
	if got := mustRun(t, "cat", filepath.Join(mdir, "f00.txt")); got != content(0) {
		t.Fatalf("f00.txt: %q", got)
	}
	testenv.Within(t, 60*time.Second, "38 files pushed while the agent is busy", func() error {
		if p := pushed(); p < 38 {
			return fmt.Errorf("%v pushed", p)
		}
		return nil
	})

	var paths []string
	var which []int
	for i := 1; i < 40; i++ {
		if i != 5 {
			paths = append(paths, filepath.Join(mdir, fmt.Sprintf("f%02d.txt", i)))
			which = append(which, i)
		}
	}
	sent, gone := readsOfHeld(t, sock, paths, func(k int) {
		if got := mustRun(t, "cat", paths[k]); got != content(which[k]) {
			t.Fatalf("%s: %q", paths[k], got)
		}
	})
	if sent != 0 {
		t.Errorf("reading the pushed files the kernel held sent %v READs (not held: %v)", sent, gone)
	}
	if got, err := os.ReadFile(filepath.Join(mdir, "f05.txt")); err == nil || strings.Contains(string(got), "PRIVATE KEY") {
		t.Errorf("f05.txt, a key since the listing, read through the mount: %v %q", err, got)
	}
	if n, _ := held.ReadAt(buf, 0); strings.Contains(string(buf[:n]), "PRIVATE KEY") {
		t.Errorf("f05.txt, opened before it became a key, read the key: %q", buf[:n])
	}
}

// TestRestartListingsReadForAReader: after a restart every verdict is
// known, so a listing reads no file (a find, a git status over the tree
// reads nothing more than natively); but once the agent reads a file of a
// directory it listed, it reads what it lists (a grep -r), and the next
// listings read their small files for the pushes at once, as a first
// mount's listings do, instead of leaving each to be read behind the
// walker. The backing files' IN_ACCESS events tell which listing read.
func TestRestartListingsReadForAReader(t *testing.T) { // not parallel: see TestPushedPagesFollowChanges
	f := newFixture(t)
	for _, d := range []string{"a", "b", "c"} {
		for i := range 5 {
			writeFile(t, filepath.Join(f.root, "r", d, fmt.Sprintf("f%d.txt", i)), fmt.Sprintf("%s/f%d\n", d, i), 0o644)
		}
	}
	sock := restarted(t, f, "r/a", "r/b", "r/c")
	accessed := accessWatch(t, filepath.Join(f.root, "r", "b"), filepath.Join(f.root, "r", "c"))
	// Each directory by its path, not through its parent's listing: no
	// listing of it is made ahead.
	ls := func(d string) { mustRun(t, "ls", filepath.Join(f.mp, "r", d)) }
	ls("a")
	ls("b") // nothing of a read yet: a walker that only lists
	if got := accessed(); len(got) != 0 {
		t.Errorf("listings by a walker that read nothing read %v", got)
	}
	if n := counters(scrape(t, sock))["fsguard_admit_scans_total"]; n != 0 {
		t.Fatalf("the second daemon scanned %v files: the verdicts were not kept", n)
	}
	mustRun(t, "cat", filepath.Join(f.mp, "r", "a", "f0.txt"))
	ls("c") // the agent reads what it lists now: read for the pushes
	got := accessed()
	for i := range 5 {
		if name := fmt.Sprintf("c/f%d.txt", i); !got[name] {
			t.Errorf("%s not read by the listing of c after a read in a (read: %v)", name, got)
		}
	}
	for name := range got {
		if strings.HasPrefix(name, "b/") {
			t.Errorf("%s read, in the directory listed before any read", name)
		}
	}
}

// restarted runs a daemon on f's root (without the warm walk) that decides
// every file of dirs (root-relative) by reading them through the mount,
// stops it, and starts another on the verdicts it saved: a restart on a
// tree seen before. dirs are made quiet first, so that listings of them
// hand their entries over. It returns the daemon's control socket.
func restarted(t *testing.T, f *fixture, dirs ...string) string {
	t.Helper()
	aged(t, f.root) // old enough for their verdicts to be saved
	old := time.Now().Add(-time.Hour)
	var through []string
	for _, d := range dirs {
		testenv.Must(t, os.Chtimes(filepath.Join(f.root, d), old, old))
		through = append(through, filepath.Join(f.mp, d))
	}
	writePolicy(t, f.policy, []string{f.root}, "[mount]\nwarm_walk = false\n")
	sock := filepath.Join(f.base, "ctl.sock")
	d := startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	mustRun(t, "grep", append([]string{"-r", "-c", ""}, through...)...)
	d.stop()
	startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	return sock
}

// accessWatch watches dirs for reads of their files (inotify IN_ACCESS)
// and returns a function that gives the files read so far ("dir/name", by
// each dir's base name; a listing of the directory itself is left out).
func accessWatch(t *testing.T, dirs ...string) func() map[string]bool {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	testenv.Must(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	names := map[int32]string{}
	for _, d := range dirs {
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_ACCESS)
		testenv.Must(t, err)
		names[int32(wd)] = filepath.Base(d)
	}
	seen := map[string]bool{}
	buf := make([]byte, 64<<10)
	return func() map[string]bool {
		for {
			n, err := unix.Read(fd, buf)
			if err != nil || n <= 0 {
				return seen
			}
			for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
				name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				if name != "" { // not the directory itself, listed
					seen[names[ev.Wd]+"/"+name] = true
				}
				b = b[unix.SizeofInotifyEvent+int(ev.Len):]
			}
		}
	}
}

// resident reports whether every page of the file at p, a file of a
// mount, is in the kernel's page cache now. It maps the file and asks
// mincore, which faults nothing in: it sends the daemon no READ.
func resident(p string) (bool, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	if st.Size == 0 {
		return true, nil
	}
	mem, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return false, err
	}
	defer unix.Munmap(mem)
	page := os.Getpagesize()
	vec := make([]byte, (int(st.Size)+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return false, errno
	}
	for _, v := range vec {
		if v&1 == 0 {
			return false, nil
		}
	}
	return true, nil
}

// readsOfHeld reads each file of paths with read (given its index), which
// reads it whole,
// and returns the READs the daemon was sent for the files whose pages the
// kernel held just before (see resident), and the names of those it did
// not hold. A push gives the kernel a file's pages; keeping them is the
// kernel's: its reclaim may take idle pages at any time, with memory free
// (a host's proactive reclaim takes pages unread for a while, some within
// seconds of their push), and the READ that then fills them again is the
// mount working, not a push missed. What a push promises is the pages given
// and then read from the cache: reading a file the kernel holds asks the
// daemon nothing (an open or a stat that dropped the pages would show
// here as a READ).
func readsOfHeld(t *testing.T, sock string, paths []string, read func(i int)) (sent float64, gone []string) {
	t.Helper()
	reads := func() float64 { return counters(scrape(t, sock))[`fsguard_fuse_op_seconds_count{op="read"}`] }
	last := reads()
	for i, p := range paths {
		held, err := resident(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		read(i)
		now := reads()
		if held {
			sent += now - last
		} else {
			gone = append(gone, filepath.Base(p))
		}
		last = now
	}
	return sent, gone
}
