package tests

import (
	"archive/zip"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	bin "encoding/binary"
	"encoding/pem"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zipDropping is a zip of ms (stored) whose central directory no longer
// lists the member named hide: its local record stays where it was, between
// the others, for a streaming extractor (unzip -, ZipInputStream, bsdtar
// from a pipe) to find; Go's, Python's and unzip's directory readers do not.
func zipDropping(t *testing.T, hide string, ms ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, m := range ms {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m[0], Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(m[1]))
	}
	zw.Close()
	z := b.Bytes()
	end := bytes.LastIndex(z, []byte("PK\x05\x06"))
	dirOff := int(bin.LittleEndian.Uint32(z[end+16:]))
	var dir []byte
	n := 0
	for p := dirOff; p < end; {
		nl := int(bin.LittleEndian.Uint16(z[p+28:]))
		l := 46 + nl + int(bin.LittleEndian.Uint16(z[p+30:])) + int(bin.LittleEndian.Uint16(z[p+32:]))
		if string(z[p+46:p+46+nl]) != hide {
			dir = append(dir, z[p:p+l]...)
			n++
		}
		p += l
	}
	e := append([]byte{}, z[end:]...)
	bin.LittleEndian.PutUint16(e[8:], uint16(n))
	bin.LittleEndian.PutUint16(e[10:], uint16(n))
	bin.LittleEndian.PutUint32(e[12:], uint32(len(dir)))
	return append(append(append([]byte{}, z[:dirOff]...), dir...), e...)
}

// TestAttackZipTwoReadings: zips that a streaming extractor reads
// otherwise than a directory reader — a member between two
// listed ones but not itself listed (a .env) — and zips behind a prefix — a key or
// a .env in a self-extractor (`cat stub x.zip`, and fixed by `zip -A`), in
// a zip appended to a PNG — are served by neither the mount nor fsguard
// read (DENIED or FS_ARCHIVE_UNCHECKED, saying why); the same prefixes in
// front of a clean zip are served byte for byte.
func TestAttackZipTwoReadings(t *testing.T) {
	t.Parallel()
	requireTool(t, "zip")
	f := newFixture(t)
	dir := filepath.Join(f.root, "z")
	pub := filepath.Join(f.root, "zpub")
	pk := filepath.Join(f.base, "zpack")
	for _, d := range []string{dir, pub, filepath.Join(pk, "keyonly"), filepath.Join(pk, "proj"), filepath.Join(pk, "clean")} {
		os.MkdirAll(d, 0o755)
	}
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(ek)
	key := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	writeFile(t, filepath.Join(pk, "keyonly", "notes.txt"), key, 0o644)
	writeFile(t, filepath.Join(pk, "proj", ".env"), "DB_PASSWORD="+canary+"\n", 0o644)
	writeFile(t, filepath.Join(pk, "clean", "README.md"), "# clean\n", 0o644)
	writeFile(t, filepath.Join(pk, "stub"), strings.Repeat("\x7fELF\x02\x01\x01\x00\x90\xc3", 3000), 0o755)
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	var pngb bytes.Buffer
	png.Encode(&pngb, img)
	writeFile(t, filepath.Join(pk, "pic.png"), pngb.String(), 0o644)
	shell(t, pk, "zip -qr key.zip keyonly && zip -qr env.zip proj && zip -qr clean.zip clean")
	shell(t, pk, "cat stub key.zip > "+filepath.Join(dir, "setup.bin"))
	shell(t, pk, "cat stub env.zip > "+filepath.Join(dir, "installer")+" && zip -qA "+filepath.Join(dir, "installer"))
	shell(t, pk, "cat pic.png key.zip > "+filepath.Join(dir, "photo.png"))
	shell(t, pk, "cat stub clean.zip > "+filepath.Join(pub, "setup.bin"))
	shell(t, pk, "cat stub clean.zip > "+filepath.Join(pub, "installer")+" && zip -qA "+filepath.Join(pub, "installer"))
	shell(t, pk, "cat pic.png clean.zip > "+filepath.Join(pub, "photo.png"))
	hidden := zipDropping(t, "proj/.env", [2]string{"README.md", "# hi\n"}, [2]string{"proj/.env", "DB_PASSWORD=" + canary + "\n"}, [2]string{"main.go", "package main\n"})
	writeFile(t, filepath.Join(dir, "hidden.zip"), string(hidden), 0o644)

	startMount(t, f.mp, "--policy", f.policy)
	env := []string{"FSGUARD_POLICY=" + f.policy}
	material := strings.Split(key, "\n")[2]
	refused := map[string]string{
		"setup.bin":  "private key",
		"installer":  ".env",
		"photo.png":  "private key",
		"hidden.zip": "read two ways",
	}
	defer func() {
		// Listed by name until their content is decided (here by the
		// reads): from then on, gone from the listing.
		ls := mustRun(t, "ls", "-a", filepath.Join(f.mp, "z"))
		for name := range refused {
			if strings.Contains(ls, name) {
				t.Errorf("ls through the mount lists z/%s after its read was refused", name)
			}
		}
	}()
	for name, why := range refused {
		if got, err := os.ReadFile(filepath.Join(f.mp, "z", name)); err == nil || len(got) > 0 {
			t.Errorf("the mount served z/%s (%d bytes, %v)", name, len(got), err)
		}
		out, errs, code, _ := runBinary(t, f.root, env, "", "read", "z/"+name, "--format", "json")
		if code != 1 || !strings.Contains(out, `"code":"DENIED"`) && !strings.Contains(out, `"code":"FS_ARCHIVE_UNCHECKED"`) {
			t.Errorf("fsguard read z/%s: exit %d, want DENIED or FS_ARCHIVE_UNCHECKED:\n%.300s%s", name, code, out, errs)
		}
		if !strings.Contains(out+errs, why) {
			t.Errorf("fsguard read z/%s does not say %q:\n%.400s%s", name, why, out, errs)
		}
		if strings.Contains(out+errs, canary) || strings.Contains(out+errs, material) {
			t.Errorf("fsguard read z/%s showed what is packed", name)
		}
	}
	served, _ := os.ReadDir(pub)
	for _, e := range served {
		want, _ := os.ReadFile(filepath.Join(pub, e.Name()))
		if got, err := os.ReadFile(filepath.Join(f.mp, "zpub", e.Name())); err != nil || !bytes.Equal(got, want) {
			t.Errorf("the mount did not serve zpub/%s as it is (%v)", e.Name(), err)
		}
	}
}
