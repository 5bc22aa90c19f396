package testenv

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// PDFs for tests, written by hand: a PDF is numbered objects, an xref
// table of their offsets and a trailer, so each test states exactly the
// structure it attacks (a cycle, a nesting, a stream) without a library
// that would refuse to write it.

// PDFPage is one page of a test PDF: its content stream, the fonts it
// names (/F1 Helvetica, /F2 Times-Roman in WinAnsi, /F3 Courier whose
// codes a ToUnicode map turns into Greek), and an image (/Im1, 8x8 grey)
// it may draw. Deflate compresses the stream.
type PDFPage struct {
	Content string
	Deflate bool
}

// TextPage is a page showing lines of text in /F1, one per line; the text
// must not hold parentheses or backslashes.
func TextPage(lines ...string) PDFPage {
	var b strings.Builder
	b.WriteString("BT /F1 12 Tf 72 740 Td 14 TL\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "(%s) '\n", l)
	}
	b.WriteString("ET")
	return PDFPage{Content: b.String()}
}

// ScanPage draws an image and no text, as a scanned page does.
func ScanPage() PDFPage { return PDFPage{Content: "q 200 0 0 200 72 400 cm /Im1 Do Q"} }

// PDF is a document of pages, with extra objects appended (numbered from
// 4+2*len(pages)+3 on) and trailer entries added (e.g. an /Encrypt).
func PDF(pages []PDFPage, extra []string, trailer string) []byte {
	var b bytes.Buffer
	var offs []int
	obj := func(s string) {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offs), s)
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	n := len(pages)
	fonts := 4 + 2*n
	var kids strings.Builder
	for i := range n {
		fmt.Fprintf(&kids, "%d 0 R ", 4+2*i)
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids.String(), n))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	res := fmt.Sprintf("<< /Font << /F1 3 0 R /F2 %d 0 R /F3 %d 0 R >> /XObject << /Im1 %d 0 R >> >>", fonts, fonts+1, fonts+2)
	for i, p := range pages {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %s /Contents %d 0 R >>", res, 5+2*i))
		obj(stream(p.Content, p.Deflate))
	}
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding /WinAnsiEncoding >>")
	cmap := "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Greek def\n" +
		"1 begincodespacerange <00> <FF> endcodespacerange\n" +
		"3 beginbfchar <41> <03B1> <42> <03B2> <43> <03B3> endbfchar\nendcmap CMapName currentdict /CMap defineresource pop end end"
	obj(fmt.Sprintf("<< /Type /Font /Subtype /Type1 /BaseFont /Courier /ToUnicode %d 0 R >>", fonts+3))
	obj("<< /Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Length 64 >>\nstream\n" +
		strings.Repeat("\x80", 64) + "\nendstream")
	obj(stream(cmap, false))
	for _, e := range extra {
		obj(e)
	}
	x := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R %s >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, trailer, x)
	return b.Bytes()
}

// stream is a stream object of content, deflated when asked.
func stream(content string, deflate bool) string {
	if !deflate {
		return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content)
	}
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	w.Write([]byte(content))
	w.Close()
	return fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String())
}

// FirstExtra is the number of the first extra object of a PDF of n pages.
func FirstExtra(n int) int { return 4 + 2*n + 3 + 1 }

// PagesPDF is a document of n pages, page i showing "Page i of n" and
// lines of filler text.
func PagesPDF(n int) []byte {
	pages := make([]PDFPage, n)
	for i := range pages {
		pages[i] = TextPage(fmt.Sprintf("Page %d of %d", i+1, n), "The quick brown fox jumps over the lazy dog.", "Pack my box with five dozen liquor jugs.")
		pages[i].Deflate = i%2 == 1
	}
	return PDF(pages, nil, "")
}

// WritePDF writes data as name under dir and returns its path.
func WritePDF(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// DocumentCache is where tests keep PDFium's compiled code, shared by the
// test binaries of one user (compiling it takes seconds); document.Configure
// uses it only when no other user can write it.
func DocumentCache() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("fsguard-test-pdfium-%d", os.Geteuid()))
}
