package tests

// The bytes served are the bytes checked: a host process changing a file
// while the agent reads it through the mount must not get a key or a
// credential past the check, whether it races the check (a write between
// the check and the read) or hides from it (a write through a shared
// mapping, which moves no ctime, so the version looks unchanged).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// keyMaterial is the line of key material the test key holds: a read that
// shows it served the key.
const keyMaterial = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"

// testKey is a private key (a header and material), as the fixture's.
const testKey = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + keyMaterial + "\n" + canary + "\n-----END OPENSSH PRIVATE KEY-----\n"

// directBuf is a buffer of n bytes aligned for O_DIRECT.
func directBuf(n int) []byte {
	buf := make([]byte, n+4096)
	al := int(uintptr(unsafe.Pointer(&buf[0])) & 4095)
	return buf[4096-al:][:n]
}

// readDirect reads up to len(buf) bytes of p from offset 0 with O_DIRECT,
// so the read reaches the daemon whatever the mount's page cache holds.
func readDirect(p string, buf []byte) (int, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return unix.Pread(fd, buf, 0)
}

// flipRace runs a host writer flipping p at off between clean and secret
// (same length, in place) while the agent reads it through the mount with
// O_DIRECT, and reports how many reads served leaked (a substring of the
// secret that must never be shown).
func flipRace(t *testing.T, p, mp, clean, secret, leaked string, off int64) {
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		flips := 0
		for {
			select {
			case <-stop:
				done <- flips
				return
			default:
			}
			w.WriteAt([]byte(secret), off)
			w.WriteAt([]byte(clean), off)
			flips++
		}
	}()
	buf := directBuf(1 << 16)
	reads, refused, leaks := 0, 0, 0
	for tries := 0; tries < 40000 && reads < 20000 && leaks == 0; tries++ {
		n, err := readDirect(mp, buf)
		if err != nil {
			refused++ // a refusal (a key, or changed while checked) is no leak
			continue
		}
		reads++
		if strings.Contains(string(buf[:n]), leaked) {
			leaks++
		}
	}
	close(stop)
	flips := <-done
	t.Logf("%d reads served, %d refused, %d host flips", reads, refused, flips)
	if leaks > 0 {
		t.Errorf("after %d reads through the mount (%d host flips), one served the secret unmasked", reads, flips)
	}
}

// TestAttackHostFlipRacesMountRead is a host writer flipping a file, in
// place and at the same size, between a clean line and one holding a
// credential, while the agent reads it through the mount (O_DIRECT, so
// every read reaches the daemon). Each read must show the clean line or
// the masked one, never the secret: a version admitted clean must not be
// served once its bytes hold a credential.
func TestAttackHostFlipRacesMountRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pat := githubSample(t)
	clean := strings.Repeat("x", len(pat.Secret))
	head := "line one\nTOKEN=ghp_"
	p := filepath.Join(f.root, "race.txt")
	writeFile(t, p, head+clean+"\nend\n", 0o644)
	startMount(t, f.mp, "--policy", f.policy)
	flipRace(t, p, filepath.Join(f.mp, "race.txt"), clean, pat.Secret, pat.Secret, int64(len(head)))
}

// TestAttackHostFlipKeyRacesMountRead is the same race with a private key,
// which is refused rather than masked: a read must show the clean text or
// fail, never the key's material.
func TestAttackHostFlipKeyRacesMountRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clean := strings.Repeat("clean text, nothing to see\n", len(testKey)/27+1)[:len(testKey)]
	head := "line one\n"
	p := filepath.Join(f.root, "race-key.txt")
	writeFile(t, p, head+clean+"end\n", 0o644)
	startMount(t, f.mp, "--policy", f.policy)
	flipRace(t, p, filepath.Join(f.mp, "race-key.txt"), clean, testKey, keyMaterial, int64(len(head)))
}

// sharedMapping maps p (on the host) read-write and shared, and dirties
// its first page, so the one ctime move a write through the mapping makes
// has happened: later stores into the page move nothing.
func sharedMapping(t *testing.T, p string) []byte {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	// The write fault (a copy the compiler cannot drop): the page is
	// dirty, and ctime moved.
	copy(m[:1], []byte{m[0]})
	return m
}

// ctimeOf is p's ctime, for the test to tell whether a store moved it.
func ctimeOf(t *testing.T, p string) unix.Timespec {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ctim
}

// dropMountCache drops the mount's page cache of p, so the next read
// without O_DIRECT reaches the daemon.
func dropMountCache(t *testing.T, p string) {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return // refused: nothing cached to read either
	}
	defer unix.Close(fd)
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// TestAttackSharedMappingHidesFromCheck is a host process storing a secret
// through a shared mapping whose page it dirtied before the agent read the
// file: the store moves no ctime, so the version the agent's read admitted
// clean looks unchanged. The next read through the mount (O_DIRECT, and a
// plain read once the mount's cache is dropped) must not serve the secret
// raw: a key refused, a credential masked.
func TestAttackSharedMappingHidesFromCheck(t *testing.T) {
	t.Parallel()
	pat := githubSample(t)
	for _, c := range []struct {
		name, secret, leaked string
	}{
		{"key", testKey, keyMaterial},
		{"token", "TOKEN=" + pat.Value + "\n", pat.Secret},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			name := "mapped-" + c.name + ".txt"
			p := filepath.Join(f.root, name)
			clean := strings.Repeat("an ordinary line of text\n", 200)
			writeFile(t, p, clean, 0o644)
			startMount(t, f.mp, "--policy", f.policy)
			mp := filepath.Join(f.mp, name)
			m := sharedMapping(t, p)
			buf := directBuf(len(clean) + 4096)
			n, err := readDirect(mp, buf)
			if err != nil || string(buf[:n]) != clean {
				t.Fatalf("the clean file through the mount: %d bytes, %v", n, err)
			}
			before := ctimeOf(t, p)
			copy(m[100:], c.secret)
			if after := ctimeOf(t, p); after != before {
				t.Logf("the store moved ctime (%v -> %v): the page was written back meanwhile", before, after)
			}
			if n, err := readDirect(mp, buf); err == nil && strings.Contains(string(buf[:n]), c.leaked) {
				t.Errorf("O_DIRECT read after a store through a shared mapping served the secret raw")
			}
			dropMountCache(t, mp)
			if b, err := os.ReadFile(mp); err == nil && strings.Contains(string(b), c.leaked) {
				t.Errorf("a fresh read after the mount's cache was dropped served the secret raw")
			}
		})
	}
}

// TestAttackDaemonOpenServesChanged is daemon open mode: the agent opens a
// file while it is clean, a host writer then puts a key into it in place,
// and the agent reads on through the descriptor it holds. A large file
// (passthrough size) changed by a write, and a small one changed through a
// shared mapping (no ctime move), must both stop serving the key.
func TestAttackDaemonOpenServesChanged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	writePolicy(t, f.policy, []string{f.root}, "[mount]\nopen = \"daemon\"\n")
	large := strings.Repeat("an ordinary line of text\n", 10000)
	small := strings.Repeat("an ordinary line of text\n", 200)
	writeFile(t, filepath.Join(f.root, "large.txt"), large, 0o644)
	writeFile(t, filepath.Join(f.root, "small.txt"), small, 0o644)
	startMount(t, f.mp, "--policy", f.policy)
	// Dirtied before the open: the store after it moves no ctime.
	mapped := sharedMapping(t, filepath.Join(f.root, "small.txt"))
	for _, c := range []struct {
		name, content string
		store         func(p string)
	}{
		{"large.txt", large, func(p string) {
			w, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if _, err := w.WriteAt([]byte(testKey), 100); err != nil {
				t.Fatal(err)
			}
		}},
		{"small.txt", small, func(string) { copy(mapped[100:], testKey) }},
	} {
		fd, err := unix.Open(filepath.Join(f.mp, c.name), unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		buf := directBuf(len(c.content) + 4096)
		if n, err := unix.Pread(fd, buf, 0); err != nil || string(buf[:n]) != c.content {
			t.Fatalf("%s, clean, through the mount: %d bytes, %v", c.name, n, err)
		}
		c.store(filepath.Join(f.root, c.name))
		if n, err := unix.Pread(fd, buf, 0); err == nil && strings.Contains(string(buf[:n]), keyMaterial) {
			t.Errorf("%s: the descriptor opened clean served the key written after", c.name)
		}
		unix.Close(fd)
	}
}
