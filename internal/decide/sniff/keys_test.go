package sniff

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/fsguard/fsguard/internal/concept/charset"
)

// keyKinds returns one private key of each kind fsguard recognises, as the
// tools that make them write them. PEM keys are real (crypto/x509); the
// OpenSSH, PGP, SSH2 and PuTTY bodies are random bytes in the real layout:
// recognition reads the layout, not the key.
func keyKinds(t *testing.T) map[string]string {
	t.Helper()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(edKey)
	ecDER, _ := x509.MarshalECPrivateKey(ecKey)
	enc := func(typ string, der []byte, headers map[string]string) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Headers: headers, Bytes: der}))
	}
	body := func(n, width int) string {
		b := make([]byte, n)
		rand.Read(b)
		s := base64.StdEncoding.EncodeToString(b)
		var out strings.Builder
		for len(s) > width {
			out.WriteString(s[:width] + "\n")
			s = s[width:]
		}
		out.WriteString(s + "\n")
		return out.String()
	}
	return map[string]string{
		"rsa pkcs1":       enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey), nil),
		"ec":              enc("EC PRIVATE KEY", ecDER, nil),
		"pkcs8":           enc("PRIVATE KEY", pkcs8, nil),
		"encrypted pem":   enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey), map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,0123456789ABCDEF0123456789ABCDEF"}),
		"pkcs8 encrypted": enc("ENCRYPTED PRIVATE KEY", pkcs8, nil),
		"openssh":         "-----BEGIN OPENSSH PRIVATE KEY-----\n" + body(400, 70) + "-----END OPENSSH PRIVATE KEY-----\n",
		"pgp":             "-----BEGIN PGP PRIVATE KEY BLOCK-----\nComment: test\n\n" + body(600, 64) + "=abcd\n-----END PGP PRIVATE KEY BLOCK-----\n",
		"ssh2":            "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key-20240101 with a comment that is \\\n continued\"\n" + body(600, 70) + "---- END SSH2 ENCRYPTED PRIVATE KEY ----\n",
		"putty":           "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key\nPublic-Lines: 2\n" + body(51, 64) + "Private-Lines: 1\n" + body(48, 64) + "Private-MAC: 0123\n",
		"aws":             "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
	}
}

// placements put a key where people put keys.
var placements = map[string]func(key string) string{
	"alone":       func(k string) string { return k },
	"after a BOM": func(k string) string { return "\ufeff" + k },
	"indented":    func(k string) string { return indent(k, "    ") },
	"yaml block":  func(k string) string { return "tls:\n  key: |\n" + indent(k, "    ") },
	"toml string": func(k string) string { return "key = \"\"\"\n" + k + "\"\"\"\n" },
	"json string": func(k string) string {
		b, _ := json.Marshal(map[string]string{"type": "service_account", "private_key": k})
		return string(b)
	},
	"quoted":    func(k string) string { return "k=\"" + k + "\"\n" },
	"crlf":      func(k string) string { return strings.ReplaceAll(k, "\n", "\r\n") },
	"commented": func(k string) string { return indent(k, "# ") },
	"late":      func(k string) string { return strings.Repeat("filler line of prose\n", 500) + k },
	"base64": func(k string) string {
		return "data:\n  tls.key: " + base64.StdEncoding.EncodeToString([]byte(k)) + "\n"
	},
	// As `base64` writes it (76 columns), and wrapped in an indented
	// YAML block with CRLF: the first line alone holds too little.
	"base64 wrapped": func(k string) string { return wrapB64(k, 76, "", "\n") },
	"base64 yaml crlf": func(k string) string {
		return "data:\r\n  tls.key: >\r\n" + wrapB64(k, 64, "    ", "\r\n")
	},
	"utf-16":   func(k string) string { return utf16LE("\ufeff" + k) },
	"utf-16be": func(k string) string { return encode(k, charset.UTF16BE) },
	"utf-32":   func(k string) string { return encode(k, charset.UTF32LE) },
	"utf-32be": func(k string) string { return encode(k, charset.UTF32BE) },
}

// encode writes k in a wide encoding with its BOM, as fsguard read now
// shows such files decoded: a key in them must be found as in UTF-8.
func encode(k string, e charset.Encoding) string {
	b, err := charset.Encode([]byte(k), e)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// wrapB64 is k base64-encoded in lines of width characters, each after
// indent and ending with eol.
func wrapB64(k string, width int, indent, eol string) string {
	s := base64.StdEncoding.EncodeToString([]byte(k))
	var b strings.Builder
	for len(s) > 0 {
		n := min(width, len(s))
		b.WriteString(indent + s[:n] + eol)
		s = s[n:]
	}
	return b.String()
}

func indent(s, with string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = with + l
		}
	}
	return strings.Join(lines, "")
}

func utf16LE(s string) string {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return string(b)
}

func TestKeysFoundWhereverTheySit(t *testing.T) {
	t.Parallel()
	for kind, key := range keyKinds(t) {
		for where, place := range placements {
			if kind == "aws" && (strings.HasPrefix(where, "base64") || strings.HasPrefix(where, "utf-")) {
				continue // an AWS key is a line of a credentials file, not a PEM
			}
			data := place(key)
			if !HasKey([]byte(data)) {
				t.Errorf("%s %s: not recognised:\n%.300q", kind, where, data)
			}
			// The scan of a file in chunks finds what the scan in place does.
			if at, err := FindKeyIn(strings.NewReader(data), int64(len(data)), make([]byte, 700)); at < 0 || err != nil {
				t.Errorf("%s %s: not found in chunks (%v)", kind, where, err)
			}
		}
	}
}

// TestProseStaysReadable: a header alone, or with an excerpt, is not a key.
func TestProseStaysReadable(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"PEM keys start with -----BEGIN RSA PRIVATE KEY----- and end with the END line.\n",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA...\n-----END RSA PRIVATE KEY-----\n",
		"-----BEGIN OPENSSH PRIVATE KEY-----\n<your key here>\n-----END OPENSSH PRIVATE KEY-----\n",
		"if strings.HasPrefix(line, \"-----BEGIN PRIVATE KEY-----\") {\n\treturn parseKey(rest)\n}\n",
		"const header = \"-----BEGIN EC PRIVATE KEY-----\"\nconst footer = \"-----END EC PRIVATE KEY-----\"\n",
		"aws_secret_access_key = YOUR_SECRET_KEY\n",
		"PuTTY-User-Key-File-3 is the format of .ppk files.\n",
		"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ6dHkEXAMPLEEXAMPLEEXAMPLEEXAMPLEwCgYIKoZIzj0EAwIw\n-----END CERTIFICATE-----\n",
	} {
		if HasKey([]byte(s)) {
			t.Errorf("prose taken for a key:\n%s", s)
		}
		if at, _ := FindKeyIn(strings.NewReader(s), int64(len(s)), make([]byte, 64)); at >= 0 {
			t.Errorf("prose taken for a key in chunks:\n%s", s)
		}
	}
}

// TestFindKeyInAcrossChunks: a key is found wherever a chunk boundary cuts
// it, at its marker's offset.
func TestFindKeyInAcrossChunks(t *testing.T) {
	t.Parallel()
	key := keyKinds(t)["openssh"]
	data := []byte(strings.Repeat("x", 300) + "\n" + key)
	want := int64(bytes.Index(data, []byte("PRIVATE KEY")))
	for size := 8; size < 400; size += 7 {
		at, err := FindKeyIn(bytes.NewReader(data), int64(len(data)), make([]byte, size+maxMarker))
		if err != nil || at != want {
			t.Fatalf("chunk %d: found at %d (%v), want %d", size, at, err, want)
		}
	}
	// Only the first size bytes are scanned.
	if at, _ := FindKeyIn(bytes.NewReader(data), want, nil); at >= 0 {
		t.Errorf("found a key beyond the size given")
	}
}

// TestEveryKindAcrossChunks: each kind of key, as text, base64-encoded
// and in UTF-16, is found wherever a chunk boundary cuts it, at the offset
// the scan of the whole finds. The markers are found by their first byte,
// several from one pass (anchors); an AWS name is found from its '_', with
// its "AWS" or "aws" possibly in the chunk before.
func TestEveryKindAcrossChunks(t *testing.T) {
	t.Parallel()
	kinds := keyKinds(t)
	kinds["aws upper"] = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
	for kind, key := range kinds {
		for _, where := range []string{"alone", "base64", "utf-16"} {
			if strings.HasPrefix(kind, "aws") && where != "alone" {
				continue
			}
			data := []byte(strings.Repeat("x", 50) + "\n" + placements[where](key))
			want, err := FindKeyIn(bytes.NewReader(data), int64(len(data)), nil)
			if err != nil || want < 0 {
				t.Fatalf("%s %s: not found whole (%v)", kind, where, err)
			}
			for size := 1; size < 120; size += 3 {
				if at, err := FindKeyIn(bytes.NewReader(data), int64(len(data)), make([]byte, size+maxMarker)); err != nil || at != want {
					t.Fatalf("%s %s, chunk %d: found at %d (%v), want %d", kind, where, size, at, err, want)
				}
			}
		}
	}
}

// TestWideKeyAcrossChunks: a key in UTF-16 or UTF-32, of either byte
// order, is found wherever a chunk boundary cuts it, at the offset the
// scan of the whole finds (its markers are found in one pass, by the
// "P\x00" they all start with).
func TestWideKeyAcrossChunks(t *testing.T) {
	t.Parallel()
	key := keyKinds(t)["openssh"]
	for _, where := range []string{"utf-16", "utf-16be", "utf-32", "utf-32be"} {
		data := []byte(strings.Repeat("x", 300) + "\n" + placements[where](key))
		want, err := FindKeyIn(bytes.NewReader(data), int64(len(data)), nil)
		if err != nil || want < 0 {
			t.Fatalf("%s: not found whole (%v)", where, err)
		}
		for size := 8; size < 600; size += 7 {
			if at, err := FindKeyIn(bytes.NewReader(data), int64(len(data)), make([]byte, size+maxMarker)); err != nil || at != want {
				t.Fatalf("%s, chunk %d: found at %d (%v), want %d", where, size, at, err, want)
			}
		}
	}
}

// TestFindKeyInHalves: split in two halves scanned at once, a key is found
// wherever the split cuts it, or on either side of it, at the offset of
// its first marker, as one scan finds it.
func TestFindKeyInHalves(t *testing.T) {
	t.Parallel()
	key := keyKinds(t)["openssh"]
	for pad := 0; pad < 1500; pad += 3 {
		data := []byte(strings.Repeat("x", pad) + "\n" + key + strings.Repeat("y", 400))
		want, _ := FindKeyIn(bytes.NewReader(data), int64(len(data)), nil)
		at, err := FindKeyInHalves(bytes.NewReader(data), int64(len(data)), make([]byte, 64), make([]byte, 64))
		if err != nil || at != want || want < 0 {
			t.Fatalf("key after %d bytes of %d: found at %d (%v), want %d", pad, len(data), at, err, want)
		}
	}
	clean := []byte(strings.Repeat("no key here\n", 100))
	if at, _ := FindKeyInHalves(bytes.NewReader(clean), int64(len(clean)), make([]byte, 64), make([]byte, 64)); at >= 0 {
		t.Errorf("a key found in text without one, at %d", at)
	}
}

// BenchmarkFindKeyIn is a worst case: a near-marker ("PRIVATE") on every line.
func BenchmarkFindKeyIn(b *testing.B) {
	line := "func (s *Service) Read(req ReadRequest) (*ReadResult, error) { // PRIVATE notes, Keys\n"
	data := []byte(strings.Repeat(line, (64<<20)/len(line)))
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		FindKeyIn(bytes.NewReader(data), int64(len(data)), buf)
	}
}

// BenchmarkFindKeyInBinary: a binary file (a git pack, a dataset), whose
// every chunk has NULs and is searched for the wide markers too.
func BenchmarkFindKeyInBinary(b *testing.B) {
	data := make([]byte, 64<<20)
	rand.Read(data)
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		FindKeyIn(bytes.NewReader(data), int64(len(data)), buf)
	}
}

// TestAWSKeyAtTheStart: the AWS marker is found from its '_' and the "aws"
// before it is checked after; a key on the file's first bytes has nothing
// before that "aws", and is still a key.
func TestAWSKeyAtTheStart(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
	} {
		if !HasKey([]byte(s)) {
			t.Errorf("not recognised at byte 0: %q", s)
		}
	}
	if HasKey([]byte("xx_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n")) {
		t.Error("a name that is not aws_secret_access_key was taken for one")
	}
}
