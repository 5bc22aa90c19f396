package termsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// hostile holds every kind of rune a terminal acts on.
var hostile = []string{
	"\x1b[2K\rX\nfake 1\t", "bell\a", "del\x7f", "c1\u009b31m", "nel\u0085",
	"ls\u2028ps\u2029", "rlo\u202eexe.txt", "lri\u2066x\u2069", "lrm\u200e", "bad\xff\xfeutf8",
	"bom\ufeff", "nbsp\u00a0",
}

// raw reports whether s holds a byte or rune a terminal would act on.
func raw(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 ||
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0xfeff || r == 0xfffd {
			return true
		}
	}
	return false
}

func TestQuoteAndEscapeLeaveNothingRaw(t *testing.T) {
	t.Parallel()
	for _, s := range hostile {
		if Safe(s) {
			t.Errorf("Safe(%q)", s)
		}
		if q := Quote(s); raw(q) || !strings.HasPrefix(q, `"`) {
			t.Errorf("Quote(%q) = %q", s, q)
		}
		if e := Escape(s); raw(e) {
			t.Errorf("Escape(%q) = %q", s, e)
		}
	}
	for _, s := range []string{"src/main.go", "dir with spaces/ünïcödé 文件.txt", `back\slash`, ""} {
		if Quote(s) != s || Escape(s) != s {
			t.Errorf("a safe string changed: %q -> %q, %q", s, Quote(s), Escape(s))
		}
	}
	if q := Quote(`"quoted"`); q != `"\"quoted\""` {
		t.Errorf("a name that looks quoted is shown as %s", q)
	}
}

func TestJSONIsExactAndHarmless(t *testing.T) {
	t.Parallel()
	for _, s := range append(hostile, "plain", "emoji \U0001F600 and \U000E0001 tag") {
		in, _ := json.Marshal(map[string]string{"path": s})
		out := JSON(in)
		if raw(string(out)) || bytes.ContainsFunc(out, func(r rune) bool { return r > 0xffff && r == 0xE0001 }) {
			t.Errorf("JSON(%s) = %s", in, out)
		}
		var back map[string]string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("JSON(%s) = %s: %v", in, out, err)
		}
		var want map[string]string
		json.Unmarshal(in, &want)
		if back["path"] != want["path"] {
			t.Errorf("JSON changed the value: %q -> %q", want["path"], back["path"])
		}
	}
	indented := []byte("{\n\t\"a\": 1\r\n}")
	if got := JSON(indented); !bytes.Equal(got, indented) {
		t.Errorf("JSON's own white space changed: %q", got)
	}
}
