package session

import (
	"io"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/refusal"
)

// The agent is shown a file with its credentials masked; what it writes
// back must keep the real secrets wherever their masks came back as they
// were shown, and is refused wherever a mask would be written as a value.
func TestRestorePutsSecretsBack(t *testing.T) {
	t.Parallel()
	raw := "a = 1\ntoken = \"ghp_SECRETsecretSECRETsecretSECRETsecret\"\r\nurl = \"https://u:hunter2hunter2@db\"\nz = 2\n"
	shown := "a = 1\ntoken = \"ghp_************************************\"\r\nurl = \"https://u:**************@db\"\nz = 2\n"
	if len(raw) != len(shown) {
		t.Fatal("fixture: masks keep the length")
	}
	cases := []struct {
		name, next, want string
		code             refusal.Code
	}{
		{"written back whole", shown, raw, ""},
		{"another line edited", strings.Replace(shown, "a = 1", "a = 100", 1), strings.Replace(raw, "a = 1", "a = 100", 1), ""},
		{"lines inserted around", "# head\n" + shown + "tail\n", "# head\n" + raw + "tail\n", ""},
		{"the masked line itself edited, mask kept", strings.Replace(shown, "token = ", "TOKEN = ", 1), strings.Replace(raw, "token = ", "TOKEN = ", 1), ""},
		{"the masked line deleted", "a = 1\nurl = \"https://u:**************@db\"\nz = 2\n", "a = 1\nurl = \"https://u:hunter2hunter2@db\"\nz = 2\n", ""},
		{"mask altered", strings.Replace(shown, "ghp_****", "ghp_***X", 1), "", refusal.MaskedSpan},
		{"mask duplicated", shown + "copy = \"ghp_************************************\"\n", "", refusal.MaskedSpan},
		{"mask moved to another line", "a = 1\nz = 2\nmoved = \"ghp_************************************\"\nurl = \"https://u:**************@db\"\n", "", refusal.MaskedSpan},
	}
	for _, c := range cases {
		got, _, err := restore("f", []byte(raw), []byte(shown), []byte(c.next))
		if c.code != "" {
			if refusal.CodeOf(err) != c.code {
				t.Errorf("%s: err %v, want %s (wrote %q)", c.name, err, c.code, got)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %q, %v\nwant %q", c.name, got, err, c.want)
		}
	}
}

// A file with no masks of its own still never takes a mask carried in from
// another file; fill runs that are prose, comments or placeholders pass.
func TestUnmaskedRefusesCarriedMasks(t *testing.T) {
	t.Parallel()
	for text, refused := range map[string]bool{
		"key = ghp_************************************\n":     true,
		"conn = \"Server=x;Password=************;\"\n":         true,
		"/************************************************/\n": false,
		"password: \"********\"\n":                             false,
		" * ********** a rule\n":                               false,
		"plain text\n":                                         false,
	} {
		// Read one byte at a time: a run split across reads is one run.
		_, err := io.ReadAll(unmasked("f", &oneByte{strings.NewReader(text)}))
		if (refusal.CodeOf(err) == refusal.MaskedSpan) != refused {
			t.Errorf("%q: err %v, refused want %v", text, err, refused)
		}
		_, _, err = restore("f", []byte("x\n"), []byte("x\n"), []byte(text))
		if (refusal.CodeOf(err) == refusal.MaskedSpan) != refused {
			t.Errorf("restore %q: err %v, refused want %v", text, err, refused)
		}
	}
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(1, len(p))]) }
