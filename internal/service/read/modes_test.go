package read

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/charset"
	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/testenv"
)

// TestDirectory: a directory read lists what the mount would show — sorted,
// "/" after directories — and nothing it hides is shown, counted or hinted:
// not a denied name, a private key, a FIFO, nor a link out of the root.
func TestDirectory(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write("src/b.go", "package b\n")
	f.write("src/a.go", "package a\n")
	f.write("src/sub/x.txt", "x\n")
	f.write("src/.env", "TOKEN=hidden\n")
	f.write("src/id_rsa.txt", pemKey)
	testenv.FIFO(t, filepath.Join(f.root, "src/fifo"))
	f.link(filepath.Join(f.outside, "secret.txt"), "src/escape")
	f.link("../../outside/secret.txt", "src/escape2")
	f.link("a.go", "src/alias")
	f.write("src/bad\x1b[2Jname", "x\n")
	res, err := f.read("src", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "<path>" + f.root + "/src</path>\n<type>directory</type>\n<content>\na.go\nalias\nb.go\nbad␛[2Jname\nsub/\n\n(End of directory - total 5 entries)\n</content>\n"
	if res.Text() != want {
		t.Fatalf("listing:\n%s\nwant:\n%s", res.Text(), want)
	}
	for _, hidden := range []string{".env", "id_rsa", "fifo", "escape", canary} {
		if strings.Contains(res.Text(), hidden) || strings.Contains(string(res.JSON()), hidden) {
			t.Errorf("the listing shows %q", hidden)
		}
	}
	if res.Observation.ContentID != nil || res.Observation.StatID != "" {
		t.Errorf("a listing made an observation: %+v", res.Observation)
	}
	var env Envelope
	if err := json.Unmarshal(res.JSON(), &env); err != nil || env.Type != "directory" || env.Directory == nil ||
		len(env.Directory.Entries) != 5 || env.Directory.Entries[4] != (Entry{Name: "sub", Type: "directory"}) || env.Directory.Entries[1].Type != "symlink" {
		t.Fatalf("JSON: %v %s", err, res.JSON())
	}

	// Paged like lines, with the same kind of footer and continuation.
	res, err = f.read("src", 2, 2)
	if err != nil || res.Footer != "(Showing entries 2-3 of 5. Use offset=4 to continue.)" ||
		res.Continuation == nil || *res.Continuation != (Continuation{Path: "src", Offset: 4, Limit: 2}) || !strings.HasPrefix(res.Body, "alias\nb.go\n\n") {
		t.Fatalf("page: %v %q %+v", err, res.Body, res.Continuation)
	}
	if _, err := f.read("src", 6, 0); refusal.CodeOf(err) != refusal.OffsetOutOfRange {
		t.Fatalf("offset past the entries: %v", err)
	}
	os.Mkdir(filepath.Join(f.root, "empty"), 0o755)
	if res, err := f.read("empty", 0, 0); err != nil || res.Footer != "(Empty directory)" {
		t.Fatalf("empty: %v %+v", err, res)
	}
	// Through a link inside the root, listed where it lands; a link to a
	// denied directory or out of the root is refused, as for a file.
	f.link("src", "srclink")
	if res, err := f.read("srclink", 0, 0); err != nil || !strings.Contains(res.Body, "a.go\n") {
		t.Fatalf("via a link: %v", err)
	}
	f.write(".ssh/config", "x\n")
	f.link(".ssh", "sshlink")
	f.link(f.outside, "outlink")
	for name, code := range map[string]refusal.Code{".ssh": refusal.Denied, "sshlink": refusal.Denied, "outlink": refusal.OutsideAllowedRoots, "../outside": refusal.OutsideAllowedRoots} {
		res, err := f.read(name, 0, 0)
		if refusal.CodeOf(err) != code {
			t.Errorf("%s: %v (%v), want %s", name, refusal.CodeOf(err), err, code)
		}
		if res != nil && strings.Contains(res.Body, "secret") {
			t.Errorf("%s lists the outside", name)
		}
	}
	// A directory asked for with a window is not a file to take lines of.
	if _, err := f.r.Read(Request{Path: "src", Cwd: f.root, Windows: []Range{{1, 2}}}); refusal.CodeOf(err) != refusal.NotAFile {
		t.Fatalf("windows of a directory: %v", err)
	}
}

// pemKey is a private key as the key scanner recognises one.
const pemKey = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----\n"

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString("line " + string(rune('a'+i%26)) + strings.Repeat("x", i%7) + "\n")
	}
	return b.String()
}

// TestWindows: several windows in one read, each with its own footer,
// merged where they touch, one version, and the caps over the whole answer.
func TestWindows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write("f.txt", numbered(100))
	res, err := f.r.Read(Request{Path: "f.txt", Cwd: f.root, Windows: []Range{{50, 52}, {3, 4}, {5, 6}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Parts) != 2 || res.Parts[0].Range != (Range{3, 6}) || res.Parts[1].Range != (Range{50, 52}) {
		t.Fatalf("parts: %+v", res.Parts)
	}
	if !strings.Contains(res.Body, "6: ") || !strings.Contains(res.Body, "(Showing lines 3-6 of 100. Use offset=7 to continue.)\n\n50: ") ||
		!strings.HasSuffix(res.Body, "(Showing lines 50-52 of 100. Use offset=53 to continue.)\n") {
		t.Fatalf("body:\n%s", res.Body)
	}
	if res.Observation.WholeFileVisible || res.Observation.ContentID == nil || *res.Observation.ContentID != *res.Parts[0].Observation.ContentID {
		t.Fatalf("observation: %+v", res.Observation)
	}
	var env Envelope
	if json.Unmarshal(res.JSON(), &env) != nil || len(env.Windows) != 2 || len(env.Windows[1].Lines) != 3 || env.Windows[1].Lines[0].N != 50 {
		t.Fatalf("JSON: %s", res.JSON())
	}
	// Windows covering the whole file are a whole-file view.
	all, err := f.r.Read(Request{Path: "f.txt", Cwd: f.root, Windows: []Range{{1, 60}, {61, 100}}})
	if err != nil || !all.Observation.WholeFileVisible {
		t.Fatalf("whole: %v %+v", err, all)
	}
	// The line cap holds over the whole answer.
	f.r.Guard.Policy().Limits.MaxLines = 4
	capped, err := f.r.Read(Request{Path: "f.txt", Cwd: f.root, Windows: []Range{{1, 3}, {10, 20}, {30, 31}}})
	f.r.Guard.Policy().Limits.MaxLines = 2000
	if err != nil || len(capped.Parts) != 2 || capped.Parts[1].Range != (Range{10, 10}) ||
		capped.Parts[1].Continuation == nil || *capped.Parts[1].Continuation != (Continuation{Path: "f.txt", Offset: 11, Limit: 10}) ||
		!strings.Contains(strings.Join(capped.Notes, "\n"), "windows from line 30 on were left out") {
		t.Fatalf("capped: %v %+v %v", err, capped, capped.Notes)
	}
	for _, bad := range [][]Range{{{0, 3}}, {{5, 4}}, make([]Range, MaxWindows+1)} {
		if _, err := f.r.Read(Request{Path: "f.txt", Cwd: f.root, Windows: bad}); refusal.CodeOf(err) != refusal.InvalidInput {
			t.Errorf("windows %v: %v", bad, err)
		}
	}
	if _, err := f.r.Read(Request{Path: "f.txt", Cwd: f.root, Windows: []Range{{1, 2}, {101, 102}}}); refusal.CodeOf(err) != refusal.OffsetOutOfRange {
		t.Errorf("a window past the end: %v", err)
	}
	if _, err := f.r.Read(Request{Path: "f.txt", Cwd: f.root, Offset: 3, Windows: []Range{{1, 2}}}); refusal.CodeOf(err) != refusal.InvalidInput {
		t.Errorf("offset with windows: %v", err)
	}
}

// TestAround: a window centred on an anchored line; a stale anchor is
// said, not silently centred on another line.
func TestAround(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	text := numbered(100)
	f.write("f.txt", text)
	line40 := strings.Split(text, "\n")[39]
	at := "40#" + lines.Anchor(line40)
	res, err := f.r.Read(Request{Path: "f.txt", Cwd: f.root, Around: at, Radius: 2, Anchors: true})
	if err != nil || res.Range != (Range{38, 42}) || len(res.Notes) != 0 || !strings.Contains(res.Body, at+": "+line40) {
		t.Fatalf("around: %v %+v\n%s", err, res, res.Body)
	}
	if res, err := f.r.Read(Request{Path: "f.txt", Cwd: f.root, Around: "2#00"}); err != nil || res.Range != (Range{1, 12}) {
		t.Fatalf("near the top: %v %+v", err, res)
	}
	f.write("f.txt", strings.Replace(text, line40, line40+" changed", 1))
	res, err = f.r.Read(Request{Path: "f.txt", Cwd: f.root, Around: at, Radius: 2})
	if err != nil || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "line 40 is now 40#") {
		t.Fatalf("stale anchor: %v %v", err, res.Notes)
	}
	for _, bad := range []Request{{Around: "40"}, {Around: "x#aa"}, {Around: "40#aa", Radius: -1}, {Radius: 3}} {
		bad.Path, bad.Cwd = "f.txt", f.root
		if _, err := f.r.Read(bad); refusal.CodeOf(err) != refusal.InvalidInput {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// TestBlock: the enclosing block by indentation, capped by the limit.
func TestBlock(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write("m.go", "package m\n\n// F does.\nfunc F() {\n\tif true {\n\t\tprintln()\n\t}\n}\n\nfunc G() {}\n")
	res, err := f.r.Read(Request{Path: "m.go", Cwd: f.root, Block: 6})
	if err != nil || res.Range != (Range{5, 7}) {
		t.Fatalf("block: %v %+v", err, res)
	}
	res, err = f.r.Read(Request{Path: "m.go", Cwd: f.root, Block: 4, Limit: 2})
	if err != nil || res.Range != (Range{3, 4}) || res.Continuation == nil || *res.Continuation != (Continuation{Path: "m.go", Offset: 5, Limit: 4}) {
		t.Fatalf("capped block: %v %+v %+v", err, res, res.Continuation)
	}
	if _, err := f.r.Read(Request{Path: "m.go", Cwd: f.root, Block: 99}); refusal.CodeOf(err) != refusal.OffsetOutOfRange {
		t.Fatalf("block past the end: %v", err)
	}
}

// TestWideText: UTF-16 and UTF-32 with a BOM are shown decoded, their
// contentId is of the file's bytes, and a malformed one is ENCODING.
func TestWideText(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	text := "héllo\r\nwörld 𝄞\n"
	for _, e := range []charset.Encoding{charset.UTF16LE, charset.UTF16BE, charset.UTF32LE, charset.UTF32BE} {
		data, _ := charset.Encode([]byte(text), e)
		name := string(e) + ".txt"
		f.write(name, string(data))
		res, err := f.read(name, 0, 0)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		if !strings.HasPrefix(res.Body, "1: héllo\n2: wörld 𝄞\n\n(End of file - total 2 lines)") {
			t.Errorf("%s: %q", e, res.Body)
		}
		if want := fileid.ContentID(sha256.Sum256(data)); res.Observation.ContentID == nil || *res.Observation.ContentID != want || res.Totals.Bytes != int64(len(data)) {
			t.Errorf("%s: contentId %v, bytes %d; want %s, %d", e, res.Observation.ContentID, res.Totals.Bytes, want, len(data))
		}
		if !res.Observation.WholeFileVisible {
			t.Errorf("%s: not a whole view", e)
		}
	}
	// A key in UTF-16 is still a key.
	key, _ := charset.Encode([]byte(pemKey), charset.UTF16LE)
	f.write("key16.txt", string(key))
	f.refused("key16.txt", refusal.Denied)
}

// TestNotebook: cells with their outputs, images and long outputs
// described, paged by cells; the observation is of the file's bytes and
// never a whole view.
func TestNotebook(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	long := make([]string, 100)
	for i := range long {
		long[i] = "row\n"
	}
	nb := map[string]any{
		"nbformat": 4, "nbformat_minor": 5,
		"metadata": map[string]any{"language_info": map[string]any{"name": "python"}},
		"cells": []any{
			map[string]any{"cell_type": "markdown", "source": []string{"# Title\n", "intro"}},
			map[string]any{"cell_type": "code", "execution_count": 3, "source": "print('hi')", "outputs": []any{
				map[string]any{"output_type": "stream", "name": "stdout", "text": []string{"hi\n"}},
				map[string]any{"output_type": "display_data", "data": map[string]any{"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}},
			}},
			map[string]any{"cell_type": "code", "source": "1/0", "outputs": []any{
				map[string]any{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero", "traceback": []string{"\x1b[31mTraceback\x1b[0m"}},
				map[string]any{"output_type": "stream", "name": "stdout", "text": long},
			}},
		},
	}
	data, _ := json.Marshal(nb)
	f.write("a.ipynb", string(data))
	res, err := f.read("a.ipynb", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[cell 1] markdown\n# Title\nintro\n", "[cell 2] code (In [3])\nprint('hi')\n[output 1] stdout\nhi\n[output 2] text/plain\n<Figure>\n[output 2] image/png, 14 bytes (not shown)\n",
		"[output 1] error: ZeroDivisionError: division by zero\nTraceback\n", "... (60 more lines of output not shown)", "(End of notebook - total 3 cells)"} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("missing %q in:\n%s", want, res.Body)
		}
	}
	if res.Kind() != "notebook" || res.Observation.WholeFileVisible || *res.Observation.ContentID != fileid.ContentID(sha256.Sum256(data)) {
		t.Errorf("observation: %+v", res.Observation)
	}
	if strings.Contains(res.Body, "\x1b") {
		t.Error("an escape sequence reached the text")
	}
	res, err = f.read("a.ipynb", 2, 1)
	if err != nil || res.Footer != "(Showing cells 2-2 of 3. Use offset=3 to continue.)" || res.Range != (Range{2, 2}) {
		t.Fatalf("page: %v %+v", err, res)
	}
	// Not a notebook after all: shown as text, said so.
	f.write("b.ipynb", "{not json\n")
	if res, err := f.read("b.ipynb", 0, 0); err != nil || res.Kind() != "file" || !strings.Contains(strings.Join(res.Notes, " "), "shown as text") {
		t.Fatalf("broken notebook: %v %+v", err, res)
	}
	// A key in an output is refused like any key.
	nb["cells"] = []any{map[string]any{"cell_type": "code", "source": "", "outputs": []any{map[string]any{"output_type": "stream", "name": "stdout", "text": pemKey}}}}
	data, _ = json.Marshal(nb)
	f.write("k.ipynb", string(data))
	f.refused("k.ipynb", refusal.Denied)
}
