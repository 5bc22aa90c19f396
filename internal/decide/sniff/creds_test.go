package sniff

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	"github.com/fsguard/fsguard/internal/concept/policy"
)

func detector(t testing.TB, cfg policy.Secrets) *Detector {
	t.Helper()
	d, err := NewDetector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// defaultDetector is the detector of the default policy.
func defaultDetector(t testing.TB) *Detector { return detector(t, policy.Secrets{}) }

// TestFamiliesAreThePolicys: the families the rules report are exactly
// those the policy names (and lets secrets.disable name), and every one
// has a sample.
func TestFamiliesAreThePolicys(t *testing.T) {
	t.Parallel()
	var names []string
	for _, r := range builtin {
		if !slices.Contains(names, r.name) {
			names = append(names, r.name)
		}
	}
	names = append(names, "aws-secret-key") // also found beside a key id
	slices.Sort(names)
	names = slices.Compact(names)
	want := slices.Sorted(slices.Values(policy.SecretFamilies))
	if !slices.Equal(names, want) {
		t.Fatalf("rules' families %v\npolicy's %v", names, want)
	}
	var sampled []string
	for _, s := range SampleCredentials(1) {
		sampled = append(sampled, s.Family)
	}
	slices.Sort(sampled)
	if !slices.Equal(sampled, want) {
		t.Fatalf("samples' families %v\npolicy's %v", sampled, want)
	}
	if got := defaultDetector(t).Families(); !slices.Equal(got, want) {
		t.Fatalf("default detector's families %v", got)
	}
}

// credPlaces put a credential where real projects write one.
var credPlaces = map[string]string{
	"go":         "package main\n\n// Token is the deploy token.\nconst Token = \"%s\"\n\nfunc main() {}\n",
	"python":     "import os\n\nAPI_TOKEN = '%s'\nprint(API_TOKEN)\n",
	"js":         "export const config = {\n  token: \"%s\",\n  retries: 3,\n};\n",
	"yaml":       "auth:\n  credential: %s\n  user: deploy\n",
	"helm":       "global:\n  credentials:\n    value: \"%s\"\nreplicaCount: 2\n",
	"k8s":        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\nstringData:\n  credential: \"%s\"\n",
	"json":       "{\n  \"name\": \"app\",\n  \"credential\": \"%s\"\n}\n",
	"toml":       "[auth]\ncredential = \"%s\"\nuser = \"deploy\"\n",
	"env":        "export APP_CREDENTIAL=%s\nDEBUG=1\n",
	"compose":    "services:\n  app:\n    image: app:1\n    environment:\n      - APP_CREDENTIAL=%s\n      - DEBUG=1\n",
	"log":        "2026-12-07T04:00:00Z INFO connecting credential=%s attempt=1\n",
	"notebook":   "{\"cells\":[{\"cell_type\":\"code\",\"source\":[\"cred = \\\"%s\\\"\\n\",\"print(cred)\"]}]}\n",
	"http":       "### me\nGET https://api.internal/v1/me\nAuthorization: Bearer %s\nAccept: application/json\n",
	"dockerfile": "FROM alpine:3\nENV APP_CREDENTIAL=%s\nCMD [\"app\"]\n",
	"crlf":       "auth:\r\n  credential: %s\r\n  user: deploy\r\n",
	"bom":        "\ufeffcredential: %s\n",
}

// credEncodings are the ways a file's text is stored.
var credEncodings = map[string]func(string) []byte{
	"utf8": func(s string) []byte { return []byte(s) },
	"utf16le": func(s string) []byte {
		b := []byte{0xFF, 0xFE}
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u), byte(u>>8))
		}
		return b
	},
	"utf16be": func(s string) []byte {
		b := []byte{0xFE, 0xFF}
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u>>8), byte(u))
		}
		return b
	},
	"utf32le": func(s string) []byte {
		b := []byte{0xFF, 0xFE, 0, 0}
		for _, r := range s {
			b = append(b, byte(r), byte(r>>8), byte(r>>16), 0)
		}
		return b
	},
}

// masked is what a file's text should read after masking: the secret
// (at off, n bytes) filled, everything else as it was.
func masked(text string, off, n int) string {
	return text[:off] + strings.Repeat(string(rune(Fill)), n) + text[off+n:]
}

// TestEveryFamilyEverywhere masks every family's generated credential in
// every placement and encoding: every byte of the secret is masked, every
// other byte is the file's own, and the size is unchanged; Find and Scan
// agree.
func TestEveryFamilyEverywhere(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	for seed := range int64(3) {
		for _, s := range SampleCredentials(seed) {
			for pname, place := range credPlaces {
				text := fmt.Sprintf(place, s.Value)
				// Non-ASCII before the credential, so wide offsets count
				// surrogate pairs and multi-byte runes.
				text = strings.Replace(text, "\n", " # café 🔑\n", 1)
				off := strings.Index(text, s.Value) + strings.Index(s.Value, s.Secret)
				want := masked(text, off, len(s.Secret))
				for ename, enc := range credEncodings {
					file := enc(text)
					ms := d.Find(file)
					got := slices.Clone(file)
					ApplyMasks(ms, got, 0)
					if !bytes.Equal(got, enc(want)) {
						t.Errorf("%s seed %d in %s/%s: masks %+v in %q", s.Family, seed, pname, ename, ms, text)
						continue
					}
					for _, m := range ms {
						if m.Family != s.Family {
							t.Errorf("%s in %s/%s: masked as %s", s.Family, pname, ename, m.Family)
						}
					}
					scanned, err := d.Scan(bytes.NewReader(file), int64(len(file)), nil)
					if err != nil || !slices.Equal(scanned, ms) {
						t.Errorf("%s in %s/%s: Scan %+v, %v; Find %+v", s.Family, pname, ename, scanned, err, ms)
					}
				}
			}
		}
	}
}

// filler is text with no credential, to pad files past a chunk.
func filler(n int) []byte {
	line := []byte("func (s *server) handle(w http.ResponseWriter, r *http.Request) { s.mu.Lock() }\n")
	return bytes.Repeat(line, n/len(line)+1)[:n]
}

// TestChunkBoundaries puts credentials across every split point of a
// scan's chunks (where one chunk's positions end and the next one's
// begin, and where a read ends): each is found once, whole.
func TestChunkBoundaries(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	samples := SampleCredentials(7)
	var picks []Sample
	for _, s := range samples {
		switch s.Family {
		case "github-pat", "jwt", "url-password", "aws-secret-key", "telegram-bot-token":
			picks = append(picks, s)
		}
	}
	buf := make([]byte, minChunk)
	owned := minChunk - credAhead // the first chunk's positions end here
	for _, s := range picks {
		for _, edge := range []int{owned, minChunk, 2*owned - credBack} {
			for k := -len(s.Value) - 2; k <= 2; k++ {
				at := edge + k
				file := filler(3 * minChunk)
				file[at-1] = ' '
				copy(file[at:], s.Value)
				file[at+len(s.Value)] = '\n'
				ms, err := d.Scan(bytes.NewReader(file), int64(len(file)), buf)
				if err != nil {
					t.Fatal(err)
				}
				if len(ms) != 1 || !slices.Equal(ms, d.Find(file)) {
					t.Fatalf("%s at %d (edge %d): Scan %+v, Find %+v", s.Family, at, edge, ms, d.Find(file))
				}
				got := slices.Clone(file)
				ApplyMasks(ms, got, 0)
				if bytes.Contains(got, []byte(s.Secret)) || len(got) != len(file) {
					t.Fatalf("%s at %d: secret shown", s.Family, at)
				}
			}
		}
	}
}

// TestNotCredentials: documented examples, placeholders, masked values,
// bad checksums and alphabets are left alone.
func TestNotCredentials(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	gh := ""
	for _, s := range SampleCredentials(3) {
		if s.Family == "github-pat" {
			gh = s.Value
		}
	}
	bad := []byte(gh)
	bad[len(bad)-1] ^= 1 // still base62, no longer the checksum
	cases := []string{
		"[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"token: " + string(bad),
		"token: ghp_" + strings.Repeat("*", 36),
		"token: ghp_" + strings.Repeat("x", 36),
		"url: postgres://user:password@localhost/db",
		"url: postgres://postgres:mysecretpassword@localhost/db",
		"url: mysql://root:password123@localhost/db",
		"url: redis://app:super_secret@localhost:6379",
		"url: postgres://user:${DB_PASSWORD}@localhost/db",
		"url: postgres://user:<pass>@localhost/db",
		"url: postgres://user:xxx@localhost/db",
		"url: postgres://user:****@localhost/db",
		"url: https://golang.org/doc/install",
		"url: https://aladdin:opensesame@vcs-test.golang.org/git/repo",
		"url: https://Aladdin:open%20sesame@example.net/",
		"conn: Server=db;Database=app;User Id=app;Password=<password>;",
		"conn: Server=db;Database=app;User Id=app;Password=${PASS};",
		"DB_PASSWORD=hunter2hunter2",
		"sk_live_" + strings.Repeat("0", 24),
		"key: dapi" + strings.Repeat("0", 32),
		"jwt: eyJub3QiOiJhIGp3dCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc", // header without alg or typ
		"path := filepath.Join(root, \"pathname\")\npattern := \"patterns\"\n",
		"AKIAIOSFODNN7EXAMPLE",
		`"JoinToken": "SWMTKN-1-3pu6hszjas19xyp7ghgosyx9k8atbfcr8p2is99znpy26u2lkl-7p73s1dx5in4tatdymyhg9hu2"`,
	}
	for _, c := range cases {
		if ms := d.Find([]byte(c)); len(ms) != 0 {
			t.Errorf("%q: masks %+v", c, ms)
		}
	}
}

// TestTooManyMasks: a file with more credentials than MaxMasks is an
// error, never a partly masked file.
func TestTooManyMasks(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	var b bytes.Buffer
	for i := range MaxMasks + 1 {
		s := SampleCredentials(int64(i))[0]
		b.WriteString("t = " + s.Value + "\n")
	}
	_, err := d.Scan(bytes.NewReader(b.Bytes()), int64(b.Len()), nil)
	if !errors.Is(err, ErrTooManyMasks) {
		t.Fatalf("Scan: %v, want ErrTooManyMasks", err)
	}
	if ms := d.Find(b.Bytes()); len(ms) != MaxMasks+1 {
		t.Fatalf("Find: %d masks, want all %d (the caller refuses past MaxMasks)", len(ms), MaxMasks+1)
	}
	ms, err := d.Scan(bytes.NewReader(b.Bytes()[:b.Len()/2]), int64(b.Len()/2), nil)
	if err != nil || len(ms) < MaxMasks/2-1 {
		t.Fatalf("half: %d masks, %v", len(ms), err)
	}
}

// TestPolicyChoices: a disabled family is not masked, masking off masks
// nothing, generic finds assignments, and a policy's rule finds its own.
func TestPolicyChoices(t *testing.T) {
	t.Parallel()
	var gh string
	for _, s := range SampleCredentials(5) {
		if s.Family == "github-pat" {
			gh = s.Value
		}
	}
	text := []byte("token = " + gh + "\napi_key = \"Zq8vN2xR7kLp4TbW9mYc\"\nacme = ACME-0123456789abcdef0123\n")
	off := false
	p, err := policy.Parse([]byte(fmt.Sprintf(`[[root]]
path = %q
[secrets]
generic = true
disable = ["github-pat"]
[[secrets.rule]]
name = "acme-token"
regex = 'ACME-([0-9a-f]{20})'
anchors = ["ACME-"]
keep = 2
`, t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  policy.Secrets
		want []string
	}{
		{"default", policy.Secrets{}, []string{"github-pat"}},
		{"off", policy.Secrets{Mask: &off}, nil},
		// github-pat off, its token is still a random value named token.
		{"policy", p.Secrets, []string{"generic-secret", "generic-secret", "acme-token"}},
	}
	for _, c := range cases {
		var got []string
		for _, m := range detector(t, c.cfg).Find(text) {
			got = append(got, m.Family)
			if m.Family == "acme-token" && (string(text[m.Off:m.Off+int64(m.Len)]) != "0123456789abcdef0123" || m.Keep != 2) {
				t.Errorf("acme-token mask %+v", m)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestConcurrentScans: one detector serves many scans at once.
func TestConcurrentScans(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	var b bytes.Buffer
	for _, s := range SampleCredentials(11) {
		b.Write(filler(1000))
		b.WriteString("\nx = " + s.Value + "\n")
	}
	want, err := d.Scan(bytes.NewReader(b.Bytes()), int64(b.Len()), nil)
	if err != nil || len(want) < len(policy.SecretFamilies)-1 {
		t.Fatalf("%d masks, %v", len(want), err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			var buf []byte // half the scans make their own
			if i%2 == 0 {
				buf = make([]byte, minChunk)
			}
			got, err := d.Scan(bytes.NewReader(b.Bytes()), int64(b.Len()), buf)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("concurrent scan: %d masks, %v", len(got), err)
			}
		})
	}
	wg.Wait()
}

// goSource walks dirs of Go's own sources, or skips without them.
func goSource(t testing.TB, dirs ...string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, dir := range dirs {
		root := filepath.Join(runtime.GOROOT(), "src", dir)
		if _, err := os.Stat(root); err != nil {
			t.Skipf("no Go sources at %s: %v", root, err)
		}
		filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.Type().IsRegular() {
				if b, err := os.ReadFile(p); err == nil {
					files[p] = b
				}
			}
			return nil
		})
	}
	return files
}

// TestNoFalsePositivesInGoSources: Go's net/http and encoding packages,
// tests and testdata included, hold no credential.
func TestNoFalsePositivesInGoSources(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	for p, b := range goSource(t, "net/http", "encoding") {
		for _, m := range d.Find(b) {
			t.Errorf("%s: %s at %d: %q", p, m.Family, m.Off, b[m.Off:m.Off+int64(m.Len)])
		}
	}
}

// TestDisabledFamilies: a disabled family is masked neither by its own
// rule nor by a neighbour's (an AWS key id finds the secret beside it).
func TestDisabledFamilies(t *testing.T) {
	t.Parallel()
	var id, secret string
	for _, s := range SampleCredentials(9) {
		switch s.Family {
		case "aws-access-key-id":
			id = s.Value
		case "aws-secret-key":
			secret = s.Secret
		}
	}
	text := []byte("[default]\naws_access_key_id = " + id + "\naws_secret_access_key = " + secret + "\n")
	for _, c := range []struct {
		disable []string
		want    []string
	}{
		{nil, []string{"aws-access-key-id", "aws-secret-key"}},
		{[]string{"aws-secret-key"}, []string{"aws-access-key-id"}},
		{[]string{"aws-access-key-id"}, []string{"aws-secret-key"}},
		{[]string{"aws-access-key-id", "aws-secret-key"}, nil},
	} {
		var got []string
		for _, m := range detector(t, policy.Secrets{Disable: c.disable}).Find(text) {
			got = append(got, m.Family)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("disable %v: %v, want %v", c.disable, got, c.want)
		}
	}
}

// TestLongJWT: a token as long as the look ahead allows is masked whole.
func TestLongJWT(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	claims := `{"sub":"` + strings.Repeat("Zx9", 850) + `"}`
	hdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT","kid":"k1"}`))
	tok := hdr + "." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + "." + strings.Repeat("Sg4_", 86)
	file := append(filler(3*minChunk), "\nAuthorization: Bearer "+tok+"\n"...)
	at := bytes.Index(file, []byte(tok))
	for _, size := range []int{len(file), at + len(tok) + 1} {
		ms, err := d.Scan(bytes.NewReader(file[:size]), int64(size), make([]byte, minChunk))
		if err != nil || len(ms) != 1 || ms[0].Off != int64(at) || ms[0].Len != len(tok) {
			t.Fatalf("%d-byte token: %+v, %v", len(tok), ms, err)
		}
	}
}

// TestScanOfAShrunkFile: a file shorter than the size it was scanned for
// changed while scanned, and is an error, not a scan of part of it.
func TestScanOfAShrunkFile(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	file := filler(3 * minChunk)
	for _, size := range []int{2, 100, minChunk + 1, len(file) + 1} {
		data := file[:min(size-1, len(file))]
		if _, err := d.Scan(bytes.NewReader(data), int64(size), nil); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%d bytes scanned as %d: %v", len(data), size, err)
		}
	}
}

// TestLegacyVaultToken: a Vault token of the old form is masked after its
// name, never on its own ("s." and 24 bytes is too common in code).
func TestLegacyVaultToken(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	tok := "s.Xk9mQ2vR7tLw4ZpB8nYc3HjD"
	for text, want := range map[string]int{
		"export VAULT_TOKEN=" + tok + "\n": 1,
		`{"vault_token": "` + tok + `"}`:   1,
		"x := " + tok + "\n":               0,
	} {
		ms := d.Find([]byte(text))
		if len(ms) != want || want == 1 && string(text[ms[0].Off:ms[0].Off+int64(ms[0].Len)]) != tok {
			t.Errorf("%q: %+v", text, ms)
		}
	}
}

// TestOverlappingFamilies: one credential found by two rules (a Slack
// refresh token holds a user token's prefix) is one mask, keeping what
// both keep.
func TestOverlappingFamilies(t *testing.T) {
	t.Parallel()
	tok := "xoxe.xoxp-1-Mi0yLTEyMzQ1Njc4OTAtOTg3NjU0MzIxMC1hYmNkZWY"
	ms := defaultDetector(t).Find([]byte("SLACK_REFRESH=" + tok + "\n"))
	if len(ms) != 1 || ms[0].Off != 14 || ms[0].Len != len(tok) || ms[0].Keep != len("xoxe.xoxp-") {
		t.Fatalf("%+v", ms)
	}
}

// TestBase64Encoded: a credential base64-encoded whole, as a Kubernetes
// Secret's data holds it, is masked over the characters that encode it,
// in either alphabet, padded or not; text that merely decodes is not.
func TestBase64Encoded(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	n := 0
	for _, s := range SampleCredentials(4) {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
			v := enc.EncodeToString([]byte(s.Value))
			n++
			text := "apiVersion: v1\nkind: Secret\ndata:\n  credential: " + v + "\n  user: ZGVwbG95\n"
			off := strings.Index(text, v)
			if why := b64Masked(d.Find([]byte(text)), off, s.Value, s.Secret, len(v)); why != "" {
				t.Errorf("%s encoded %q: %s", s.Family, v, why)
			}
		}
	}
	if n < 150 {
		t.Errorf("only %d samples", n)
	}
	for _, plain := range []string{"https://golang.org/doc/", "ghp_notatoken", `{"alg":"none"}`} {
		v := base64.StdEncoding.EncodeToString([]byte(plain))
		if ms := d.Find([]byte("data: " + v + "\n")); len(ms) != 0 {
			t.Errorf("%q encoded: %+v", plain, ms)
		}
	}
}

// TestURLPasswordsHoldingWords: a person's password often holds a word
// ("Swordfish99", "PgSecret_x8", "Passw0rdXk9v"); it is masked like any
// other. Only a password made of example words is left alone (see
// TestNotCredentials).
func TestURLPasswordsHoldingWords(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	for _, pw := range []string{"Passw0rdXk9v", "Xk9vSecretZ12", "Sup3rS3cretPassw0rd", "Swordfish99", "PgSecret_x8q", "hunter2pwd77"} {
		line := "url = postgres://app:" + pw + "@db.internal/app"
		ms := d.Find([]byte(line))
		if len(ms) != 1 || line[ms[0].Off:ms[0].Off+int64(ms[0].Len)] != pw {
			t.Errorf("%q: masks %+v, want the password %q masked", line, ms, pw)
		}
	}
}
