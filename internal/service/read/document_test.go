package read

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/document"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/fsguard/fsguard/internal/testenv"
)

// pdfFixture is a root holding PDFs, read under the default policy with
// maxLines lines a read (0: the default).
func pdfFixture(t *testing.T, maxLines int) (string, *Reader) {
	t.Helper()
	document.Configure(testenv.DocumentCache())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute) // the one compilation, not a request
	defer cancel()
	if err := document.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	p, err := policy.Default(root)
	if err != nil {
		t.Fatal(err)
	}
	if maxLines > 0 {
		p.Limits.MaxLines = maxLines
	}
	g, err := roots.New(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return root, &Reader{Guard: g}
}

// readWithin reads req and fails t when the answer takes longer than the
// hang guard.
func readWithin(t *testing.T, r *Reader, req Request) (*Result, error) {
	t.Helper()
	type answer struct {
		res *Result
		err error
	}
	c := make(chan answer, 1)
	go func() { res, err := r.Read(req); c <- answer{res, err} }()
	select {
	case a := <-c:
		return a.res, a.err
	case <-time.After(testenv.HangGuard + 2*document.MaxTime):
		t.Fatalf("read %s: no answer within the hang guard", req.Path)
		return nil, nil
	}
}

// PrivateKeyText is a PEM private key, as lines a PDF page shows.
func privateKeyLines() []string {
	ls := []string{"-----BEGIN RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2Oi1yWk8xGj0j4aCkKeqq1kTn2Zm"}
	for i := range 12 {
		ls = append(ls, strings.Repeat(fmt.Sprintf("q%dRw7Tz2mr7SZiAMfQyuvBjM2Oi1", i%10), 2)+"AbCdEfGh")
	}
	return append(ls, "-----END RSA PRIVATE KEY-----")
}

// pdfToken is a GitHub token as the detector's own samples make it.
func pdfToken(t *testing.T) string {
	for _, c := range sniff.SampleCredentials(7) {
		if c.Family == "github-pat" {
			return c.Value
		}
	}
	t.Fatal("the detector makes no github-pat sample")
	return ""
}

func TestPDFTextByPage(t *testing.T) {
	t.Parallel()
	root, r := pdfFixture(t, 0)
	testenv.WritePDF(t, root, "design.pdf", testenv.PDF([]testenv.PDFPage{
		testenv.TextPage("Design of the widget", "It has two parts."),
		{Content: "BT /F2 12 Tf 72 700 Td (caf\\351 na\\357ve) Tj ET", Deflate: true},
		{Content: "BT /F3 12 Tf 72 700 Td (ABC) Tj ET"},
		testenv.ScanPage(),
	}, nil, ""))
	res, err := readWithin(t, r, Request{Path: "design.pdf", Cwd: root})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--- page 1 ---\nDesign of the widget\nIt has two parts.\n", "--- page 2 ---\ncafé naïve\n", "--- page 3 ---\nαβγ\n",
		"--- page 4 ---\n(Page 4 has no text that can be extracted: it may be a scanned image or drawings.)\n", "(End of document - 4 pages)\n"} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, res.Body)
		}
	}
	if res.Kind() != "document" || res.Document.Pages != 4 || res.Range != (Range{1, 4}) || res.Continuation != nil {
		t.Errorf("kind %s, document %+v, range %v, continuation %v", res.Kind(), res.Document, res.Range, res.Continuation)
	}
	if res.Observation.ContentID == nil || res.Observation.WholeFileVisible {
		t.Errorf("observation %+v", res.Observation)
	}
	if j := string(res.JSON()); !strings.Contains(j, `"type":"document"`) || !strings.Contains(j, `"document":{"pages":4`) {
		t.Errorf("JSON: %s", j)
	}
}

func TestPDFPagesAndContinuation(t *testing.T) {
	t.Parallel()
	root, r := pdfFixture(t, 0)
	testenv.WritePDF(t, root, "long.pdf", testenv.PagesPDF(45))
	res, err := readWithin(t, r, Request{Path: "long.pdf", Cwd: root})
	if err != nil {
		t.Fatal(err)
	}
	if res.Range != (Range{1, 20}) || !strings.HasSuffix(res.Body, "(Showing pages 1-20 of 45. Use --pages 21-40 to continue.)\n") ||
		res.Continuation == nil || res.Continuation.Pages != "21-40" || strings.Contains(res.Body, "Page 21 of 45") {
		t.Fatalf("range %v, continuation %+v, body tail %q", res.Range, res.Continuation, res.Body[max(0, len(res.Body)-200):])
	}
	res, err = readWithin(t, r, Request{Path: "long.pdf", Cwd: root, Pages: "41-45"})
	if err != nil || res.Range != (Range{41, 45}) || !strings.Contains(res.Body, "--- page 41 ---\nPage 41 of 45\n") || !strings.HasSuffix(res.Body, "(End of document - 45 pages)\n") {
		t.Fatalf("41-45: %v %v", res, err)
	}
	res, err = readWithin(t, r, Request{Path: "long.pdf", Cwd: root, Pages: "7"})
	if err != nil || res.Range != (Range{7, 7}) || res.Continuation.Pages != "8-27" {
		t.Fatalf("7: %v %v", res, err)
	}
	for pages, code := range map[string]refusal.Code{"1-21": refusal.InvalidInput, "46": refusal.OffsetOutOfRange, "x": refusal.InvalidInput, "5-2": refusal.InvalidInput} {
		if _, err := readWithin(t, r, Request{Path: "long.pdf", Cwd: root, Pages: pages}); refusal.CodeOf(err) != code {
			t.Errorf("pages %q: %v, want %s", pages, err, code)
		}
	}
	if _, err := readWithin(t, r, Request{Path: "long.pdf", Cwd: root, Offset: 5}); refusal.CodeOf(err) != refusal.InvalidInput {
		t.Errorf("offset on a document: %v", err)
	}
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("plain\n"), 0o644)
	if _, err := readWithin(t, r, Request{Path: "notes.txt", Cwd: root, Pages: "1"}); refusal.CodeOf(err) != refusal.InvalidInput {
		t.Errorf("pages of a text file: %v", err)
	}
}

// A read is capped by lines as text is: whole pages while they fit, the
// continuation from the first page left out.
func TestPDFCappedByLines(t *testing.T) {
	t.Parallel()
	root, r := pdfFixture(t, 10)
	testenv.WritePDF(t, root, "caps.pdf", testenv.PagesPDF(6)) // each page is 4 lines and its marker
	res, err := readWithin(t, r, Request{Path: "caps.pdf", Cwd: root})
	if err != nil {
		t.Fatal(err)
	}
	if res.Range != (Range{1, 2}) || res.Truncation.Reason != "lines" || res.Continuation.Pages != "3-6" {
		t.Fatalf("range %v, truncation %+v, continuation %+v\n%s", res.Range, res.Truncation, res.Continuation, res.Body)
	}
}

// A PDF that text is a name for, not a PDF: a text file quoting a PDF's
// header on a line of its own, after its first line, is read as text.
func TestTextQuotingAPDFHeaderIsText(t *testing.T) {
	t.Parallel()
	root, r := pdfFixture(t, 0)
	os.WriteFile(filepath.Join(root, "notes.md"), []byte("A PDF starts with:\n%PDF-1.7\nand ends with %%EOF.\n"), 0o644)
	res, err := readWithin(t, r, Request{Path: "notes.md", Cwd: root})
	if err != nil || res.Document != nil || len(res.Lines) != 3 {
		t.Fatalf("%v %v", res, err)
	}
}

// Hostile and broken documents are refused, by name, within the bound.
func TestPDFUnreadableRefused(t *testing.T) {
	t.Parallel()
	root, r := pdfFixture(t, 0)
	enc := testenv.PDF([]testenv.PDFPage{testenv.TextPage("secret plans")},
		[]string{"<< /Filter /Standard /V 1 /R 2 /O <" + strings.Repeat("6b", 32) + "> /U <" + strings.Repeat("a5", 32) + "> /P -4 >>"},
		fmt.Sprintf("/Encrypt %d 0 R /ID [<00112233445566778899aabbccddeeff> <00112233445566778899aabbccddeeff>]", testenv.FirstExtra(1)))
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	w.Write([]byte("BT /F1 12 Tf 72 700 Td (boom) Tj ET\n"))
	spaces := bytes.Repeat([]byte(" "), 1<<20)
	for range 2 * document.MemoryLimit / len(spaces) {
		w.Write(spaces)
	}
	w.Close()
	bomb := testenv.PDF([]testenv.PDFPage{{Content: "q Q"}}, []string{fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String())}, "")
	bomb = bytes.Replace(bomb, []byte("/Contents 5 0 R"), []byte(fmt.Sprintf("/Contents %d 0 R", testenv.FirstExtra(1))), 1)
	for name, data := range map[string][]byte{
		"encrypted.pdf": enc,
		"truncated.pdf": testenv.PagesPDF(3)[:60],
		"bomb.pdf":      bomb,
	} {
		testenv.WritePDF(t, root, name, data)
		_, err := readWithin(t, r, Request{Path: name, Cwd: root})
		if refusal.CodeOf(err) != refusal.UnreadableDocument {
			t.Errorf("%s: %v, want %s", name, err, refusal.UnreadableDocument)
		}
		t.Logf("%s: %v", name, err)
	}
}

// The text of a PDF goes through the key and credential checks: a key in
// its text (compressed, so no scan of its bytes sees it) refuses it; a
// credential is masked in the text, and the document itself is not
// handed over.
func TestPDFSecrets(t *testing.T) {
	t.Parallel()
	root, r := pdfFixture(t, 0)
	key := testenv.TextPage(append([]string{"Deploy key follows"}, privateKeyLines()...)...)
	key.Deflate = true
	testenv.WritePDF(t, root, "key.pdf", testenv.PDF([]testenv.PDFPage{testenv.TextPage("cover"), key}, nil, ""))
	secret := pdfToken(t)
	tok := testenv.TextPage("The token is "+secret+" for CI.", "end")
	tok.Deflate = true
	testenv.WritePDF(t, root, "token.pdf", testenv.PDF([]testenv.PDFPage{tok}, nil, ""))

	for _, pages := range []string{"", "1"} {
		res, err := readWithin(t, r, Request{Path: "key.pdf", Cwd: root, Pages: pages})
		if refusal.CodeOf(err) != refusal.Denied {
			t.Fatalf("key.pdf pages %q: %v (%v), want DENIED", pages, res, err)
		}
	}
	res, err := readWithin(t, r, Request{Path: "token.pdf", Cwd: root})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Body, secret[4:]) || !strings.Contains(res.Body, "ghp_****") || len(res.Masked) == 0 || !res.Observation.Masked {
		t.Fatalf("token shown or not said masked: %+v\n%s", res.Masked, res.Body)
	}
	if strings.Contains(string(res.JSON()), secret[4:]) {
		t.Fatal("JSON shows the token")
	}
	if _, err := readWithin(t, r, Request{Path: "token.pdf", Cwd: root, AsDocument: true}); refusal.CodeOf(err) != refusal.Denied {
		t.Fatalf("token.pdf as a document: %v, want DENIED", err)
	}
}

func TestPDFAsDocument(t *testing.T) {
	t.Parallel()
	root, r := pdfFixture(t, 0)
	small := testenv.PagesPDF(3)
	testenv.WritePDF(t, root, "small.pdf", small)
	testenv.WritePDF(t, root, "long.pdf", testenv.PagesPDF(30))
	res, err := readWithin(t, r, Request{Path: "small.pdf", Cwd: root, AsDocument: true})
	if err != nil || !bytes.Equal(res.Document.Data, small) {
		t.Fatalf("small.pdf as a document: %v", err)
	}
	res, err = readWithin(t, r, Request{Path: "long.pdf", Cwd: root, AsDocument: true, Pages: "5-6"})
	if err != nil || !bytes.HasPrefix(res.Document.Data, []byte("%PDF-")) {
		t.Fatalf("long.pdf 5-6 as a document: %v", err)
	}
	p, err := document.Text(t.Context(), res.Document.Data, 1, 5, 1<<20)
	if err != nil || p.Count != 2 || !strings.Contains(p.Text[0], "Page 5 of 30") {
		t.Fatalf("the pages sent: %+v, %v", p, err)
	}
}
