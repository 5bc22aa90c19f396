package tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/document"
	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/fsguard/fsguard/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// seedDocumentCache copies PDFium's compiled code, compiled once by this
// process into the shared test cache, to dir: a daemon or command whose
// state is there starts without compiling it again (which takes seconds,
// many more on a loaded machine).
func seedDocumentCache(t *testing.T, dir string) {
	t.Helper()
	document.Configure(testenv.DocumentCache())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	if err := document.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(testenv.DocumentCache())
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(testenv.DocumentCache(), e.Name()))
		if err == nil && e.Type().IsRegular() {
			os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600)
		}
	}
}

// secretPDFs writes plain.pdf, key.pdf (a private key in its compressed
// text) and token.pdf (a GitHub token in its compressed text) to dir, and
// returns the token.
func secretPDFs(t *testing.T, dir string) string {
	t.Helper()
	key := []string{"Deploy key follows", "-----BEGIN RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2Oi1yWk8xGj0j4aCkKeqq1kTn2Zm"}
	for i := range 12 {
		key = append(key, strings.Repeat(fmt.Sprintf("q%dRw7Tz2mr7SZiAMfQyuvBjM2Oi1", i%10), 2)+"AbCdEfGh")
	}
	key = append(key, "-----END RSA PRIVATE KEY-----")
	kp := testenv.TextPage(key...)
	kp.Deflate = true
	tok := ""
	for _, c := range sniff.SampleCredentials(7) {
		if c.Family == "github-pat" {
			tok = c.Value
		}
	}
	tp := testenv.TextPage("The token is "+tok+" for CI.", "end")
	tp.Deflate = true
	testenv.WritePDF(t, dir, "plain.pdf", testenv.PagesPDF(3))
	testenv.WritePDF(t, dir, "key.pdf", testenv.PDF([]testenv.PDFPage{testenv.TextPage("cover"), kp}, nil, ""))
	testenv.WritePDF(t, dir, "token.pdf", testenv.PDF([]testenv.PDFPage{tp}, nil, ""))
	return tok
}

// A PDF whose text holds a key or a credential never shows it: fsguard
// read refuses the key and masks the token, MCP hands over the plain
// document and not the token's, and the mount hides both.
func TestPDFSecretsThroughEveryDoor(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root, state := filepath.Join(base, "project"), filepath.Join(base, "state")
	os.MkdirAll(root, 0o755)
	tok := secretPDFs(t, root)
	seedDocumentCache(t, filepath.Join(state, "pdfium"))
	env := []string{"FSGUARD_JOURNAL=" + filepath.Join(state, "j.db"), "FSGUARD_POLICY=", "FSGUARD_SOCKET="}

	out, errOut, code, _ := runBinary(t, root, env, "", "read", "key.pdf")
	if code != 1 || !strings.Contains(errOut, "DENIED") && !strings.Contains(errOut, "private key") || strings.Contains(out+errOut, "BEGIN RSA") {
		t.Fatalf("read key.pdf: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code, _ = runBinary(t, root, env, "", "read", "token.pdf")
	if code != 0 || strings.Contains(out+errOut, tok[4:]) || !strings.Contains(out, "ghp_****") {
		t.Fatalf("read token.pdf: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code, _ = runBinary(t, root, env, "", "read", "plain.pdf", "--pages", "2-3", "--format", "json")
	if code != 0 || !strings.Contains(out, `"pages":3`) || !strings.Contains(out, "Page 2 of 3") || strings.Contains(out, "Page 1 of 3") {
		t.Fatalf("read plain.pdf --pages 2-3: exit %d\n%s", code, out)
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
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": "plain.pdf", "as": "document"}})
	if err != nil || res.IsError || len(res.Content) < 2 {
		t.Fatalf("plain.pdf as a document: %v %+v", err, res)
	}
	want, _ := os.ReadFile(filepath.Join(root, "plain.pdf"))
	er, ok := res.Content[1].(*mcp.EmbeddedResource)
	if !ok || er.Resource.MIMEType != "application/pdf" || !bytes.Equal(er.Resource.Blob, want) {
		t.Fatalf("plain.pdf as a document: %#v", res.Content[1])
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": "token.pdf", "as": "document"}})
	if err != nil || !res.IsError || len(res.Content) != 1 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "DENIED: ") {
		t.Fatalf("token.pdf as a document: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": "key.pdf", "pages": "2"}})
	if err != nil || !res.IsError || strings.Contains(res.Content[0].(*mcp.TextContent).Text, "BEGIN RSA") {
		t.Fatalf("key.pdf: %v %+v", err, res)
	}

	mp := filepath.Join(base, "workspace")
	os.MkdirAll(mp, 0o755)
	seedDocumentCache(t, filepath.Join(base, "pdfium")) // the daemon's journal is beside the mount point
	policy := filepath.Join(base, "policy.toml")
	writePolicy(t, policy, []string{root}, "")
	startMount(t, mp, "--policy", policy)
	got, err := os.ReadFile(filepath.Join(mp, "plain.pdf"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("plain.pdf through the mount: %v", err)
	}
	for _, name := range []string{"key.pdf", "token.pdf"} {
		// Listed by name until its content is decided, by its first read.
		if got, err := os.ReadFile(filepath.Join(mp, name)); !os.IsNotExist(err) || len(got) > 0 {
			t.Errorf("%s read through the mount: %d bytes, %v, want it hidden", name, len(got), err)
		}
		if _, err := os.Stat(filepath.Join(mp, name)); !os.IsNotExist(err) {
			t.Errorf("%s through the mount: %v, want it hidden", name, err)
		}
	}
	ents, _ := os.ReadDir(mp)
	for _, e := range ents {
		if e.Name() == "key.pdf" || e.Name() == "token.pdf" {
			t.Errorf("%s is listed through the mount", e.Name())
		}
	}
}
