package read

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/testenv"
)

// fixture is a root with an outside directory beside it.
type fixture struct {
	t       *testing.T
	root    string
	outside string
	r       *Reader
}

const canary = "CANARY-outside-the-root"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{t: t, root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{f.root, f.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.write(filepath.Join(f.outside, "secret.txt"), canary+"\n")
	p, err := policy.Default(f.root)
	if err != nil {
		t.Fatal(err)
	}
	g, err := roots.New(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	f.r = &Reader{Guard: g}
	return f
}

func (f *fixture) write(path, content string) string {
	f.t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(f.root, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return path
}

func (f *fixture) link(target, name string) {
	f.t.Helper()
	p := filepath.Join(f.root, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(target, p); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) read(name string, offset, limit int64) (*Result, error) {
	return f.r.Read(Request{Path: name, Offset: offset, Limit: limit, Cwd: f.root})
}

// refused asserts a read is refused with code, and that no byte of the
// canary reaches the message.
func (f *fixture) refused(name string, code refusal.Code) error {
	f.t.Helper()
	res, err := f.read(name, 0, 0)
	if err == nil {
		f.t.Fatalf("read %q: got content %q, want %s", name, res.Body, code)
	}
	if got := refusal.CodeOf(err); got != code {
		f.t.Fatalf("read %q: got %s (%v), want %s", name, got, err, code)
	}
	if strings.Contains(err.Error(), canary) {
		f.t.Fatalf("refusal leaks content: %v", err)
	}
	return err
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write("ok.txt", "fine\n")
	f.write(".env", "SECRET=1\n")
	f.write("sub/.ssh/config", "Host x\n")
	f.write("notes.txt", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n")
	f.write("late-key.txt", strings.Repeat("harmless text\n", 2000)+"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n")
	f.write("bin.dat", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00>\x00")
	f.write("img.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
	f.write("utf16.txt", "\xff\xfeh\x00i\x00\x00\xdc\n\x00") // a lone low surrogate
	f.write("latin1.txt", "caf\xe9 cr\xe8me\n")
	f.link(filepath.Join(f.outside, "secret.txt"), "abs-link")
	f.link("../outside/secret.txt", "rel-link")
	f.link("chain2", "chain1")
	f.link("../outside", "chain2")
	f.link("loop2", "loop1")
	f.link("loop1", "loop2")
	f.link(".env", "env-link")
	f.link("/dev/zero", "zero")
	f.link("/proc/self/environ", "environ")
	f.link(f.outside, "outdir")
	f.link("ok.txt", "good-link")
	testenv.FIFO(t, filepath.Join(f.root, "fifo"))
	l, err := net.Listen("unix", filepath.Join(f.root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Mkdir(filepath.Join(f.root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		code refusal.Code
	}{
		{"", refusal.InvalidInput},
		{"   ", refusal.InvalidInput},
		{"ok\x00.txt", refusal.InvalidInput},
		{"bad\xffname", refusal.InvalidInput},
		{"missing.txt", refusal.NotFound},
		{"ok.txt/child", refusal.NotFound},
		{"../outside/secret.txt", refusal.OutsideAllowedRoots},
		{f.outside + "/secret.txt", refusal.OutsideAllowedRoots},
		{"sub/../../outside/secret.txt", refusal.OutsideAllowedRoots},
		{"abs-link", refusal.OutsideAllowedRoots},
		{"rel-link", refusal.OutsideAllowedRoots},
		{"chain1/secret.txt", refusal.OutsideAllowedRoots},
		{"outdir/secret.txt", refusal.OutsideAllowedRoots},
		{"loop1", refusal.NotFound},
		{".env", refusal.Denied},
		{"env-link", refusal.Denied},
		{"sub/.ssh/config", refusal.Denied},
		{"sub/.ssh", refusal.Denied},
		{"notes.txt", refusal.Denied},
		{"late-key.txt", refusal.Denied},
		{"zero", refusal.DangerousPath},
		{"environ", refusal.DangerousPath},
		{"/proc/self/environ", refusal.DangerousPath},
		{"/dev/zero", refusal.DangerousPath},
		{"fifo", refusal.NotAFile},
		{"sock", refusal.NotAFile},
		{"bin.dat", refusal.Binary},
		{"utf16.txt", refusal.Encoding},
		{"latin1.txt", refusal.Encoding},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.name), func(t *testing.T) {
			f.t = t
			f.refused(tt.name, tt.code)
		})
	}
	f.t = t
	if res, err := f.read("good-link", 0, 0); err != nil || !strings.Contains(res.Body, "1: fine") {
		t.Fatalf("in-root link: %v", err)
	}
}

// TestFIFODoesNotBlock: a FIFO, named or reached through a link, is
// refused without blocking: no writer ever comes, so a read that opened it
// for reading would wait forever, and the hang guard fails the test. How
// fast a refusal is, BenchmarkRefuseFIFO measures.
func TestFIFODoesNotBlock(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	testenv.FIFO(t, filepath.Join(f.root, "fifo"))
	f.link("fifo", "to-fifo")
	for _, name := range []string{"fifo", "to-fifo"} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.read(name, 0, 0)
		}()
		select {
		case <-done:
		case <-time.After(testenv.HangGuard):
			t.Fatalf("reading %s still blocks after %v", name, testenv.HangGuard)
		}
		f.refused(name, refusal.NotAFile)
	}
}

func TestMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write("a.txt", "x\n")
	f.write("main.go", "package main\n")
	f.write(".env.local", "S=1\n")
	os.Mkdir(filepath.Join(f.root, "d"), 0o755)
	tests := []struct {
		name, want string
	}{
		{"nothere", `cannot read "` + f.root + `/nothere": not found`},
		{"main.g", `did you mean "` + f.root + `/main.go"?`},
	}
	for _, tt := range tests {
		_, err := f.read(tt.name, 0, 0)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
	_, err := f.read("a.txt", 3, 0)
	if err == nil || err.Error() != fmt.Sprintf(`offset 3 is out of range for %q (1 lines)`, f.root+"/a.txt") {
		t.Fatalf("offset out of range: %v", err)
	}
	if refusal.CodeOf(err) != refusal.OffsetOutOfRange {
		t.Fatalf("code %s", refusal.CodeOf(err))
	}
	_, err = f.read("a.txt", 1<<62, 0)
	if refusal.CodeOf(err) != refusal.OffsetOutOfRange {
		t.Fatalf("huge offset: %v", err)
	}
}

// TestSuggestionsNeverNameHidden: a near name that the policy hides is
// never offered, though a visible one is.
func TestSuggestionsNeverNameHidden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write(".env", "S=1\n")
	f.write(".envrc", "use nix\n")
	f.write("key.pem", "x\n")
	f.write("key.txt", "x\n")
	f.link("../outside/secret.txt", "secret.txt")
	testenv.FIFO(t, filepath.Join(f.root, "secret.fifo"))
	for _, name := range []string{".enw", "key.pen", "secret.tx", "secre"} {
		_, err := f.read(name, 0, 0)
		msg := err.Error()
		for _, hidden := range []string{`/.env"`, "key.pem", "secret.txt", "secret.fifo"} {
			if strings.Contains(msg, hidden) {
				t.Errorf("%q: suggestion names hidden %s: %s", name, hidden, msg)
			}
		}
	}
	_, err := f.read(".envr", 0, 0)
	if !strings.Contains(err.Error(), ".envrc") {
		t.Errorf("visible near name not suggested: %v", err)
	}
	// Unicode-equivalent spelling comes first.
	f.write("caf\u00e9.txt", "x\n")
	f.write("cafe.txt", "x\n")
	_, err = f.read("cafe\u0301.txt", 0, 0)
	if !regexp.MustCompile(`did you mean "[^"]*caf\x{e9}\.txt"`).MatchString(err.Error()) {
		t.Errorf("NFD spelling: %v", err)
	}
}

func TestEnvelopeAndFooters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write("three.txt", "a\nb\nc\n")
	res, err := f.read("three.txt", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "<path>" + f.root + "/three.txt</path>\n<type>file</type>\n<content>\n1: a\n2: b\n3: c\n\n(End of file - total 3 lines)\n</content>\n"
	if res.Text() != want {
		t.Fatalf("envelope:\n%s\nwant:\n%s", res.Text(), want)
	}
	if !res.Observation.WholeFileVisible || res.Observation.ContentID == nil {
		t.Fatalf("observation: %+v", res.Observation)
	}
	res, _ = f.read("three.txt", 2, 1)
	if res.Footer != "(Showing lines 2-2 of 3. Use offset=3 to continue.)" || res.Observation.WholeFileVisible {
		t.Fatalf("line footer: %q", res.Footer)
	}
	f.write("empty.txt", "")
	res, err = f.read("empty.txt", 0, 0)
	if err != nil || res.Footer != "(End of file - total 0 lines)" || len(res.Notes) == 0 {
		t.Fatalf("empty: %v %+v", err, res)
	}
	// Clamped limit is noted.
	res, _ = f.read("three.txt", 1, 5000)
	if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "clamped to max_lines 2000") {
		t.Fatalf("limit clamp note: %v", res.Notes)
	}
}

// TestPageToEnd follows each footer's offset exactly over a 2000+ line file
// and checks that every line is seen once, in order.
func TestPageToEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var b strings.Builder
	for i := 1; i <= 2345; i++ {
		fmt.Fprintf(&b, "line %d %s\n", i, strings.Repeat("x", i%97))
	}
	f.write("big.txt", b.String())
	next, seen := int64(1), 0
	footer := regexp.MustCompile(`Use offset=(\d+) to continue\.\)$`)
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("did not reach the end")
		}
		res, err := f.read("big.txt", next, 300)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range res.Lines {
			seen++
			if l.N != int64(seen) || !strings.HasPrefix(l.Text, fmt.Sprintf("line %d ", seen)) {
				t.Fatalf("got line %d %q, want line %d", l.N, l.Text, seen)
			}
		}
		m := footer.FindStringSubmatch(res.Footer)
		if m == nil {
			if res.Footer != "(End of file - total 2345 lines)" {
				t.Fatalf("last footer %q", res.Footer)
			}
			break
		}
		next, _ = strconv.ParseInt(m[1], 10, 64)
		if res.Continuation == nil || res.Continuation.Offset != next {
			t.Fatalf("continuation %+v disagrees with footer %q", res.Continuation, res.Footer)
		}
	}
	if seen != 2345 {
		t.Fatalf("saw %d lines", seen)
	}
	// The byte cap pages too: 60 KiB of short lines in a 50 KiB cap.
	res, err := f.read("big.txt", 1, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Footer, "(Output capped. Showing lines 1-") || res.Truncation.Reason != "bytes" {
		t.Fatalf("byte cap footer %q", res.Footer)
	}
}

func TestLineEndings(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for name, content := range map[string]string{"crlf.txt": "one\r\ntwo\r\nthree\r\n", "cr.txt": "one\rtwo\rthree"} {
		f.write(name, content)
		res, err := f.read(name, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Body, "1: one\n2: two\n3: three\n\n(End of file - total 3 lines)") {
			t.Fatalf("%s: %q", name, res.Body)
		}
	}
}

func TestLongLineAndLateBadUTF8(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	long := strings.Repeat("0123456789", 1<<20) // 10 MB single line
	f.write("long.txt", long)
	res, err := f.read("long.txt", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lines) != 1 || !res.Lines[0].Truncated || len(res.Lines[0].Text) != 2000 ||
		!strings.Contains(res.Body, "... (line truncated to 2000 chars)") || res.Observation.WholeFileVisible {
		t.Fatalf("long line: %d lines, trunc=%v", len(res.Lines), res.Lines[0].Truncated)
	}
	bad := []byte(strings.Repeat("a", 999_999) + "\n")
	bad = append(bad[:1_000_000], 0xC3, 0x28, '\n')
	path := f.write("bad.txt", string(bad))
	_ = path
	_, err = f.read("bad.txt", 0, 0)
	if refusal.CodeOf(err) != refusal.Encoding || !strings.Contains(err.Error(), "byte 1000000") {
		t.Fatalf("late bad UTF-8: %v", err)
	}
}

// TestChangedDuringRead: a file whose identity moves between open and the
// end of the scan is refused.
func TestChangedDuringRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	path := f.write("grow.txt", strings.Repeat("line\n", 1000))
	fh, err := f.r.Guard.Open("grow.txt", f.root)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := os.WriteFile(path, []byte("short\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = verify(fh, mustScan(t, fh).Bytes)
	if refusal.CodeOf(err) != refusal.ChangedDuringRead {
		t.Fatalf("got %v", err)
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write("a.txt", "x\ny\n")
	res, _ := f.read("a.txt", 1, 1)
	js := string(res.JSON())
	for _, want := range []string{`"status":"ok"`, `"continuation":{"path":"a.txt","offset":2,"limit":1}`, `"totals":{"lines":2,`, `"observation":{"statId":"`, `"wholeFileVisible":false`} {
		if !strings.Contains(js, want) {
			t.Errorf("JSON lacks %s: %s", want, js)
		}
	}
	_, err := f.read(".env", 0, 0)
	js = string(ErrorJSON(".env", err, nil))
	if !bytes.Contains([]byte(js), []byte(`"status":"error","code":"DENIED"`)) {
		t.Errorf("error JSON: %s", js)
	}
}

func mustScan(t *testing.T, fh *roots.File) *lines.Result {
	t.Helper()
	s, err := lines.Scan(io.NewSectionReader(fh, 0, 1<<62), lines.Options{Offset: 1, Limit: 10, MaxLineChars: 100, MaxBytes: 10000, MaxScanBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestImages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var pngBuf bytes.Buffer
	png.Encode(&pngBuf, image.NewRGBA(image.Rect(0, 0, 3, 2)))
	png1x1 := pngBuf.String()
	gif := "GIF89a\x05\x00\x04\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x05\x00\x04\x00\x00\x02\x02D\x01\x00;"
	webp := "RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x09\xc0\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	for name, tc := range map[string]struct {
		content, mime string
		w, h          int
	}{
		"a.png": {png1x1, "image/png", 3, 2}, "b.gif": {gif, "image/gif", 5, 4}, "c.webp": {webp, "image/webp", 10, 8},
	} {
		f.write(name, tc.content)
		res, err := f.read(name, 0, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := fmt.Sprintf("(Image: %s, %dx%d pixels, %d bytes.", tc.mime, tc.w, tc.h, len(tc.content))
		if !strings.Contains(res.Text(), "<type>image</type>") || !strings.Contains(res.Body, want) {
			t.Errorf("%s: %q, want %q", name, res.Text(), want)
		}
		if string(res.Image.Data) != tc.content || !strings.Contains(string(res.JSON()), `"base64":"`) {
			t.Errorf("%s: image bytes not returned", name)
		}
	}
	// Larger than max_media_bytes: described, bytes withheld.
	f.r.Guard.Policy().Limits.MaxMediaBytes = 10
	res, _ := f.read("a.png", 0, 0)
	if res.Image.Data != nil || !strings.Contains(res.Body, "larger than max_media_bytes") || res.Observation.WholeFileVisible {
		t.Errorf("large image: %q", res.Body)
	}
	// A PNG signature and nothing else: no dimensions are made up.
	f.r.Guard.Policy().Limits.MaxMediaBytes = 5 << 20
	f.write("sig.png", "\x89PNG\r\n\x1a\n")
	if res, err := f.read("sig.png", 0, 0); err != nil || !strings.Contains(res.Body, "dimensions unreadable") || strings.Contains(res.Body, "0x0") {
		t.Errorf("a bare PNG signature: %v %q", err, res.Body)
	}
}
