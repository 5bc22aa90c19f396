package tests

import (
	"bytes"
	"compress/lzw"
	"compress/zlib"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A key in a PDF's attachment comes back out of the bytes the mount
// serves even when the PDF is encrypted — with the empty user password,
// any reader opens it without asking — or when the attachment is
// LZW- or run-length-encoded, or when its dictionary holds the word
// "stream" before the stream. qpdf attaches and encrypts, as a user
// would. None of them is served, by the mount, fsguard read or MCP; the
// same encrypted PDF with a plain attachment still is; a PDF with a user
// password is refused (no reader opens it without the password).
func TestAttackEncryptedPDFThroughEveryDoor(t *testing.T) {
	t.Parallel()
	qpdf := requireTool(t, "qpdf")
	base := t.TempDir()
	root := filepath.Join(base, "project")
	os.MkdirAll(root, 0o755)
	key := "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2Oi1yWk8xGj0j4aCkKeqq1kTn2Zm\n"
	for i := range 12 {
		key += strings.Repeat(fmt.Sprintf("q%dRw7Tz2mr7SZiAMfQyuvBjM2Oi1", i%10), 2) + "AbCdEfGh\n"
	}
	key += "-----END RSA PRIVATE KEY-----\n"
	tmp := t.TempDir()
	hello := filepath.Join(tmp, "hello.pdf")
	testenv.WritePDF(t, tmp, "hello.pdf", testenv.PagesPDF(1))
	for name, content := range map[string]string{"deploy.txt": key, "notes.txt": "just notes\n"} {
		os.WriteFile(filepath.Join(tmp, name), []byte(content), 0o600)
	}
	enc := func(name, attach string, args ...string) {
		a := []string{hello, "--add-attachment", filepath.Join(tmp, attach), "--", "--allow-weak-crypto", "--encrypt"}
		a = append(append(a, args...), "--", filepath.Join(root, name))
		if out, err := exec.Command(qpdf, a...).CombinedOutput(); err != nil {
			t.Fatalf("qpdf %v: %v\n%s", a, err, out)
		}
	}
	bad := []string{"rc4-40.pdf", "rc4-128.pdf", "aes-128.pdf", "aes-256-r5.pdf", "aes-256.pdf", "lzw.pdf", "runlength.pdf", "password.pdf", "upstream.pdf"}
	enc("rc4-40.pdf", "deploy.txt", "", "owner", "40")
	enc("rc4-128.pdf", "deploy.txt", "", "owner", "128", "--use-aes=n")
	enc("aes-128.pdf", "deploy.txt", "", "owner", "128", "--use-aes=y")
	enc("aes-256-r5.pdf", "deploy.txt", "", "owner", "256", "--force-R5")
	enc("aes-256.pdf", "deploy.txt", "", "owner", "256")
	enc("password.pdf", "deploy.txt", "secret", "owner", "256")
	enc("plain-aes-256.pdf", "notes.txt", "", "owner", "256")
	// LZW as Go's encoder writes it (no early change), run-length as
	// literal runs of two bytes.
	var lz bytes.Buffer
	w := lzw.NewWriter(&lz, lzw.MSB, 8)
	w.Write([]byte(key))
	w.Close()
	var rl bytes.Buffer
	for i := 0; i < len(key); i += 2 {
		part := key[i:min(i+2, len(key))]
		rl.WriteByte(byte(len(part) - 1))
		rl.WriteString(part)
	}
	rl.WriteByte(128)
	testenv.WritePDF(t, root, "lzw.pdf", attachedPDF(lz.Bytes(), "LZWDecode /DecodeParms << /EarlyChange 0 >>"))
	testenv.WritePDF(t, root, "runlength.pdf", attachedPDF(rl.Bytes(), "RunLengthDecode"))
	// A dictionary whose string holds "stream" before the stream's own.
	var fl bytes.Buffer
	zw := zlib.NewWriter(&fl)
	zw.Write([]byte(key))
	zw.Close()
	testenv.WritePDF(t, root, "upstream.pdf", attachedPDF(fl.Bytes(), "FlateDecode /Desc (from upstream)"))
	for _, name := range bad {
		if b, _ := os.ReadFile(filepath.Join(root, name)); bytes.Contains(b, []byte("BEGIN RSA")) {
			t.Fatalf("%s holds the key in plain", name)
		}
	}

	seedDocumentCache(t, filepath.Join(base, "state", "pdfium"))
	env := []string{"FSGUARD_JOURNAL=" + filepath.Join(base, "state", "j.db"), "FSGUARD_POLICY=", "FSGUARD_SOCKET="}
	for _, name := range bad {
		out, errOut, code, _ := runBinary(t, root, env, "", "read", name)
		if code == 0 || strings.Contains(out+errOut, "BEGIN RSA") {
			t.Errorf("read %s: exit %d\n%s%s", name, code, out, errOut)
		}
	}
	if out, errOut, code, _ := runBinary(t, root, env, "", "read", "plain-aes-256.pdf"); code != 0 {
		t.Errorf("read plain-aes-256.pdf: exit %d\n%s%s", code, out, errOut)
	}

	cmd := exec.Command(binary, "mcp")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.HangGuard)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, name := range []string{"aes-256.pdf", "rc4-40.pdf"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": name, "as": "document"}})
		if err != nil || !res.IsError || len(res.Content) != 1 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "DENIED: ") {
			t.Errorf("MCP %s as a document: %v %+v", name, err, res)
		}
	}

	mp := filepath.Join(base, "workspace")
	os.MkdirAll(mp, 0o755)
	seedDocumentCache(t, filepath.Join(base, "pdfium"))
	policy := filepath.Join(base, "policy.toml")
	writePolicy(t, policy, []string{root}, "")
	startMount(t, mp, "--policy", policy)
	want, _ := os.ReadFile(filepath.Join(root, "plain-aes-256.pdf"))
	if got, err := os.ReadFile(filepath.Join(mp, "plain-aes-256.pdf")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("plain-aes-256.pdf through the mount: %v", err)
	}
	for _, name := range bad {
		if b, err := os.ReadFile(filepath.Join(mp, name)); err == nil {
			t.Errorf("%s served through the mount (%d bytes), want it hidden", name, len(b))
		}
	}
}
