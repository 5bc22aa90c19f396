package tests

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttackZlibPackedKey: a key compressed as bare zlib (Python's
// zlib.compress, at its fastest and its best; behind noise; a .env in a
// tar in zlib; a zlib'd key as a zip member) is served by neither the
// mount nor fsguard read, as a gzip'd one is not. A zlib'd plain text is
// served byte for byte, and so is a git object (zlib too), whose history
// the history scan reports.
func TestAttackZlibPackedKey(t *testing.T) {
	t.Parallel()
	python := requireTool(t, "python3")
	requireTool(t, "zip")
	requireTool(t, "tar")
	requireTool(t, "git")
	f := newFixture(t)
	dir := filepath.Join(f.root, "z")
	pub := filepath.Join(f.root, "pub")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(pub, 0o755)
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)})
	pk := filepath.Join(f.base, "pack")
	os.MkdirAll(filepath.Join(pk, "proj"), 0o755)
	writeFile(t, filepath.Join(pk, "deploy.txt"), string(rsaPEM), 0o600)
	writeFile(t, filepath.Join(pk, "notes.txt"), strings.Repeat("just notes\n", 100), 0o600)
	writeFile(t, filepath.Join(pk, "proj", ".env"), "DB_PASSWORD="+canary+"\n", 0o600)
	py := func(in, out, expr string) {
		shell(t, pk, python+" -c 'import sys, zlib, os; d = open(sys.argv[1], \"rb\").read(); open(sys.argv[2], \"wb\").write("+expr+")' "+in+" "+out)
	}
	py("deploy.txt", filepath.Join(dir, "deploy.z"), "zlib.compress(d, 9)")
	py("deploy.txt", filepath.Join(dir, "fast.bin"), "zlib.compress(d, 1)")
	py("deploy.txt", filepath.Join(dir, "noisy.dat"), "zlib.compress(os.urandom(200000) + d)")
	shell(t, pk, "tar cf env.tar proj")
	py("env.tar", filepath.Join(dir, "env.tar.z"), "zlib.compress(d)")
	py("deploy.txt", "key.z", "zlib.compress(d)")
	shell(t, pk, "zip -q "+filepath.Join(dir, "member.zip")+" key.z")
	py("notes.txt", filepath.Join(pub, "notes.z"), "zlib.compress(d)")
	repo := filepath.Join(f.root, "repo")
	os.MkdirAll(repo, 0o755)
	shell(t, repo, "git init -q . && cp "+filepath.Join(pk, "deploy.txt")+" k.txt && git hash-object -w k.txt > ../pub/object-id && rm k.txt")
	oid, _ := os.ReadFile(filepath.Join(pub, "object-id"))
	object := filepath.Join("repo", ".git", "objects", string(oid[:2]), strings.TrimSpace(string(oid[2:])))

	startMount(t, f.mp, "--policy", f.policy)
	env := []string{"FSGUARD_POLICY=" + f.policy}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 5 {
		t.Fatalf("%d files made, want 5", len(ents))
	}
	for _, e := range ents {
		name := "z/" + e.Name()
		if got, err := os.ReadFile(filepath.Join(f.mp, name)); err == nil || len(got) > 0 {
			t.Errorf("the mount served %s (%d bytes, %v)", name, len(got), err)
		}
		out, errs, code, _ := runBinary(t, f.root, env, "", "read", name, "--format", "json")
		if code != 1 || !strings.Contains(out, `"code":"DENIED"`) && !strings.Contains(out, `"code":"FS_ARCHIVE_UNCHECKED"`) {
			t.Errorf("fsguard read %s: exit %d, want DENIED or FS_ARCHIVE_UNCHECKED:\n%.300s%s", name, code, out, errs)
		}
	}
	for _, name := range []string{"pub/notes.z", object} {
		want, _ := os.ReadFile(filepath.Join(f.root, name))
		if got, err := os.ReadFile(filepath.Join(f.mp, name)); err != nil || string(got) != string(want) {
			t.Errorf("the mount did not serve %s as it is (%v)", name, err)
		}
	}
}
