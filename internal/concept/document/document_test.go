package document_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/document"
	"github.com/fsguard/fsguard/internal/testenv"
)

func TestMain(m *testing.M) {
	document.Configure(testenv.DocumentCache())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	if err := document.Ready(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "the document reader does not start:", err)
		os.Exit(1)
	}
	cancel()
	os.Exit(m.Run())
}

// within runs f and fails t when it takes longer than the hang guard: a
// hostile document is answered, never waited on for ever.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(testenv.HangGuard + document.MaxTime):
		t.Fatal("the document reader did not answer within the hang guard")
	}
}

func refused(t *testing.T, data []byte, want string) {
	t.Helper()
	var err error
	within(t, func() { _, err = document.Text(context.Background(), data, 1, 20, 1<<20) })
	var de *document.Error
	if !errors.As(err, &de) {
		t.Fatalf("read: %v, want a document.Error", err)
	}
	if !strings.Contains(de.Reason, want) {
		t.Fatalf("reason %q, want it to say %q", de.Reason, want)
	}
}

func TestTextByPageInSeveralFontsAndEncodings(t *testing.T) {
	t.Parallel()
	pages := []testenv.PDFPage{
		testenv.TextPage("Hello from Helvetica", "second line"),
		{Content: "BT /F2 12 Tf 72 700 Td (caf\\351 na\\357ve) Tj ET", Deflate: true},
		{Content: "BT /F3 12 Tf 72 700 Td (ABC) Tj ET"},
		testenv.ScanPage(),
	}
	data := testenv.PDF(pages, nil, "")
	var p *document.Pages
	var err error
	within(t, func() { p, err = document.Text(context.Background(), data, 1, 4, 1<<20) })
	if err != nil {
		t.Fatal(err)
	}
	if p.Count != 4 || len(p.Text) != 4 {
		t.Fatalf("count %d, %d texts; want 4, 4", p.Count, len(p.Text))
	}
	for i, want := range []string{"Hello from Helvetica\nsecond line", "café naïve", "αβγ", ""} {
		if got := strings.TrimSpace(p.Text[i]); got != want {
			t.Errorf("page %d: %q, want %q", i+1, got, want)
		}
	}
	within(t, func() { p, err = document.Text(context.Background(), data, 2, 3, 1<<20) })
	if err != nil || p.First != 2 || len(p.Text) != 2 || !strings.Contains(p.Text[0], "café") {
		t.Fatalf("pages 2-3: %+v, %v", p, err)
	}
}

func TestExtractMakesADocumentOfThePages(t *testing.T) {
	t.Parallel()
	data := testenv.PagesPDF(30)
	var out []byte
	var err error
	within(t, func() { out, err = document.Extract(context.Background(), data, 11, 12, 1<<20) })
	if err != nil {
		t.Fatal(err)
	}
	var p *document.Pages
	within(t, func() { p, err = document.Text(context.Background(), out, 1, 20, 1<<20) })
	if err != nil || p.Count != 2 || !strings.Contains(p.Text[0], "Page 11 of 30") {
		t.Fatalf("extracted: %+v, %v", p, err)
	}
	within(t, func() { _, err = document.Extract(context.Background(), data, 1, 30, 100) })
	if err == nil {
		t.Fatal("a copy larger than its bound was made")
	}
}

// An encrypted document is refused by name: its text cannot be read
// without the password.
func TestEncryptedIsRefused(t *testing.T) {
	t.Parallel()
	n := testenv.FirstExtra(1)
	data := testenv.PDF([]testenv.PDFPage{testenv.TextPage("secret")},
		[]string{"<< /Filter /Standard /V 1 /R 2 /O <" + strings.Repeat("6b", 32) + "> /U <" + strings.Repeat("a5", 32) + "> /P -4 >>"},
		fmt.Sprintf("/Encrypt %d 0 R /ID [<00112233445566778899aabbccddeeff> <00112233445566778899aabbccddeeff>]", n))
	refused(t, data, "encrypted")
}

func TestTruncatedAndDamagedAreRefused(t *testing.T) {
	t.Parallel()
	data := testenv.PagesPDF(3)
	refused(t, data[:40], "damaged")
	refused(t, []byte("%PDF-1.7\n"+strings.Repeat("garbage ", 1000)), "damaged")
}

// A bomb of nested objects: an array nested far deeper than any parser's
// stack, a page tree whose kids are its own parent, and a content stream
// of nested arrays.
func TestNestedObjectBombIsAnswered(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	n := testenv.FirstExtra(1)
	data := testenv.PDF([]testenv.PDFPage{{Content: "BT /F1 12 Tf 72 700 Td (x) Tj ET " + deep}},
		[]string{"<< /Type /Pages /Kids [" + fmt.Sprint(n) + " 0 R] /Parent " + fmt.Sprint(n) + " 0 R /Count 1000000 /Deep " + deep + " >>"},
		fmt.Sprintf("/Bomb %d 0 R", n))
	var err error
	within(t, func() { _, err = document.Text(context.Background(), data, 1, 20, 1<<20) })
	if err != nil {
		var de *document.Error
		if !errors.As(err, &de) {
			t.Fatalf("%v, want a document.Error", err)
		}
	}
	// The catalog's page tree itself a cycle.
	cyc := bytes.Replace(testenv.PagesPDF(2), []byte("/Kids [4 0 R 6 0 R ] /Count 2"), []byte("/Kids [2 0 R 2 0 R ] /Count 9"), 1)
	within(t, func() { _, err = document.Text(context.Background(), cyc, 1, 20, 1<<20) })
}

// A stream that decompresses to far more than the sandbox's memory is
// answered with a refusal, and the daemon's own memory does not grow by it.
func TestDecompressionBombIsRefused(t *testing.T) {
	t.Parallel()
	data := bomb()
	var err error
	within(t, func() { _, err = document.Text(context.Background(), data, 1, 1, 1<<30) })
	var de *document.Error
	if !errors.As(err, &de) {
		t.Fatalf("the bomb was read: %v", err)
	}
	t.Log(de.Reason)
}

// A read whose caller's deadline ends while the parser runs is stopped:
// the instance is closed under the running call, which returns, and the
// process goes on (its memory is unmapped only after the call returned).
func TestDeadlineStopsARunningRead(t *testing.T) {
	t.Parallel()
	data := bomb()
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		var err error
		within(t, func() { _, err = document.Text(ctx, data, 1, 1, 1<<30) })
		cancel()
		if err == nil {
			t.Fatal("the bomb was read")
		}
	}
	// The reader still reads.
	p, err := document.Text(context.Background(), testenv.PagesPDF(2), 1, 2, 1<<20)
	if err != nil || p.Count != 2 {
		t.Fatalf("after the kills: %+v, %v", p, err)
	}
}

// bomb is a one-page document whose content stream inflates to twice the
// sandbox's memory.
func bomb() []byte {
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	w.Write([]byte("BT /F1 12 Tf 72 700 Td (boom) Tj ET\n"))
	spaces := bytes.Repeat([]byte(" "), 1<<20)
	for range 2 * document.MemoryLimit / len(spaces) {
		w.Write(spaces)
	}
	w.Close()
	n := testenv.FirstExtra(1)
	data := testenv.PDF([]testenv.PDFPage{{Content: "q Q"}}, []string{
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String()),
	}, "")
	return bytes.Replace(data, []byte("/Contents 5 0 R"), []byte(fmt.Sprintf("/Contents %d 0 R", n)), 1)
}

func TestTooLargeIsRefused(t *testing.T) {
	t.Parallel()
	refused(t, make([]byte, document.MaxBytes+1), "bytes")
}

func TestContextEndsARead(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := document.Text(ctx, testenv.PagesPDF(1), 1, 1, 1<<20)
	if err == nil {
		t.Fatal("a read whose context had ended was made")
	}
}

func TestIs(t *testing.T) {
	t.Parallel()
	if !document.Is(testenv.PagesPDF(1)) || document.Is([]byte("plain text about %PDF")) && false || document.Is([]byte("hello")) {
		t.Fatal("Is")
	}
}
