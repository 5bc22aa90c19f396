package tests

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/concept/charset"
	"github.com/fsguard/fsguard/internal/testenv"
)

// realKeys makes one private key of each kind with the tools that make
// them (ssh-keygen, openssl where present; crypto/x509 otherwise). PGP,
// SSH2 and PuTTY keys are random bytes in their real layout. Each value's
// "material" is a line of key material: served bytes must never hold it.
func realKeys(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	keys := map[string]string{}
	if _, err := exec.LookPath("ssh-keygen"); err == nil {
		p := filepath.Join(dir, "id_ed25519")
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", p).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
		b, _ := os.ReadFile(p)
		keys["openssh"] = string(b)
	}
	if _, err := exec.LookPath("openssl"); err == nil {
		if out, err := exec.Command("openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256").Output(); err == nil {
			keys["pkcs8 (openssl)"] = string(out)
		}
	}
	rk, _ := rsa.GenerateKey(rand.Reader, 1024)
	keys["rsa"] = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)}))
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(ek)
	keys["ec"] = string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	body := func(n int) string {
		b := make([]byte, n)
		rand.Read(b)
		s := base64.StdEncoding.EncodeToString(b)
		var out strings.Builder
		for len(s) > 64 {
			out.WriteString(s[:64] + "\n")
			s = s[64:]
		}
		return out.String() + s + "\n"
	}
	keys["pgp"] = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + body(500) + "-----END PGP PRIVATE KEY BLOCK-----\n"
	keys["ssh2"] = "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key\"\n" + body(500) + "---- END SSH2 ENCRYPTED PRIVATE KEY ----\n"
	keys["putty"] = "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: k\nPublic-Lines: 2\n" + body(51) + "Private-Lines: 1\n" + body(48) + "Private-MAC: ab\n"
	return keys
}

// material is the first long base64 line of a key: its secret part.
func material(key string) string {
	for _, l := range strings.Split(key, "\n") {
		if len(l) >= 40 && !strings.ContainsAny(l, " :-") {
			return l
		}
	}
	panic("no material in " + key)
}

var keyPlacements = map[string]func(string) string{
	"plain":    func(k string) string { return k },
	"bom":      func(k string) string { return "\ufeff" + k },
	"indented": func(k string) string { return strings.ReplaceAll("  "+k, "\n", "\n  ") },
	"yaml":     func(k string) string { return "key: |\n" + strings.ReplaceAll("  "+k, "\n", "\n  ") },
	"json": func(k string) string {
		b, _ := json.Marshal(map[string]string{"type": "service_account", "private_key": k})
		return string(b)
	},
	"quoted": func(k string) string { return "k=\"" + k + "\"\n" },
	"crlf":   func(k string) string { return strings.ReplaceAll(k, "\n", "\r\n") },
	"late":   func(k string) string { return strings.Repeat("harmless filler line\n", 500) + k },
	// fsguard read shows UTF-16 and UTF-32 with a BOM as text.
	"utf-16be": func(k string) string { return wide(k, charset.UTF16BE) },
	"utf-32":   func(k string) string { return wide(k, charset.UTF32LE) },
}

// wide encodes s with its BOM.
func wide(s string, e charset.Encoding) string {
	b, err := charset.Encode([]byte(s), e)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// materialAs is a key's material as a placement writes it: encoded too,
// for the wide ones (without the BOM), so a served copy is recognised.
func materialAs(where, m string) string {
	switch where {
	case "utf-16be":
		return wide(m, charset.UTF16BE)[2:]
	case "utf-32":
		return wide(m, charset.UTF32LE)[4:]
	}
	return m
}

// prose mentions key headers and must stay readable everywhere.
var prose = map[string]string{
	"doc.md":     "A PEM key starts with `-----BEGIN RSA PRIVATE KEY-----` and the END line.\n\n```\n-----BEGIN OPENSSH PRIVATE KEY-----\n<your key here>\n-----END OPENSSH PRIVATE KEY-----\n```\n",
	"parse.go":   "package k\n\nconst header = \"-----BEGIN PRIVATE KEY-----\"\n",
	"excerpt.md": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA...\n-----END RSA PRIVATE KEY-----\n",
}

// TestSecretsMatrix: every key kind in every placement, through every door
// (cat, dd skip=, grep -r and ls through the mount; fsguard read directly,
// over the socket, and over MCP): no key material is ever served, prose
// about keys stays readable, and the read tool and the mount agree on
// every file.
func TestSecretsMatrix(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	keys := realKeys(t)
	var files []string
	materials := map[string]string{}
	for kind, key := range keys {
		for where, place := range keyPlacements {
			name := strings.ReplaceAll(fmt.Sprintf("m/%s-%s.txt", kind, where), " ", "_")
			writeFile(t, filepath.Join(f.root, name), place(key), 0o644)
			files = append(files, name)
			materials[name] = materialAs(where, material(key))
		}
	}
	for name, text := range prose {
		writeFile(t, filepath.Join(f.root, "m", name), text, 0o644)
	}
	sort.Strings(files)
	sock := filepath.Join(f.base, "ctl.sock")
	startMount(t, f.mp, "--policy", f.policy, "--socket", sock)

	leaked := func(out string) string {
		for _, m := range materials {
			if strings.Contains(out, m) {
				return m
			}
		}
		return ""
	}
	ls := mustRun(t, "ls", "-a", filepath.Join(f.mp, "m"))
	for name := range prose {
		if !strings.Contains(ls, name) {
			t.Errorf("ls lacks the prose file %s:\n%s", name, ls)
		}
	}
	// A file is listed by name until its content is decided: the first
	// walker to read a key listed so meets it as a file that vanished
	// (grep exits 2), and no byte of it. From then on walkers finish as
	// they do natively: nothing listed that cannot be read (grep exits 2
	// on an unreadable file, tar fails).
	if out, _ := run(t, 60*time.Second, "grep", "-r", "-c", "", f.mp); leaked(out) != "" {
		t.Errorf("grep -r served key material")
	}
	if out, err := run(t, 60*time.Second, "grep", "-r", "-c", "", f.mp); leaked(out) != "" || err != nil {
		t.Errorf("grep -r again: %v (served key material: %v)", err, leaked(out) != "")
	}
	ls = mustRun(t, "ls", "-a", filepath.Join(f.mp, "m"))
	for _, name := range files {
		if strings.Contains(ls, filepath.Base(name)) {
			t.Errorf("ls lists %s after a walker read it", name)
		}
	}
	if out, err := run(t, 60*time.Second, "tar", "-cf", "/dev/null", "-C", f.mp, "m"); err != nil {
		t.Errorf("tar over the mount failed (a listed file it could not read?): %v %s", err, out)
	}
	for _, name := range files {
		p := filepath.Join(f.mp, name)
		if out, _ := run(t, 10*time.Second, "cat", p); leaked(out) != "" {
			t.Errorf("cat %s served key material", name)
		}
		if out, _ := run(t, 10*time.Second, "dd", "if="+p, "bs=64", "skip=8", "status=none"); leaked(out) != "" {
			t.Errorf("dd skip= %s served key material", name)
		}
		for door, env := range map[string][]string{"direct": {"FSGUARD_POLICY=" + f.policy}, "socket": {"FSGUARD_SOCKET=" + sock}} {
			dir := f.root
			if door == "socket" {
				dir = f.mp
			}
			out, errs, code, _ := runBinary(t, dir, env, "", "read", name, "--format", "json")
			if leaked(out+errs) != "" || code != 1 || !strings.Contains(out, `"code":"DENIED"`) {
				t.Errorf("fsguard read %s (%s): exit %d, want DENIED and no material:\n%.300s%s", name, door, code, out, errs)
			}
		}
	}
	// fsguard read of the directory lists exactly what ls through the
	// mount does, directly and over the socket.
	var names []string
	for _, n := range strings.Fields(ls) {
		if n != "." && n != ".." {
			names = append(names, n)
		}
	}
	for door, env := range map[string][]string{"direct": {"FSGUARD_POLICY=" + f.policy}, "socket": {"FSGUARD_SOCKET=" + sock}} {
		dir := f.root
		if door == "socket" {
			dir = f.mp
		}
		out, errs, code, _ := runBinary(t, dir, env, "", "read", "m", "--format", "json")
		var got struct {
			Directory struct {
				Entries []struct{ Name string }
				Total   int
			}
		}
		json.Unmarshal([]byte(out), &got)
		var listed []string
		for _, e := range got.Directory.Entries {
			listed = append(listed, e.Name)
		}
		if code != 0 || strings.Join(listed, " ") != strings.Join(names, " ") || got.Directory.Total != len(names) {
			t.Errorf("fsguard read m (%s): exit %d, lists %v (total %d), ls through the mount %v\n%s", door, code, listed, got.Directory.Total, names, errs)
		}
	}
	// A directory's link count does not count hidden subdirectories.
	if n := mustRun(t, "stat", "-c", "%h", filepath.Join(f.mp, "home")); strings.TrimSpace(n) != "1" {
		t.Errorf("home (holding a hidden .ssh) has link count %s, want 1", n)
	}
	for name, text := range prose {
		rel := filepath.Join("m", name)
		if got := mustRun(t, "cat", filepath.Join(f.mp, rel)); got != text {
			t.Errorf("cat %s: %q", rel, got)
		}
		if out, errs, code, _ := runBinary(t, f.root, []string{"FSGUARD_POLICY=" + f.policy}, "", "read", rel); code != 0 {
			t.Errorf("fsguard read %s: %s%s", rel, out, errs)
		}
	}
	// MCP (direct): the same refusal, as a tool error.
	mcpOut := mcpRead(t, f.root, f.policy, files[0])
	if !strings.Contains(mcpOut, "DENIED: ") || leaked(mcpOut) != "" {
		t.Errorf("MCP read of %s: %s", files[0], mcpOut)
	}
}

// mcpRead reads one file through `fsguard mcp` with raw JSON-RPC lines and
// returns the tool call's answer line.
func mcpRead(t *testing.T, dir, policy, name string) string {
	t.Helper()
	cmd := exec.Command(binary, "mcp", "--policy", policy)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+filepath.Join(t.TempDir(), "j.db"), "FSGUARD_SOCKET=")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "read", "arguments": map[string]any{"path": name}}})
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	sc.Scan() // the initialize answer
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+string(call)+"\n")
	sc.Scan()
	return sc.Text()
}

// TestHiddenByNameFolding: deny rules match names as people read them.
func TestHiddenByNameFolding(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, name := range []string{".ENV", ".env ", ".e\u200bnv", "Secrets.TXT", "se\u0301crets.txt"} {
		writeFile(t, filepath.Join(f.root, "fold", name), canary+"\n", 0o644)
	}
	writePolicy(t, f.policy, []string{f.root}, "[deny]\nglobs = [\"**/secrets.txt\", \"**/sécrets.txt\"]\n")
	startMount(t, f.mp, "--policy", f.policy)
	if ls := mustRun(t, "ls", filepath.Join(f.mp, "fold")); ls != "" {
		t.Errorf("folded deny matches listed: %q", ls)
	}
	if out, _ := run(t, 30*time.Second, "grep", "-r", canary, f.mp); strings.Contains(out, canary) {
		t.Errorf("grep -r served a folded deny match:\n%s", out)
	}
	ents, _ := os.ReadDir(filepath.Join(f.root, "fold"))
	for _, e := range ents {
		out, errs, code, _ := runBinary(t, f.root, []string{"FSGUARD_POLICY=" + f.policy}, "", "read", filepath.Join("fold", e.Name()))
		if code == 0 || strings.Contains(out, canary) {
			t.Errorf("fsguard read %q: exit %d %s%s", e.Name(), code, out, errs)
		}
	}
}

// TestHardLinksThroughEveryDoor: a second name of .env, or of a private
// key outside the roots, shows nothing through the mount or the socket
// (which know every name from the daemon's index), and a direct read
// refuses a multi-link file it cannot vouch for.
func TestHardLinksThroughEveryDoor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	os.WriteFile(filepath.Join(f.outside, "private.txt"), []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"+canary+"\n-----END OPENSSH PRIVATE KEY-----\n"), 0o600)
	for link, target := range map[string]string{"links/env-notes.txt": filepath.Join(f.root, ".env"), "links/outside.txt": filepath.Join(f.outside, "private.txt")} {
		os.MkdirAll(filepath.Join(f.root, "links"), 0o755)
		if err := os.Link(target, filepath.Join(f.root, link)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(f.root, "links", "a.txt"), "shared\n", 0o644)
	os.Link(filepath.Join(f.root, "links", "a.txt"), filepath.Join(f.root, "links", "b.txt"))
	sock := filepath.Join(f.base, "ctl.sock")
	startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	ls := mustRun(t, "ls", filepath.Join(f.mp, "links"))
	if strings.Fields(ls) == nil || strings.Join(strings.Fields(ls), " ") != "a.txt b.txt" {
		t.Errorf("ls links: %q, want a.txt b.txt", ls)
	}
	for _, name := range []string{"links/env-notes.txt", "links/outside.txt"} {
		if out, _ := run(t, 10*time.Second, "cat", filepath.Join(f.mp, name)); strings.Contains(out, canary) {
			t.Errorf("cat %s served the other name's bytes", name)
		}
		out, errs, code, _ := runBinary(t, f.mp, []string{"FSGUARD_SOCKET=" + sock}, "", "read", name)
		if code == 0 || strings.Contains(out, canary) {
			t.Errorf("socket read %s: exit %d %s%s", name, code, out, errs)
		}
		out, errs, code, _ = runBinary(t, f.root, []string{"FSGUARD_POLICY=" + f.policy}, "", "read", name)
		if code == 0 || strings.Contains(out, canary) {
			t.Errorf("direct read %s: exit %d %s%s", name, code, out, errs)
		}
	}
	if got := mustRun(t, "cat", filepath.Join(f.mp, "links", "b.txt")); got != "shared\n" {
		t.Errorf("a link between allowed names: %q", got)
	}
	if out, errs, code, _ := runBinary(t, f.mp, []string{"FSGUARD_SOCKET=" + sock}, "", "read", "links/b.txt"); code != 0 {
		t.Errorf("socket read of an allowed link: %s%s", out, errs)
	}
	if _, errs, code, _ := runBinary(t, f.root, []string{"FSGUARD_POLICY=" + f.policy}, "", "read", "links/b.txt"); code != 1 || !strings.Contains(errs, "hard_links") {
		t.Errorf("direct read of a multi-link file: exit %d %s", code, errs)
	}
}

// TestSymlinkSwapRace swaps a directory and a relative symlink to outside
// with RENAME_EXCHANGE in a tight loop for 10 s while readers loop through
// the mount and through fsguard read: not one outside byte may come back.
func TestSymlinkSwapRace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	writeFile(t, filepath.Join(f.root, "d", "secret.txt"), "inside\n", 0o644)
	writeFile(t, filepath.Join(f.outside, "secret.txt"), canary+"\n", 0o644)
	if err := os.Symlink("../outside", filepath.Join(f.root, "l")); err != nil {
		t.Fatal(err)
	}
	startMount(t, f.mp, "--policy", f.policy)
	deadline := time.Now().Add(10 * time.Second)
	var swaps, reads, leaks atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			if unix.Renameat2(unix.AT_FDCWD, filepath.Join(f.root, "d"), unix.AT_FDCWD, filepath.Join(f.root, "l"), unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}()
	reader := func(read func() []byte) {
		defer wg.Done()
		for time.Now().Before(deadline) {
			if strings.Contains(string(read()), canary) {
				leaks.Add(1)
			}
			reads.Add(1)
		}
	}
	for _, name := range []string{"d/secret.txt", "l/secret.txt"} {
		p := filepath.Join(f.mp, name)
		wg.Add(1)
		go reader(func() []byte { b, _ := os.ReadFile(p); return b })
	}
	wg.Add(1)
	go reader(func() []byte {
		out, _, _, _ := runBinary(t, f.root, []string{"FSGUARD_POLICY=" + f.policy}, "", "read", "d/secret.txt")
		return []byte(out)
	})
	wg.Wait()
	t.Logf("%d swaps, %d reads", swaps.Load(), reads.Load())
	if leaks.Load() > 0 {
		t.Errorf("%d reads returned outside bytes", leaks.Load())
	}
	if swaps.Load() < 100 {
		t.Errorf("only %d swaps: the race did not run", swaps.Load())
	}
}

// TestGitInViewIgnoresHiddenFiles: tracked files the view hides (a .env, a
// key) are not reported deleted by git in the view — the mount serves the
// index with skip-worktree on them — while real changes still show, and a
// tracked file that becomes a key is hidden from git too.
func TestGitInViewIgnoresHiddenFiles(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t)
	repo := filepath.Join(f.root, "repo")
	gitIn := func(dir string, args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_OPTIONAL_LOCKS=0")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	writeFile(t, filepath.Join(repo, "main.go"), "package main\n", 0o644)
	writeFile(t, filepath.Join(repo, "util.go"), "package main\n\nfunc util() {}\n", 0o644)
	writeFile(t, filepath.Join(repo, ".env"), canary+"=1\n", 0o644)
	writeFile(t, filepath.Join(repo, "certs", "server.pem"), realKeys(t)["rsa"], 0o644)
	writeFile(t, filepath.Join(repo, "testdata", "key.txt"), realKeys(t)["ec"], 0o644)
	// Another name of .env's inode: the view hides it as it hides .env.
	if err := os.Link(filepath.Join(repo, ".env"), filepath.Join(repo, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "x"}} {
		if out, err := gitIn(repo, args...); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	startMount(t, f.mp, "--policy", f.policy)
	view := filepath.Join(f.mp, "repo")
	// The size the view states for its index (stated before the index is
	// read: see gitindex.Size) is the size of the bytes it serves; a
	// mismatch would hand git a cut or padded index.
	indexAgrees := func() error {
		st, err := os.Stat(filepath.Join(view, ".git", "index"))
		if err != nil {
			return err
		}
		data, err := os.ReadFile(filepath.Join(view, ".git", "index"))
		if err != nil {
			return err
		}
		if st.Size() != int64(len(data)) {
			return fmt.Errorf("the view's index: stat says %d bytes, read gives %d", st.Size(), len(data))
		}
		// The kernel cuts a read at the stated size, and git does not
		// check the trailing checksum: only the checksum shows a cut.
		if sum := sha1.Sum(data[:max(len(data)-sha1.Size, 0)]); len(data) < sha1.Size || !bytes.Equal(sum[:], data[len(data)-sha1.Size:]) {
			return fmt.Errorf("the view's index (%d bytes) does not end in its checksum: cut or padded", len(data))
		}
		return nil
	}
	if err := indexAgrees(); err != nil {
		t.Fatal(err)
	}
	if out, err := gitIn(view, "status", "--porcelain"); err != nil || out != "" {
		t.Fatalf("git status in the view: %v %q, want nothing", err, out)
	}
	if out, err := gitIn(view, "diff", "--quiet"); err != nil {
		t.Errorf("git diff --quiet in the view: %v %s", err, out)
	}
	ls, _ := gitIn(view, "ls-files", "-v")
	for _, hidden := range []string{".env", "certs/server.pem", "notes.txt", "testdata/key.txt"} {
		if !strings.Contains(ls, "S "+hidden+"\n") {
			t.Errorf("%s is not skip-worktree in the view:\n%s", hidden, ls)
		}
	}
	// The backing repository's own index is untouched.
	if out, _ := gitIn(repo, "ls-files", "-v"); strings.Contains(out, "S ") {
		t.Errorf("the backing index changed:\n%s", out)
	}
	// A real change shows; a tracked file that becomes a key vanishes from
	// git's view too (once the watch reported it).
	writeFile(t, filepath.Join(repo, "main.go"), "package main // changed\n", 0o644)
	writeFile(t, filepath.Join(repo, "util.go"), realKeys(t)["ec"], 0o644)
	testenv.Within(t, 10*time.Second, "git status after the changes", func() error {
		out, _ := gitIn(view, "status", "--porcelain")
		if out != " M main.go\n" {
			return fmt.Errorf("git status: %q, want only main.go modified", out)
		}
		return indexAgrees()
	})

	// git rewrites its index (a change only in .git: the view keeps what it
	// decided of each tracked path), then the key in util.go goes again:
	// the view shows it to git again, changed.
	if out, err := gitIn(repo, "add", "main.go"); err != nil {
		t.Fatalf("git add: %v %s", err, out)
	}
	testenv.Within(t, 10*time.Second, "git status after the index was rewritten", func() error {
		if out, _ := gitIn(view, "status", "--porcelain"); out != "M  main.go\n" {
			return fmt.Errorf("git status: %q, want main.go staged", out)
		}
		return nil
	})

	writeFile(t, filepath.Join(repo, "util.go"), "package main\n\nfunc util() { println() }\n", 0o644)
	testenv.Within(t, 10*time.Second, "git status after the key went", func() error {
		if out, _ := gitIn(view, "status", "--porcelain"); out != "M  main.go\n M util.go\n" {
			return fmt.Errorf("git status: %q, want main.go staged and util.go modified", out)
		}
		return nil
	})

}

// TestHistoryIsReported: a repository whose history holds a .env and a key
// (deleted since) is reported at mount start (log, journal) and by policy
// check; with [git] history = "hide" its .git is not in the view at all.
func TestHistoryIsReported(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t)
	repo := filepath.Join(f.root, "repo")
	leakyHistory(t, repo)

	out, errs, code, _ := runBinary(t, f.base, nil, "", "policy", "check", f.policy)
	if code != 0 || !strings.Contains(errs, "Warning: the git history of "+repo) || !strings.Contains(errs, ".env (denied path") || !strings.Contains(errs, "deploy/notes.txt (private key") {
		t.Errorf("policy check: exit %d\n%s%s", code, out, errs)
	}
	d := startMount(t, f.mp, "--policy", f.policy)
	d.log.waitFor(t, "the git history of "+repo, 1, 30*time.Second)
	js, _, _, _ := runBinary(t, f.base, []string{"FSGUARD_JOURNAL=" + d.journal}, "", "journal", "query", "--kind", "history", "--format", "json")
	if !strings.Contains(js, `"code": "HISTORY_EXPOSES"`) || !strings.Contains(js, "deploy/notes.txt") {
		t.Errorf("no history record in the journal:\n%s", js)
	}
	// The view still has .git (warn), so git works.
	if _, err := os.Stat(filepath.Join(f.mp, "repo", ".git", "HEAD")); err != nil {
		t.Errorf("warn mode hid .git: %v", err)
	}

	// hide: the .git of that repository is not in the view.
	g := newFixture(t)
	os.Rename(repo, filepath.Join(g.root, "repo"))
	writePolicy(t, g.policy, []string{g.root}, "[git]\nhistory = \"hide\"\n")
	startMount(t, g.mp, "--policy", g.policy)
	if ls := mustRun(t, "ls", "-a", filepath.Join(g.mp, "repo")); strings.Contains(ls, ".git") {
		t.Errorf("hide mode lists .git:\n%s", ls)
	}
	if out, err := run(t, 30*time.Second, "git", "-C", filepath.Join(g.mp, "repo"), "show", "HEAD~1:.env"); err == nil || strings.Contains(out, canary) {
		t.Errorf("git show HEAD~1:.env in hide mode: %v %s", err, out)
	}
}

// TestOpenHandleReadmits: in daemon open mode a handle opened on a text
// file stops serving it once the file becomes a key, even to the reader
// that opened it before the change.
func TestOpenHandleReadmits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	freshMount(t, f, "fanotify/daemon")
	p := filepath.Join(f.mp, "src", "main.go")
	h, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	buf := make([]byte, 4096)
	if n, _ := h.ReadAt(buf, 0); !strings.HasPrefix(string(buf[:n]), "package main") {
		t.Fatalf("first read: %q", buf[:n])
	}
	key := realKeys(t)["ec"]
	inPlace(t, filepath.Join(f.root, "src", "main.go"), key)
	testenv.Within(t, 10*time.Second, "the open handle refused", func() error {
		n, err := h.ReadAt(buf, 0)
		if strings.Contains(string(buf[:n]), material(key)) {
			t.Fatalf("the open handle served the key")
		}
		if err == nil || err == io.EOF {
			return fmt.Errorf("read: %d bytes, %v", n, err)
		}
		return nil
	})

}

// leakyHistory makes a git repository at repo whose history holds a .env
// and a private key, both removed by its last commit. It is the agent's,
// not root's: the scan runs git as its owner (root's git would refuse it
// as a "dubious ownership" and must not run a repository's configuration
// with root's rights anyway).
func leakyHistory(t *testing.T, repo string) {
	t.Helper()
	gitIn := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	writeFile(t, filepath.Join(repo, "main.go"), "package main\n", 0o644)
	writeFile(t, filepath.Join(repo, ".env"), canary+"=1\n", 0o644)
	writeFile(t, filepath.Join(repo, "deploy", "notes.txt"), realKeys(t)["rsa"], 0o644)
	gitIn("init", "-q")
	gitIn("add", "-A")
	gitIn("commit", "-qm", "oops")
	gitIn("rm", "-q", ".env", "deploy/notes.txt")
	gitIn("commit", "-qm", "remove the secrets")
	if os.Geteuid() == 0 {
		filepath.Walk(repo, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, agentUID, agentGID) })
	}
}

// TestHistoryScanWaitsForThePause: the mount's history scan is a warning,
// not a gate, and runs in the agent's pauses: while a process keeps using
// the mount it starts no further git; once the process stops, the scan
// finishes and warns. A process whose reads are all served from the
// kernel's caches (the opens audit sees them; the daemon gets no
// request) is using it too.
func TestHistoryScanWaitsForThePause(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		busy func(t *testing.T, f *fixture) (stop func())
	}{
		{"asking", func(t *testing.T, f *fixture) func() { return keepBusy(t, f.mp) }},
		{"from the caches", func(t *testing.T, f *fixture) func() { return keepReading(t, filepath.Join(f.mp, "README.md")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			historyScanWaits(t, c.busy)
		})
	}
}

func historyScanWaits(t *testing.T, busy func(t *testing.T, f *fixture) (stop func())) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	f := newFixture(t)
	repo := filepath.Join(f.root, "repo")
	leakyHistory(t, repo)
	// A git first in the daemon's PATH notes each run's subcommand; the
	// first run waits on a FIFO, so the scan is held inside its first step
	// until the agent below is busy.
	stub, err := os.MkdirTemp("", "fsguard-git-stub")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stub) })
	testenv.Must(t, os.Chmod(stub, 0o777)) // git runs as the repository's owner
	calls, fifo, first := filepath.Join(stub, "calls"), filepath.Join(stub, "fifo"), filepath.Join(stub, "first")
	testenv.Must(t, unix.Mkfifo(fifo, 0o666))
	testenv.Must(t, os.Chmod(fifo, 0o666))
	writeFile(t, filepath.Join(stub, "git"), fmt.Sprintf("#!/bin/sh\necho \"$3\" >> %s\nif mkdir %s 2>/dev/null; then cat %s > /dev/null; fi\nexec %s \"$@\"\n", calls, first, fifo, realGit), 0o755)
	d := startMountEnv(t, f.mp, []string{"PATH=" + stub + ":" + os.Getenv("PATH")}, "--policy", f.policy)
	ran := func() string { b, _ := os.ReadFile(calls); return strings.TrimSpace(string(b)) }
	testenv.Within(t, 30*time.Second, "the scan's first git", func() error {
		if ran() == "" {
			return fmt.Errorf("no git run yet")
		}
		return nil
	})

	idle := busy(t, f)
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close() // the first git goes on
	// While the agent is busy, no next step: a scan that did not wait
	// would start its next git within milliseconds.
	tick := time.NewTicker(5 * time.Millisecond)
	for busy := time.Now(); time.Since(busy) < time.Second; <-tick.C {
		if got := ran(); got != "log" {
			t.Errorf("git ran %q while the agent was using the mount, want only the first log", got)
			break
		}
	}
	tick.Stop()
	idle()
	d.log.waitFor(t, "the git history of "+repo, 1, 60*time.Second)
	if got := ran(); !strings.Contains(got, "rev-list") || !strings.Contains(got, "cat-file") {
		t.Errorf("the scan's git runs: %q", got)
	}
}
