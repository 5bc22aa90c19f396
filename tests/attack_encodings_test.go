package tests

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// shell runs a command line in dir (the tools a developer packs and
// encodes keys with: xxd, gzip, tar, zip, openssl).
func shell(t *testing.T, dir, line string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
}

// TestAttackKeysReencodedOrPacked: private keys re-encoded (hex as xxd -p
// writes it, URL-encoded PEM, DER of each structure, JWKs with their
// private part) and packed (gzip'd under a key's name and an innocent
// one; a .env and a key inside .tgz, .tar and .zip; an encrypted zip that
// cannot be checked) are served by neither the mount (cat, ls) nor fsguard
// read, which refuses each as DENIED or FS_ARCHIVE_UNCHECKED. Public
// material in the same encodings (a certificate, a public JWK, a clean
// archive) is still served, byte for byte.
func TestAttackKeysReencodedOrPacked(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"xxd", "gzip", "tar", "zip"} {
		requireTool(t, tool)
	}
	f := newFixture(t)
	dir := filepath.Join(f.root, "k")
	os.MkdirAll(dir, 0o755)
	w := func(name string, b []byte) { writeFile(t, filepath.Join(dir, name), string(b), 0o644) }

	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edk, _ := ed25519.GenerateKey(rand.Reader)
	pkcs1 := x509.MarshalPKCS1PrivateKey(rk)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(rk)
	sec1, _ := x509.MarshalECPrivateKey(ek)
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: pkcs1})
	w("rsa.key.txt", rsaPEM) // the source the tools encode; refused as it is
	w("pkcs1.bin", pkcs1)
	w("pkcs8.dat", pkcs8)
	w("ec.out", sec1)
	if _, err := exec.LookPath("openssl"); err == nil {
		shell(t, dir, "openssl genpkey -algorithm ED25519 -outform DER -out ed.raw && openssl rsa -in rsa.key.txt -traditional -outform DER -out ossl-pkcs1.raw 2>/dev/null")
	}
	shell(t, dir, "xxd -p rsa.key.txt > pem.hex && xxd -p pkcs1.bin > der.hex")
	w("url.txt", []byte("key="+url.QueryEscape(string(rsaPEM))+"\n"))
	w("url-path.txt", []byte("-----BEGIN%20RSA%20PRIVATE%20KEY-----%0A"+strings.ReplaceAll(strings.Join(strings.Split(string(rsaPEM), "\n")[1:], "%0A"), "+", "%2B")+"\n"))
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	jwk := func(name string, m map[string]string) {
		b, _ := json.MarshalIndent(m, "", "  ")
		w(name, b)
	}
	jwk("rsa.jwk", map[string]string{"kty": "RSA", "n": b64(rk.N.Bytes()), "e": "AQAB", "d": b64(rk.D.Bytes()), "p": b64(rk.Primes[0].Bytes()), "q": b64(rk.Primes[1].Bytes())})
	d := make([]byte, 32)
	ek.D.FillBytes(d)
	jwk("ec.json", map[string]string{"kty": "EC", "crv": "P-256", "x": b64(ek.X.Bytes()), "y": b64(ek.Y.Bytes()), "d": b64(d)})
	jwk("okp.json", map[string]string{"kty": "OKP", "crv": "Ed25519", "x": b64(edk.Public().(ed25519.PublicKey)), "d": b64(edk.Seed())})

	// Packed, with the tools: gzip'd keys, archives holding a .env or a key.
	pk := filepath.Join(f.base, "pack")
	os.MkdirAll(filepath.Join(pk, "proj", "conf"), 0o755)
	writeFile(t, filepath.Join(pk, "proj", "README.md"), "# proj\n", 0o644)
	writeFile(t, filepath.Join(pk, "proj", ".env"), "DB_PASSWORD="+canary+"\n", 0o644)
	writeFile(t, filepath.Join(pk, "keyonly", "conf", "server.txt"), string(rsaPEM), 0o644)
	writeFile(t, filepath.Join(pk, "clean", "README.md"), "# clean\n", 0o644)
	shell(t, pk, "cp "+filepath.Join(dir, "rsa.key.txt")+" id.pem && gzip -c id.pem > "+filepath.Join(dir, "id.pem.gz"))
	shell(t, pk, "gzip -c < "+filepath.Join(dir, "rsa.key.txt")+" > "+filepath.Join(dir, "notes.gz"))
	shell(t, pk, "tar czf "+filepath.Join(dir, "env.tgz")+" proj && tar cf "+filepath.Join(dir, "env.tar")+" proj && zip -qr "+filepath.Join(dir, "env.zip")+" proj")
	shell(t, pk, "tar czf "+filepath.Join(dir, "key.tgz")+" keyonly && tar cf "+filepath.Join(dir, "key.tar")+" keyonly && zip -qr "+filepath.Join(dir, "key.zip")+" keyonly")
	shell(t, pk, "zip -qr -P secret "+filepath.Join(dir, "locked.zip")+" clean")

	// Served: public material, a clean archive.
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	cert, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &rk.PublicKey, rk)
	pub := filepath.Join(f.root, "pub")
	os.MkdirAll(pub, 0o755)
	writeFile(t, filepath.Join(pub, "cert.der"), string(cert), 0o644)
	writeFile(t, filepath.Join(pub, "cert.hex"), hex.EncodeToString(cert)+"\n", 0o644)
	pubJWK, _ := json.Marshal(map[string]string{"kty": "RSA", "n": b64(rk.N.Bytes()), "e": "AQAB"})
	writeFile(t, filepath.Join(pub, "public.jwk"), string(pubJWK), 0o644)
	shell(t, pk, "tar czf "+filepath.Join(pub, "clean.tgz")+" clean && zip -qr "+filepath.Join(pub, "clean.zip")+" clean")

	ents, _ := os.ReadDir(dir)
	var refused []string
	for _, e := range ents {
		refused = append(refused, e.Name())
	}
	sort.Strings(refused)
	served, _ := os.ReadDir(pub)

	startMount(t, f.mp, "--policy", f.policy)
	env := []string{"FSGUARD_POLICY=" + f.policy}
	defer func() {
		// Listed by name until their content is decided (here by the
		// reads): from then on, gone from the listing.
		ls := mustRun(t, "ls", "-a", filepath.Join(f.mp, "k"))
		for _, name := range refused {
			if strings.Contains(ls, name) {
				t.Errorf("ls through the mount lists k/%s after its read was refused", name)
			}
		}
	}()
	for _, name := range refused {
		want, _ := os.ReadFile(filepath.Join(dir, name))
		if got, err := os.ReadFile(filepath.Join(f.mp, "k", name)); err == nil || len(got) > 0 {
			t.Errorf("the mount served k/%s (%d of %d bytes, %v)", name, len(got), len(want), err)
		}
		out, errs, code, _ := runBinary(t, f.root, env, "", "read", "k/"+name, "--format", "json")
		if code != 1 || !strings.Contains(out, `"code":"DENIED"`) && !strings.Contains(out, `"code":"FS_ARCHIVE_UNCHECKED"`) {
			t.Errorf("fsguard read k/%s: exit %d, want DENIED or FS_ARCHIVE_UNCHECKED:\n%.300s%s", name, code, out, errs)
		}
		if strings.Contains(out+errs, canary) {
			t.Errorf("fsguard read k/%s showed the .env's secret", name)
		}
	}
	for _, e := range served {
		want, _ := os.ReadFile(filepath.Join(pub, e.Name()))
		if got, err := os.ReadFile(filepath.Join(f.mp, "pub", e.Name())); err != nil || string(got) != string(want) {
			t.Errorf("the mount did not serve pub/%s as it is (%v)", e.Name(), err)
		}
	}
	// The refusals say what is inside, and where.
	for name, words := range map[string][]string{
		"env.tgz":    {`"proj/.env"`, `"**/.env"`},
		"key.zip":    {`"keyonly/conf/server.txt"`, "private key"},
		"locked.zip": {"FS_ARCHIVE_UNCHECKED", "encrypted"},
	} {
		out, errs, _, _ := runBinary(t, f.root, env, "", "read", "k/"+name, "--format", "json")
		for _, w := range words {
			if !strings.Contains(out+errs, strings.Trim(w, `"`)) {
				t.Errorf("fsguard read k/%s does not say %s:\n%.400s%s", name, w, out, errs)
			}
		}
	}
}
