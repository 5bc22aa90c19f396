package sniff

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// escapeAll writes s with every character as esc writes it.
func escapeAll(s string, esc func(c byte) string) string {
	var b strings.Builder
	for i := range len(s) {
		b.WriteString(esc(s[i]))
	}
	return b.String()
}

// decodedText is text with its escapes decoded as the scan decodes them.
func decodedText(s string) string {
	b := []byte(s)
	pos := make([]int32, len(b)+1)
	for range escRounds {
		var changed bool
		if b, pos, changed = unescape(nil, nil, b, pos, false); !changed {
			break
		}
	}
	return string(b)
}

// TestEscapedCredentials: a webhook URL behind JSON's escaped slashes, and
// tokens with a letter (or all of them) written as \u0067, \x67, &#103;,
// &#x67;, or escaped twice, are masked: the masks cover the escaped bytes,
// the same length, and what they leave, decoded, holds no part of the
// secret. Escapes in text without a credential mask nothing.
func TestEscapedCredentials(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	samples := map[string]Sample{}
	for _, s := range SampleCredentials(11) {
		samples[s.Family] = s
	}
	pat, hook := samples["github-pat"], samples["slack-webhook"]
	first := func(esc string) string { return esc + pat.Value[1:] }
	cases := map[string]struct {
		text   string
		secret string
	}{
		"json slashes":    {`{"text":"hi","url":"` + strings.ReplaceAll(hook.Value, "/", `\/`) + `"}`, hook.Secret},
		"\\u first":       {`token = "` + first(`\u0067`) + `"`, pat.Secret},
		"\\x first":       {`token = "` + first(`\x67`) + `"`, pat.Secret},
		"&# first":        {`<p>` + first(`&#103;`) + `</p>`, pat.Secret},
		"&#x first":       {`<p>` + first(`&#x67;`) + `</p>`, pat.Secret},
		"escaped twice":   {`"{\"t\":\"` + first(`\\u0067`) + `\"}"`, pat.Secret},
		"\\u in the body": {`t: ` + pat.Value[:10] + `\u00` + fmt.Sprintf("%x", pat.Value[10]) + pat.Value[11:] + "\n", pat.Secret},
		"all \\u":         {`x = "` + escapeAll(pat.Value, func(c byte) string { return fmt.Sprintf(`\u%04x`, c) }) + `";`, pat.Secret},
		"all &#":          {escapeAll(pat.Value, func(c byte) string { return fmt.Sprintf(`&#%d;`, c) }), pat.Secret},
		"%67 first":       {`https://x.test/cb?token=` + first(`%67`) + `&x=1`, pat.Secret},
		"%2567 twice":     {`u=https%3A%2F%2Fx.test%2F%3Ft%3D` + first(`%2567`), pat.Secret},
		"all %XX":         {`curl -d "t=` + escapeAll(pat.Value, func(c byte) string { return fmt.Sprintf(`%%%02X`, c) }) + `"`, pat.Secret},
		"form, + a space": {`body=aws_secret_access_key+%3D+` + samples["aws-secret-key"].Secret + `&next=1`, samples["aws-secret-key"].Secret},
	}
	for name, c := range cases {
		b := []byte(c.text)
		ms := d.Find(b)
		if len(ms) == 0 {
			t.Errorf("%s: nothing found in %s", name, c.text)
			continue
		}
		masked := append([]byte(nil), b...)
		ApplyMasks(ms, masked, 0)
		if len(masked) != len(b) {
			t.Fatalf("%s: length changed", name)
		}
		dec := decodedText(string(masked))
		if strings.Contains(dec, c.secret[len(c.secret)/2:]) || strings.Contains(dec, c.secret[:len(c.secret)/2]) {
			t.Errorf("%s: masked %+v, decoded it still holds the secret: %s", name, ms, dec)
		}
		if len(d.Find([]byte(dec))) != 0 {
			t.Errorf("%s: decoded after masking, a credential is still found: %s", name, dec)
		}
	}
	for _, clean := range []string{
		`{"homepage":"https:\/\/golang.org\/doc\/","name":"caf\u00e9"}`,
		`char s[] = "\x41\x42\x43\x00\xff"; /* \\ \n */`,
		`<p>&#169; 2026 &#x2014; &#60;b&#62;</p>`,
		`C:\\Users\\me\\ghp_notatoken`,
		`printf("%02x %08X %d%%\n", a, b, c); q := "a%20b%2Fc"`,
	} {
		if ms := d.Find([]byte(clean)); len(ms) != 0 {
			t.Errorf("%q: %+v", clean, ms)
		}
	}
}

// TestEscapedAcrossChunks: an escaped token is found whatever chunk of a
// large scan its escapes fall in, through Scan as through Find.
func TestEscapedAcrossChunks(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	var pat string
	for _, s := range SampleCredentials(3) {
		if s.Family == "github-pat" {
			pat = s.Value
		}
	}
	tok := `\u0067` + pat[1:]
	for _, at := range []int{0, 1, minChunk - 700, minChunk - 3, minChunk, 2*minChunk - 641, 3*minChunk + 5} {
		pad := bytes.Repeat([]byte("x \\u00e9 "), at/9+1)[:at]
		copy(pad[max(0, at-8):], "        ") // a token starts a word
		text := append(append(pad, tok...), bytes.Repeat([]byte(" y"), minChunk)...)
		ms, err := d.Scan(bytes.NewReader(text), int64(len(text)), make([]byte, minChunk))
		if err != nil || len(ms) != 1 || ms[0].Off != int64(at) || ms[0].Len != len(tok) {
			t.Errorf("at %d: %+v %v", at, ms, err)
		}
	}
}

// TestEscapedHostile: a long line of backslashes, of escapes, of escapes
// of escapes, costs a scan linear in its length (a hang guard of many
// times the usual).
func TestEscapedHostile(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	const n = 16 << 20
	for name, unit := range map[string]string{
		"backslashes":      `\`,
		"\\u":              `\u0041`,
		"\\\\u":            `\\u0041`,
		"slashes":          `\/`,
		"&#":               `&#65;`,
		"\\\\\\\\\\\\\\\\": `\\\\\\\\`,
	} {
		text := bytes.Repeat([]byte(unit), n/len(unit))
		start := time.Now()
		ms, err := d.Scan(bytes.NewReader(text), int64(len(text)), make([]byte, 1<<20))
		if err != nil || len(ms) != 0 {
			t.Errorf("%s: %d masks, %v", name, len(ms), err)
		}
		if el := time.Since(start); el > 2*time.Minute {
			t.Errorf("%s: %d MiB scanned in %v", name, n>>20, el)
		}
		t.Logf("%s: %v", name, time.Since(start))
	}
}

// FuzzUnescape: any text decodes without a panic, its positions in
// order, within the text.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`\u0067hp_`, `&#x67;&#103`, `\\\\u00`, `\x6`, `&#`, `&#x;`} {
		f.Add([]byte(s))
	}
	d := defaultDetector(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		pos := make([]int32, len(b)+1)
		for i := range pos {
			pos[i] = int32(i)
		}
		dec, p := b, pos
		for range escRounds {
			dec, p, _ = unescape(nil, nil, dec, p, true)
			if len(p) != len(dec)+1 || p[len(dec)] != int32(len(b)) {
				t.Fatalf("positions %v for %d bytes", p, len(dec))
			}
			for i := 1; i < len(p); i++ {
				if p[i] <= p[i-1] {
					t.Fatalf("positions out of order: %v", p)
				}
			}
		}
		for _, m := range d.Find(b) {
			if m.Off < 0 || m.Off+int64(m.Len) > int64(len(b)) || m.Keep > m.Len {
				t.Fatalf("mask %+v outside %d bytes", m, len(b))
			}
		}
	})
}
