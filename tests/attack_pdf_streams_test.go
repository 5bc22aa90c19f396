package tests

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/fsguard/fsguard/internal/testenv"
)

// attachedPDF is a one-page PDF ("Hello") with an embedded file whose
// stream carries body under the filter named (none: "").
func attachedPDF(body []byte, filter string) []byte {
	n := testenv.FirstExtra(1)
	f := ""
	if filter != "" {
		f = " /Filter /" + filter
	}
	return testenv.PDF([]testenv.PDFPage{testenv.TextPage("Hello")}, []string{
		fmt.Sprintf("<< /Type /Filespec /F (notes.txt) /EF << /F %d 0 R >> >>", n+1),
		fmt.Sprintf("<< /Type /EmbeddedFile%s /Length %d >>\nstream\n%s\nendstream", f, len(body), body),
	}, "")
}

// A PDF's text is not all the mount serves of it: an attachment (an
// embedded file's stream) holding a key or a token, compressed or
// hex-encoded, or a zip holding one, comes back out of the bytes the
// mount serves with any PDF tool. None of them is served, and none is
// shown by fsguard read; a plain PDF with a plain attachment still is.
func TestAttackPDFAttachmentsThroughTheMount(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "project")
	os.MkdirAll(root, 0o755)
	key := "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2Oi1yWk8xGj0j4aCkKeqq1kTn2Zm\n"
	for i := range 12 {
		key += strings.Repeat(fmt.Sprintf("q%dRw7Tz2mr7SZiAMfQyuvBjM2Oi1", i%10), 2) + "AbCdEfGh\n"
	}
	key += "-----END RSA PRIVATE KEY-----\n"
	tok := ""
	for _, c := range sniff.SampleCredentials(7) {
		if c.Family == "github-pat" {
			tok = c.Value
		}
	}
	deflate := func(b []byte) []byte {
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write(b)
		w.Close()
		return z.Bytes()
	}
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("deploy.txt")
	w.Write([]byte(key))
	zw.Close()

	testenv.WritePDF(t, root, "plain.pdf", attachedPDF(deflate([]byte("just notes\n")), "FlateDecode"))
	bad := map[string][]byte{
		"flate-key.pdf":   attachedPDF(deflate([]byte(key)), "FlateDecode"),
		"hex-key.pdf":     attachedPDF([]byte(hex.EncodeToString([]byte(key))+">"), "ASCIIHexDecode"),
		"zip-key.pdf":     attachedPDF(zb.Bytes(), ""),
		"flate-token.pdf": attachedPDF(deflate([]byte("token = "+tok+"\n")), "FlateDecode"),
		"nofilter.pdf":    attachedPDF(deflate([]byte(key)), ""), // the dictionary lies
	}
	for name, b := range bad {
		testenv.WritePDF(t, root, name, b)
	}
	seedDocumentCache(t, filepath.Join(base, "state", "pdfium"))
	env := []string{"FSGUARD_JOURNAL=" + filepath.Join(base, "state", "j.db"), "FSGUARD_POLICY=", "FSGUARD_SOCKET="}
	for _, name := range []string{"flate-key.pdf", "hex-key.pdf", "zip-key.pdf", "nofilter.pdf"} {
		out, errOut, code, _ := runBinary(t, root, env, "", "read", name)
		if code == 0 || strings.Contains(out+errOut, "BEGIN RSA") {
			t.Errorf("read %s: exit %d\n%s%s", name, code, out, errOut)
		}
	}

	mp := filepath.Join(base, "workspace")
	os.MkdirAll(mp, 0o755)
	seedDocumentCache(t, filepath.Join(base, "pdfium"))
	policy := filepath.Join(base, "policy.toml")
	writePolicy(t, policy, []string{root}, "")
	startMount(t, mp, "--policy", policy)
	want, _ := os.ReadFile(filepath.Join(root, "plain.pdf"))
	if got, err := os.ReadFile(filepath.Join(mp, "plain.pdf")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("plain.pdf through the mount: %v", err)
	}
	for name := range bad {
		if b, err := os.ReadFile(filepath.Join(mp, name)); err == nil {
			t.Errorf("%s served through the mount (%d bytes), want it hidden", name, len(b))
		}
	}
}
