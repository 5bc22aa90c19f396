package tests

// The bytes served are the bytes checked, whatever the verdict in hand
// says of the version: a host writer storing through a shared mapping
// (which moves no ctime, so the version looks unchanged) must not get a
// token or a key past a verdict made on other bytes: one that called the
// file binary, one that looked into it packed, or one whose check of a
// READ cannot see the header of the key the READ is inside. And a token
// is a token in a file the classifier calls binary too.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/rand"
	be "encoding/binary"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/testenv"
)

// longOpenSSHKey is a real ed25519 private key generated now, in the
// OpenSSH format, with a comment of comment bytes: its PEM body is longer
// than any window a READ is checked in.
func longOpenSSHKey(t *testing.T, comment int) string {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	str := func(b *bytes.Buffer, s []byte) {
		be.Write(b, be.BigEndian, uint32(len(s)))
		b.Write(s)
	}
	var pk bytes.Buffer
	str(&pk, []byte("ssh-ed25519"))
	str(&pk, pub)
	var sec bytes.Buffer
	check := make([]byte, 4)
	rand.Read(check)
	sec.Write(check)
	sec.Write(check)
	str(&sec, []byte("ssh-ed25519"))
	str(&sec, pub)
	str(&sec, priv)
	str(&sec, bytes.Repeat([]byte("c"), comment))
	for i := byte(1); sec.Len()%8 != 0; i++ {
		sec.WriteByte(i)
	}
	var b bytes.Buffer
	b.WriteString("openssh-key-v1\x00")
	str(&b, []byte("none"))
	str(&b, []byte("none"))
	str(&b, nil)
	be.Write(&b, be.BigEndian, uint32(1))
	str(&b, pk.Bytes())
	str(&b, sec.Bytes())
	return string(pem.EncodeToMemory(&pem.Block{Type: "OPENSSH PRIVATE KEY", Bytes: b.Bytes()}))
}

// preadDirect reads len(buf) bytes of p at off with O_DIRECT.
func preadDirect(p string, buf []byte, off int64) (int, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return unix.Pread(fd, buf, off)
}

// storeMapped admits the file name of f through the mount (an O_DIRECT
// read, which must serve want), then stores secret at off through a
// shared mapping of it dirtied before that read (no ctime moves), and
// returns what a read of n bytes at from serves afterwards: O_DIRECT, and
// a plain read after the mount's cache is dropped (nil where refused).
func storeMapped(t *testing.T, f *fixture, name, want, secret string, off int, from int64, n int) [][]byte {
	t.Helper()
	p, mp := filepath.Join(f.root, name), filepath.Join(f.mp, name)
	m := sharedMapping(t, p)
	// Every page dirtied before the read: a store into a clean page of a
	// shared mapping moves ctime, one into a dirty page does not.
	for i := 0; i < len(m); i += 4096 {
		copy(m[i:i+1], []byte{m[i]})
	}
	buf := directBuf(len(want) + 4096)
	k, err := readDirect(mp, buf)
	if err != nil || string(buf[:k]) != want {
		t.Fatalf("%s before the store, through the mount: %d bytes, %v", name, k, err)
	}
	copy(m[off:], secret)
	var out [][]byte
	rb := directBuf(n)
	if k, err := preadDirect(mp, rb, from); err == nil {
		out = append(out, append([]byte(nil), rb[:k]...))
	}
	dropMountCache(t, mp)
	if fd, err := unix.Open(mp, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		b := make([]byte, n)
		if k, err := unix.Pread(fd, b, from); err == nil {
			out = append(out, b[:k])
		}
		unix.Close(fd)
	}
	return out
}

// TestAttackTokenStoredOverBinary is a token stored through a shared
// mapping over a file admitted as binary: the verdict "binary" said
// nothing of these bytes, and must not serve them unmasked.
func TestAttackTokenStoredOverBinary(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pat := githubSample(t)
	content := strings.Repeat("\x00\x01\x02binary\xff", 800)
	writeFile(t, filepath.Join(f.root, "blob.bin"), content, 0o644)
	startMount(t, f.mp, "--policy", f.policy)
	for _, got := range storeMapped(t, f, "blob.bin", content, "TOKEN="+pat.Value+"\n", 200, 0, len(content)) {
		if strings.Contains(string(got), pat.Secret) {
			t.Errorf("a token stored over a binary file was served unmasked")
		}
	}
}

// sameSizeGzips returns a gzip'd tar holding a clean file and one holding
// key under the same name, padded (by the gzip header's name) to the same
// length: a shared mapping can turn the one into the other.
func sameSizeGzips(t *testing.T, key string) (clean, keyed []byte) {
	t.Helper()
	pack := func(content, pad string) []byte {
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		tw.WriteHeader(&tar.Header{Name: "notes/id", Mode: 0o644, Size: int64(len(content))})
		tw.Write([]byte(content))
		tw.Close()
		var gb bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gb, gzip.BestCompression)
		zw.Name = "pack" + pad
		zw.Write(tb.Bytes())
		zw.Close()
		return gb.Bytes()
	}
	filler := strings.Repeat("notes about nothing in particular\n", len(key)/34+1)[:len(key)]
	clean, keyed = pack(filler, ""), pack(key, "")
	if d := len(keyed) - len(clean); d > 0 {
		clean = pack(filler, strings.Repeat("x", d))
	} else if d < 0 {
		keyed = pack(key, strings.Repeat("x", -d))
	}
	if len(clean) != len(keyed) {
		t.Fatalf("gzips of %d and %d bytes", len(clean), len(keyed))
	}
	return clean, keyed
}

// TestAttackPackedFlippedToKey is a clean .tgz turned, through a shared
// mapping, into one holding a key: the verdict looked into the clean one,
// and must not serve the other.
func TestAttackPackedFlippedToKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clean, keyed := sameSizeGzips(t, longOpenSSHKey(t, 64))
	writeFile(t, filepath.Join(f.root, "keyed.tgz"), string(keyed), 0o644)
	writeFile(t, filepath.Join(f.root, "pack.tgz"), string(clean), 0o644)
	startMount(t, f.mp, "--policy", f.policy)
	if _, err := readDirect(filepath.Join(f.mp, "keyed.tgz"), directBuf(len(keyed)+4096)); err == nil {
		t.Fatalf("the .tgz holding a key is served through the mount: the test proves nothing")
	}
	for _, got := range storeMapped(t, f, "pack.tgz", string(clean), string(keyed), 0, 0, len(keyed)) {
		if bytes.Equal(got, keyed) {
			t.Errorf("a .tgz flipped to one holding a key was served")
		}
	}
}

// TestAttackReadInsideLongKeyBody is a key whose body is longer than the
// margins a READ is checked with, stored through a shared mapping over a
// file admitted clean: a READ well inside the body does not see the key's
// header, and must not serve the body.
func TestAttackReadInsideLongKeyBody(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	key := longOpenSSHKey(t, 24<<10)
	if len(key) < 32<<10 {
		t.Fatalf("the key is %d bytes: too short to test", len(key))
	}
	content := strings.Repeat("an ordinary line of text\n", len(key)/25+400)
	writeFile(t, filepath.Join(f.root, "notes.txt"), content, 0o644)
	startMount(t, f.mp, "--policy", f.policy)
	const from, n = 24 << 10, 4096
	body := key[from : from+n]
	for _, got := range storeMapped(t, f, "notes.txt", content, key, 0, from, n) {
		if strings.Contains(string(got), body[:64]) {
			t.Errorf("a READ inside a long key's body served it")
		}
	}
}

// TestAttackTokenInBinaryServed is a token in files the classifier calls
// binary: text with a NUL byte, and UTF-16 without a byte order mark. A
// token is a token wherever it is: served masked, at the same length.
func TestAttackTokenInBinaryServed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pat := githubSample(t)
	utf16 := func(s string) string {
		var b strings.Builder
		for _, c := range s {
			b.WriteByte(byte(c))
			b.WriteByte(0)
		}
		return b.String()
	}
	cases := map[string]string{
		"nul.txt":     "header\x00\x01\nTOKEN=" + pat.Value + "\nmore text\n",
		"wide.txt":    utf16("config\r\nTOKEN=" + pat.Value + "\r\n"),
		"wideodd.txt": "\x01" + utf16("config\r\nTOKEN="+pat.Value+"\r\n"),
	}
	for name, content := range cases {
		writeFile(t, filepath.Join(f.root, name), content, 0o644)
	}
	startMount(t, f.mp, "--policy", f.policy)
	for name, content := range cases {
		buf := directBuf(len(content) + 4096)
		n, err := readDirect(filepath.Join(f.mp, name), buf)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got := string(buf[:n])
		if n != len(content) {
			t.Errorf("%s: served %d bytes of %d", name, n, len(content))
		}
		secret := pat.Secret
		if strings.HasPrefix(name, "wide") {
			secret = utf16(pat.Secret)
		}
		if strings.Contains(got, secret) {
			t.Errorf("%s: the token in a file the classifier calls binary was served unmasked", name)
		}
	}
}

// TestAttackReadInsideLongKeyBodyAfterRestart is the same store after a
// restart: the clean verdict a daemon brings back from disk carries no
// block hashes (their key was the other daemon's), and a READ two blocks
// into the key's body, far from its header, must not serve the body. The
// host writer's store through a shared mapping moves no ctime: the
// version stays the one saved.
func TestAttackReadInsideLongKeyBodyAfterRestart(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	f := newFixture(t)
	// On a tmpfs a store through a shared mapping never moves ctime (on
	// ext4 it does whenever the page was written back meanwhile).
	if err := unix.Mount("tmpfs", f.root, "tmpfs", 0, "mode=0755,size=16m"); err != nil {
		t.Fatalf("a tmpfs for the root: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(f.root, unix.MNT_DETACH) })
	key := longOpenSSHKey(t, 96<<10)
	const from, n = 100 << 10, 4096
	if len(key) < from+n+1024 {
		t.Fatalf("the key is %d bytes: too short to test", len(key))
	}
	content := strings.Repeat("an ordinary line of text\n", len(key)/25+400)
	p, mp := filepath.Join(f.root, "notes.txt"), filepath.Join(f.mp, "notes.txt")
	writeFile(t, p, content, 0o644)
	m := sharedMapping(t, p)
	for i := 0; i < len(m); i += 4096 { // every page's first store moves ctime, later ones do not
		copy(m[i:i+1], []byte{m[i]})
	}
	aged(t, f.root) // a verdict is saved only for a version read well after its last change
	before := ctimeOf(t, p)
	d := startMount(t, f.mp, "--policy", f.policy)
	if b, err := os.ReadFile(mp); err != nil || string(b) != content {
		t.Fatalf("notes.txt through the first mount: %d bytes, %v", len(b), err)
	}
	d.stop()
	d = startMount(t, f.mp, "--policy", f.policy)
	if !strings.Contains(d.log.String(), "saved verdicts loaded") {
		t.Fatalf("the restarted daemon brought back no verdicts: the test proves nothing\n%s", d.log.String())
	}
	copy(m, key)
	if ctimeOf(t, p) != before {
		t.Fatalf("the store moved ctime: the test proves nothing")
	}
	body := key[from : from+n]
	rb := directBuf(n)
	if k, err := preadDirect(mp, rb, from); err == nil && strings.Contains(string(rb[:k]), body[:64]) {
		t.Errorf("an O_DIRECT READ inside a long key's body served it after a restart")
	}
	dropMountCache(t, mp)
	if fd, err := unix.Open(mp, unix.O_RDONLY, 0); err == nil {
		b := make([]byte, n)
		if k, err := unix.Pread(fd, b, from); err == nil && strings.Contains(string(b[:k]), body[:64]) {
			t.Errorf("a READ inside a long key's body served it after a restart")
		}
		unix.Close(fd)
	}
}

// TestAttackKeyHeaderBeforeCleanBody is a key's body already in a file
// admitted clean (base64 lines with no header are no key), and its header
// stored later through a shared mapping (no ctime moves), blocks before a
// READ deep in the body: the READ's own blocks are the bytes admitted,
// and must still not serve the body, now a key's.
func TestAttackKeyHeaderBeforeCleanBody(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	f := newFixture(t)
	// On a tmpfs a store through a shared mapping never moves ctime once
	// its page was stored to.
	if err := unix.Mount("tmpfs", f.root, "tmpfs", 0, "mode=0755,size=16m"); err != nil {
		t.Fatalf("a tmpfs for the root: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(f.root, unix.MNT_DETACH) })
	key := longOpenSSHKey(t, 96<<10)
	const hdr = "-----BEGIN OPENSSH PRIVATE KEY-----\n"
	if !strings.HasPrefix(key, hdr) {
		t.Fatalf("the key does not start with %q", hdr)
	}
	const at = 8 << 10 // where the body starts
	text := strings.Repeat("an ordinary line of text; nothing more.\n", at/40+1)[:at-1] + "\n"
	content := text + key[len(hdr):] + text
	const from, n = 112 << 10, 4096
	if at+len(key)-len(hdr) < from+n+1024 {
		t.Fatalf("the key is %d bytes: too short to test", len(key))
	}
	p, mp := filepath.Join(f.root, "notes.txt"), filepath.Join(f.mp, "notes.txt")
	writeFile(t, p, content, 0o644)
	m := sharedMapping(t, p)
	for i := 0; i < len(m); i += 4096 { // every page's first store moves ctime, later ones do not
		copy(m[i:i+1], []byte{m[i]})
	}
	startMount(t, f.mp, "--policy", f.policy)
	if b, err := os.ReadFile(mp); err != nil || string(b) != content {
		t.Fatalf("the body without a header, through the mount: %d bytes, %v", len(b), err)
	}
	before := ctimeOf(t, p)
	copy(m[at-len(hdr):], hdr)
	if ctimeOf(t, p) != before {
		t.Fatalf("the store moved ctime: the test proves nothing")
	}
	body := content[from : from+n]
	rb := directBuf(n)
	if k, err := preadDirect(mp, rb, from); err == nil && strings.Contains(string(rb[:k]), body[:64]) {
		t.Errorf("an O_DIRECT READ inside the body, its key's header stored blocks before, served it")
	}
	dropMountCache(t, mp)
	if fd, err := unix.Open(mp, unix.O_RDONLY, 0); err == nil {
		b := make([]byte, n)
		if k, err := unix.Pread(fd, b, from); err == nil && strings.Contains(string(b[:k]), body[:64]) {
			t.Errorf("a READ inside the body, its key's header stored blocks before, served it")
		}
		unix.Close(fd)
	}
}
