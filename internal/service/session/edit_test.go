package session

import (
	"fmt"
	"github.com/fsguard/fsguard/internal/service/edit"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/service/read"
	"github.com/fsguard/fsguard/internal/store/journal"
)

func (e *env) anchoredRead(name string, offset, limit int64) *ReadResult {
	e.t.Helper()
	r, err := e.svc.Read(ReadRequest{Request: read.Request{Path: name, Offset: offset, Limit: limit, Cwd: e.root, Anchors: true}, Session: "s1"})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) edit(name string, ed edit.Edit) (*EditResult, refusal.Code) {
	e.t.Helper()
	r, err := e.svc.Edit(name, e.root, "s1", ed)
	return r, refusal.CodeOf(err)
}

func (e *env) content(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// at returns the anchor of line n of content, as an --anchors read shows it.
func at(content string, n int) string {
	_, split := lines.Split([]byte(content))
	return fmt.Sprintf("%d#%s", n, lines.Anchor(split[n-1].Text))
}

func TestAnchoredReadShowsAnchors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "alpha\nbeta\n")
	r := e.anchoredRead("a.txt", 0, 0)
	want := fmt.Sprintf("1#%s: alpha\n2#%s: beta\n", lines.Anchor("alpha"), lines.Anchor("beta"))
	if !strings.HasPrefix(r.Body, want) {
		t.Fatalf("body %q, want prefix %q", r.Body, want)
	}
	if js := string(r.JSON()); !strings.Contains(js, `"anchor":"`+lines.Anchor("beta")+`"`) {
		t.Fatalf("JSON lacks anchors: %s", js)
	}
	// A plain read of the same lines does not hand over anchors: an
	// anchored re-read is answered with lines, then with a notice.
	e.write("b.txt", "one line long enough to be worth a notice\ntwo lines long enough to be worth a notice\n")
	e.read("b.txt", 0, 0)
	if r := e.anchoredRead("b.txt", 0, 0); r.Notice != "" {
		t.Fatal("an anchored read was told it holds anchors it was never shown")
	}
	if r := e.anchoredRead("b.txt", 0, 0); r.Notice == "" {
		t.Fatal("a repeated anchored read was sent again")
	}
}

func TestAnchoredEdits(t *testing.T) {
	t.Parallel()
	v1 := numbered(100, nil)
	tests := []struct {
		name     string
		external map[int]string // applied to the file after the read
		edit     func(v1 string) edit.Edit
		code     refusal.Code
		want     map[int]string // the edit on top of external, in numbered() terms
	}{
		{"replace one line", nil,
			func(v string) edit.Edit { return edit.Edit{Op: "replace", From: at(v, 50), Text: "fifty"} }, "",
			map[int]string{50: "fifty"}},
		{"replace a range with more lines", nil,
			func(v string) edit.Edit {
				return edit.Edit{Op: "replace", From: at(v, 10), To: at(v, 12), Text: "a\nb\nc\nd\n"}
			}, "",
			map[int]string{10: "a\nb\nc\nd", 11: "", 12: ""}},
		{"insert after", nil,
			func(v string) edit.Edit { return edit.Edit{Op: "insert", From: at(v, 100), Text: "after the end"} }, "",
			map[int]string{100: "line 100 of the file\nafter the end"}},
		{"insert before line 1", nil,
			func(v string) edit.Edit { return edit.Edit{Op: "insert", From: "0", Text: "first"} }, "",
			map[int]string{1: "first\nline 1 of the file"}},
		{"delete a range", nil,
			func(v string) edit.Edit { return edit.Edit{Op: "delete", From: at(v, 2), To: at(v, 4)} }, "",
			map[int]string{2: "", 3: "", 4: ""}},
		{"after an unrelated change, with lines shifted", map[int]string{5: "line 5 of the file\ninserted", 80: "eighty, changed elsewhere"},
			func(v string) edit.Edit { return edit.Edit{Op: "replace", From: at(v, 50), Text: "fifty"} }, "",
			map[int]string{5: "line 5 of the file\ninserted", 80: "eighty, changed elsewhere", 50: "fifty"}},
		{"after a change to the anchored line", map[int]string{50: "changed under the agent"},
			func(v string) edit.Edit { return edit.Edit{Op: "replace", From: at(v, 50), Text: "fifty"} }, refusal.StaleVersion, nil},
		{"after a change inside the anchored range", map[int]string{11: "changed under the agent"},
			func(v string) edit.Edit { return edit.Edit{Op: "delete", From: at(v, 10), To: at(v, 12)} }, refusal.StaleVersion, nil},
		{"after a line was inserted inside the range", map[int]string{11: "line 11 of the file\nwedged in"},
			func(v string) edit.Edit { return edit.Edit{Op: "delete", From: at(v, 10), To: at(v, 12)} }, refusal.StaleVersion, nil},
		{"a wrong anchor", nil,
			func(v string) edit.Edit { return edit.Edit{Op: "replace", From: "50#" + wrongHash(v, 50), Text: "x"} }, refusal.StaleVersion, nil},
		{"a malformed anchor", nil,
			func(v string) edit.Edit { return edit.Edit{Op: "replace", From: "fifty", Text: "x"} }, refusal.InvalidInput, nil},
		{"past the end", nil,
			func(v string) edit.Edit { return edit.Edit{Op: "delete", From: "101#00"} }, refusal.InvalidInput, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("f.txt", v1)
			e.anchoredRead("f.txt", 0, 0)
			if tt.external != nil {
				e.write("f.txt", numbered(100, tt.external))
			}
			before := e.content("f.txt")
			res, code := e.edit("f.txt", tt.edit(v1))
			if code != tt.code {
				t.Fatalf("code %q, want %q", code, tt.code)
			}
			if tt.code != "" {
				if e.content("f.txt") != before {
					t.Fatal("a refused edit changed the file")
				}
				return
			}
			if got, want := e.content("f.txt"), numbered(100, tt.want); got != want {
				t.Fatalf("file is\n%s\nwant\n%s", got, want)
			}
			if res.Elsewhere != (tt.external != nil) {
				t.Fatalf("Elsewhere = %v", res.Elsewhere)
			}
			// The answer's anchors are the new version's: an edit through
			// them works without a re-read.
			first := strings.SplitN(res.Shown, ": ", 2)[0]
			if _, code := e.edit("f.txt", edit.Edit{Op: "insert", From: first, Text: "chained"}); code != "" {
				t.Fatalf("an edit through the answer's anchor %s: %s\n%s", first, code, res.Shown)
			}
		})
	}
}

func wrongHash(v string, n int) string {
	h := at(v, n)[len(fmt.Sprint(n))+1:]
	if h == "00" {
		return "01"
	}
	return "00"
}

func TestEditNeedsTheLinesShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := numbered(100, nil)
	e.write("f.txt", v)
	if _, code := e.edit("f.txt", edit.Edit{Op: "replace", From: at(v, 50), Text: "x"}); code != refusal.NotObserved {
		t.Fatalf("never read: %s", code)
	}
	e.anchoredRead("f.txt", 1, 10)
	if _, code := e.edit("f.txt", edit.Edit{Op: "replace", From: at(v, 50), Text: "x"}); code != refusal.NotObserved {
		t.Fatalf("line never shown: %s", code)
	}
	if _, code := e.edit("f.txt", edit.Edit{Old: "line 50 of the file", New: "x"}); code != refusal.NotObserved {
		t.Fatalf("exact text on a line never shown: %s", code)
	}
	if _, code := e.edit("f.txt", edit.Edit{Op: "replace", From: at(v, 5), Text: "x"}); code != "" {
		t.Fatalf("a line that was shown: %s", code)
	}
}

func TestExactTextEdits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("f.txt", "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n// a comment long enough that a notice is shorter than the file\n")
	e.read("f.txt", 0, 0)
	if _, code := e.edit("f.txt", edit.Edit{Old: "\treturn 1\n", New: "\treturn 2\n"}); code != refusal.EditAmbiguous {
		t.Fatalf("two matches: %s", code)
	}
	if _, code := e.edit("f.txt", edit.Edit{Old: "return 3", New: "x"}); code != refusal.EditNoMatch {
		t.Fatalf("no match: %s", code)
	}
	if _, code := e.edit("f.txt", edit.Edit{Old: "", New: "x"}); code != refusal.InvalidInput {
		t.Fatalf("empty old text: %s", code)
	}
	res, code := e.edit("f.txt", edit.Edit{Old: "func b() {\n\treturn 1", New: "func b() {\n\treturn 2"})
	if code != "" {
		t.Fatalf("one match: %s", code)
	}
	if got := e.content("f.txt"); got != "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 2\n}\n// a comment long enough that a notice is shorter than the file\n" {
		t.Fatalf("file: %q", got)
	}
	if res.Start != 6 || res.End != 6 || res.Moved != 0 {
		t.Fatalf("edited %d-%d moved %d", res.Start, res.End, res.Moved)
	}
	// The edit leaves the session holding the whole new version: a
	// re-read is a notice, and a write needs no re-read.
	if r := e.read("f.txt", 0, 0); r.Notice == "" {
		t.Fatal("re-read after an edit of a wholly held file was sent again")
	}
	if c := e.check("f.txt"); c != "" {
		t.Fatalf("check after edit: %s", c)
	}
	recs, _ := e.svc.Journal.Query(journal.Filter{Session: "s1"})
	if last := recs[len(recs)-2]; last.Origin != journal.OriginEdit || last.ContentID != res.ContentID {
		t.Fatalf("edit record: %+v", last)
	}
}

// An exact-text edit works on lines the session holds as they are now,
// even after an unrelated change; on a line that changed it is stale.
func TestExactTextAfterChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("f.txt", numbered(100, nil))
	e.read("f.txt", 0, 0)
	e.write("f.txt", numbered(100, map[int]string{3: "line 3 of the file\nnew", 90: "line 90 of the file, changed"}))
	// The text still matches, but on a line that changed since.
	if _, code := e.edit("f.txt", edit.Edit{Old: "line 90 of the file", New: "90"}); code != refusal.StaleVersion {
		t.Fatalf("a line changed under the agent: %s", code)
	}
	if _, code := e.edit("f.txt", edit.Edit{Old: "line 50 of the file", New: "fifty"}); code != "" {
		t.Fatalf("unrelated change: %s", code)
	}
	if got, want := e.content("f.txt"), numbered(100, map[int]string{3: "line 3 of the file\nnew", 90: "line 90 of the file, changed", 50: "fifty"}); got != want {
		t.Fatalf("file:\n%s", got)
	}
}

func TestEditKeepsLineEndings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		edit     func(in string) edit.Edit
		want     string
	}{
		{"CRLF, anchored replace with LF text", "a\r\nb\r\nc\r\n",
			func(in string) edit.Edit { return edit.Edit{Op: "replace", From: at(in, 2), Text: "x\ny\n"} }, "a\r\nx\r\ny\r\nc\r\n"},
		{"CRLF, exact text with LF", "a\r\nb\r\nc\r\n",
			func(string) edit.Edit { return edit.Edit{Old: "a\nb", New: "a\nB\nb2"} }, "a\r\nB\r\nb2\r\nc\r\n"},
		{"CRLF, no final newline, insert after the last", "a\r\nb",
			func(in string) edit.Edit { return edit.Edit{Op: "insert", From: at(in, 2), Text: "c"} }, "a\r\nb\r\nc"},
		{"CRLF, delete the last line", "a\r\nb\r\n",
			func(in string) edit.Edit { return edit.Edit{Op: "delete", From: at(in, 2)} }, "a\r\n"},
		{"LF, no final newline kept", "a\nb",
			func(in string) edit.Edit { return edit.Edit{Op: "replace", From: at(in, 2), Text: "B"} }, "a\nB"},
		{"a BOM stays", "\xEF\xBB\xBFa\r\nb\r\n",
			func(in string) edit.Edit { return edit.Edit{Op: "replace", From: at(in, 1), Text: "A"} }, "\xEF\xBB\xBFA\r\nb\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("f.txt", tt.in)
			e.anchoredRead("f.txt", 0, 0)
			if _, code := e.edit("f.txt", tt.edit(tt.in)); code != "" {
				t.Fatal(code)
			}
			if got := e.content("f.txt"); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// A change between the edit's read of the file and the rename is caught:
// the edit is refused and the other writer's bytes stand.
func TestEditRaceIsCaught(t *testing.T) {
	e := newEnv(t)
	v := numbered(20, nil)
	p := e.write("f.txt", v)
	e.anchoredRead("f.txt", 0, 0)
	beforeRename = func() { os.WriteFile(p, []byte("someone else\n"), 0o644) }
	defer func() { beforeRename = func() {} }()
	if _, code := e.edit("f.txt", edit.Edit{Op: "replace", From: at(v, 3), Text: "x"}); code != refusal.StaleVersion {
		t.Fatalf("code %s", code)
	}
	if got := e.content("f.txt"); got != "someone else\n" {
		t.Fatalf("the other writer's content was clobbered: %q", got)
	}
}

// Once the version the session read is evicted, an anchored edit of a file
// that changed since cannot map its anchors: it is refused, never guessed.
func TestEditAgainstEvictedVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := numbered(100, nil)
	e.write("f.txt", v)
	e.anchoredRead("f.txt", 0, 0)
	e.svc.Held = nil // as if evicted
	e.write("f.txt", numbered(100, map[int]string{90: "changed"}))
	if _, code := e.edit("f.txt", edit.Edit{Op: "replace", From: at(v, 50), Text: "x"}); code != refusal.StaleVersion {
		t.Fatalf("code %s", code)
	}
}
