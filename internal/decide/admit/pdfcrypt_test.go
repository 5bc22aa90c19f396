package admit

import (
	"bufio"
	"bytes"
	golzw "compress/lzw"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/fsguard/fsguard/internal/testenv"
)

// embeddedPDF is a one-page PDF with an embedded file whose stream is
// body, under the dictionary entries extra ("/Filter /X ...").
func embeddedPDF(body []byte, extra string) []byte {
	n := testenv.FirstExtra(1)
	return testenv.PDF([]testenv.PDFPage{testenv.TextPage("Hello")}, []string{
		fmt.Sprintf("<< /Type /Filespec /F (notes.txt) /EF << /F %d 0 R >> >>", n+1),
		fmt.Sprintf("<< /Type /EmbeddedFile %s /Length %d >>\nstream\n%s\nendstream", extra, len(body), body),
	}, "")
}

// qpdf attaches the file attach to pdf (when not nil) and encrypts it
// with qpdf's arguments args (after --encrypt), as a PDF tool would; it
// skips where qpdf is missing (scripts/deps.sh installs it), unless
// FSGUARD_REQUIRE_TOOLS=1.
func qpdf(t *testing.T, pdf, attach []byte, args ...string) []byte {
	t.Helper()
	path, err := exec.LookPath("qpdf")
	if err != nil {
		if os.Getenv("FSGUARD_REQUIRE_TOOLS") == "1" {
			t.Fatalf("qpdf required (scripts/deps.sh installs it): %v", err)
		}
		t.Skipf("no qpdf: %v", err)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.pdf"), filepath.Join(dir, "out.pdf")
	if err := os.WriteFile(in, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	a := []string{in}
	if attach != nil {
		at := filepath.Join(dir, "notes.txt")
		if err := os.WriteFile(at, attach, 0o600); err != nil {
			t.Fatal(err)
		}
		a = append(a, "--add-attachment", at, "--")
	}
	a = append(append(append(a, "--allow-weak-crypto", "--encrypt"), args...), "--", out)
	if b, err := exec.Command(path, a...).CombinedOutput(); err != nil {
		t.Fatalf("qpdf %v: %v\n%s", args, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pdfEncryptions are qpdf's arguments for each standard security
// handler, with the empty user password.
var pdfEncryptions = map[string][]string{
	"rc4-40 (R2)":   {"", "owner", "40"},
	"rc4-128 (R3)":  {"", "owner", "128", "--use-aes=n"},
	"aes-128 (R4)":  {"", "owner", "128", "--use-aes=y"},
	"aes-256 (R5)":  {"", "owner", "256", "--force-R5"},
	"aes-256 (R6)":  {"", "owner", "256"},
	"r4 plain meta": {"", "owner", "128", "--use-aes=y", "--cleartext-metadata"},
}

// A key in an attachment of a PDF encrypted with the empty user password
// (any reader opens it without asking) is found, whichever handler
// encrypted it; the same PDF without the key is not refused; a PDF with a
// user password is refused as unreadable.
func TestEncryptedPDFStreams(t *testing.T) {
	t.Parallel()
	var d Decider
	hello := testenv.PDF([]testenv.PDFPage{testenv.TextPage("Hello")}, nil, "")
	for name, args := range pdfEncryptions {
		enc := qpdf(t, hello, []byte(testKey), args...)
		if bytes.Contains(enc, []byte("BEGIN OPENSSH")) || !bytes.Contains(enc, []byte("/Encrypt")) {
			t.Fatalf("%s: qpdf did not encrypt", name)
		}
		if in, err := d.streamFinding(enc, nil, nil); err != nil || in == nil || in.Why != insideDocKey {
			t.Errorf("%s: a key in an attachment: %+v %v", name, in, err)
		}
		if in, err := d.streamFinding(qpdf(t, hello, []byte("just notes\n"), args...), nil, nil); err != nil || in != nil {
			t.Errorf("%s: a plain attachment: %+v %v", name, in, err)
		}
	}
	// The key in a string (a form field's value, the document's subject).
	info := fmt.Sprintf("<< /Subject (%s) >>", bytes.ReplaceAll([]byte(testKey), []byte("\n"), []byte(`\n`)))
	subject := testenv.PDF([]testenv.PDFPage{testenv.TextPage("Hello")}, []string{info}, fmt.Sprintf("/Info %d 0 R", testenv.FirstExtra(1)))
	if in, err := d.streamFinding(qpdf(t, subject, nil, "", "owner", "128", "--use-aes=n"), nil, nil); err != nil || in == nil || in.Why != insideDocKey {
		t.Errorf("a key in an encrypted string: %+v %v", in, err)
	}
	in, err := d.streamFinding(qpdf(t, hello, []byte(testKey), "user", "owner", "256"), nil, nil)
	if err != nil || in == nil || in.Why != insideDocUnreadable {
		t.Errorf("a user password: %+v %v", in, err)
	}
}

// pdfLZW encodes b as LZWDecode does, with early change or not.
func pdfLZW(b []byte, early bool) []byte {
	var out bytes.Buffer
	var acc uint64
	var nacc uint
	width, next := uint(9), 258
	e := 0
	if early {
		e = 1
	}
	put := func(code int) {
		acc = acc<<width | uint64(code)
		nacc += width
		for nacc >= 8 {
			out.WriteByte(byte(acc >> (nacc - 8)))
			nacc -= 8
		}
	}
	dict := map[string]int{}
	put(256)
	w := ""
	for _, c := range b {
		wc := w + string([]byte{c})
		if _, ok := dict[wc]; ok || len(wc) == 1 {
			w = wc
			continue
		}
		if len(w) == 1 {
			put(int(w[0]))
		} else {
			put(dict[w])
		}
		dict[wc] = next
		next++
		for width < 12 && next-1+e >= 1<<width {
			width++
		}
		if next+e >= 4095 {
			put(256)
			clear(dict)
			width, next = 9, 258
		}
		w = string([]byte{c})
	}
	if len(w) == 1 {
		put(int(w[0]))
	} else if w != "" {
		put(dict[w])
	}
	put(257)
	if nacc > 0 {
		out.WriteByte(byte(acc << (8 - nacc)))
	}
	return out.Bytes()
}

// pdfRunLength encodes b as RunLengthDecode does.
func pdfRunLength(b []byte) []byte {
	var out bytes.Buffer
	for i := 0; i < len(b); {
		j := i
		for j < len(b) && j-i < 128 && b[j] == b[i] {
			j++
		}
		if j-i >= 2 {
			out.WriteByte(byte(257 - (j - i)))
			out.WriteByte(b[i])
			i = j
			continue
		}
		j = min(i+128, len(b))
		out.WriteByte(byte(j - i - 1))
		out.Write(b[i:j])
		i = j
	}
	out.WriteByte(128)
	return out.Bytes()
}

// A key in an LZW stream (either early change), a run-length stream, in a
// chain of them, or behind a PNG predictor is found; the decoders give
// back what was encoded.
func TestPDFFilterChains(t *testing.T) {
	t.Parallel()
	long := bytes.Repeat([]byte("a long text that repeats itself, to fill LZW's table past its widths; "), 400)
	for _, early := range []bool{true, false} {
		p := map[bool]string{true: "", false: "/DecodeParms << /EarlyChange 0 >>"}[early]
		r := newLZW(bytes.NewReader(pdfLZW(long, early)), early)
		var got bytes.Buffer
		if _, err := got.ReadFrom(r); err != nil || !bytes.Equal(got.Bytes(), long) {
			t.Fatalf("lzw early %v: %v, %d bytes of %d", early, err, got.Len(), len(long))
		}
		in, err := new(Decider).streamFinding(embeddedPDF(pdfLZW(append(long, testKey...), early), "/Filter /LZWDecode "+p), nil, nil)
		if err != nil || in == nil || in.Why != insideDocKey {
			t.Errorf("a key in LZW, early %v: %+v %v", early, in, err)
		}
	}
	// Go's LZW (GIF's) is LZWDecode without early change.
	var g bytes.Buffer
	w := golzw.NewWriter(&g, golzw.MSB, 8)
	w.Write(long)
	w.Close()
	var got bytes.Buffer
	got.ReadFrom(newLZW(bytes.NewReader(g.Bytes()), false))
	if !bytes.Equal(got.Bytes(), long) {
		t.Fatalf("Go's LZW: %d bytes of %d", got.Len(), len(long))
	}
	rl := pdfRunLength(append(bytes.Repeat([]byte{0}, 1000), testKey...))
	got.Reset()
	got.ReadFrom(&runLength{r: bufioOf(rl)})
	if !bytes.Equal(got.Bytes(), append(bytes.Repeat([]byte{0}, 1000), testKey...)) {
		t.Fatalf("run length: %q", got.Bytes())
	}
	cases := map[string][]byte{
		"run length":          embeddedPDF(rl, "/Filter /RunLengthDecode"),
		"rl in lzw":           embeddedPDF(pdfLZW(rl, true), "/Filter [/LZWDecode /RL]"),
		"lzw in flate in hex": embeddedPDF([]byte(hexOf(string(zlibOf(pdfLZW([]byte(testKey), true))))+">"), "/Filter [/AHx /Fl /LZW]"),
		"png up":              embeddedPDF(zlibOf(pngUp([]byte(testKey), 16)), "/Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 16 >>"),
	}
	for name, pdf := range cases {
		if in, err := new(Decider).streamFinding(pdf, nil, nil); err != nil || in == nil || in.Why != insideDocKey {
			t.Errorf("%s: %+v %v", name, in, err)
		}
	}
	if in, err := new(Decider).streamFinding(embeddedPDF(pdfRunLength(long), "/Filter /RunLengthDecode"), nil, nil); err != nil || in != nil {
		t.Errorf("plain run length: %+v %v", in, err)
	}
}

// pngUp encodes b in rows of cols bytes with PNG's Up predictor.
func pngUp(b []byte, cols int) []byte {
	var out []byte
	prev := make([]byte, cols)
	for i := 0; i < len(b); i += cols {
		row := make([]byte, cols)
		copy(row, b[i:min(i+cols, len(b))])
		out = append(out, 2)
		for j := range row {
			out = append(out, row[j]-prev[j])
		}
		prev = row
	}
	return out
}

func bufioOf(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// A PDF whose objects hold more values, or nest deeper, than a parse
// holds, or that names more encryption dictionaries than are tried, is
// unreadable, never searched in part.
func TestPDFObjectBounds(t *testing.T) {
	t.Parallel()
	var d Decider
	wide := append([]byte("%PDF-1.4\n9 0 obj\n["), bytes.Repeat([]byte("1 "), maxPDFValues+1)...)
	deep := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("1 0 obj [ "), 100)...)
	many := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("trailer << /Encrypt 5 0 R >>\n"), maxPDFEncrypts+1)...)
	for name, pdf := range map[string][]byte{"wide": append(wide, "]\nendobj\n"...), "deep": deep, "many": many} {
		if in, err := d.streamFinding(pdf, nil, nil); err != nil || in == nil || in.Why != insideDocUnreadable {
			t.Errorf("%s: %+v %v", name, in, err)
		}
	}
}
