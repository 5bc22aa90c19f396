package sniff

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// derKeys are private keys in DER, one of each structure.
func derKeys(t testing.TB) map[string][]byte {
	t.Helper()
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ek384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, edk, _ := ed25519.GenerateKey(rand.Reader)
	xk, _ := ecdh.X25519().GenerateKey(rand.Reader)
	out := map[string][]byte{"pkcs1-rsa": x509.MarshalPKCS1PrivateKey(rk)}
	out["sec1-p256"], _ = x509.MarshalECPrivateKey(ek)
	out["sec1-p384"], _ = x509.MarshalECPrivateKey(ek384)
	for name, k := range map[string]any{"pkcs8-rsa": rk, "pkcs8-ec": ek, "pkcs8-ed25519": edk, "pkcs8-x25519": xk} {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = der
	}
	return out
}

// publicDER are DER objects that are not private keys: a certificate,
// public keys, a CSR.
func publicDER(t testing.TB) map[string][]byte {
	t.Helper()
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	cert, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &rk.PublicKey, rk)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{"cert": cert, "pkcs1-public": x509.MarshalPKCS1PublicKey(&rk.PublicKey)}
	out["pkix-rsa"], _ = x509.MarshalPKIXPublicKey(&rk.PublicKey)
	out["pkix-ec"], _ = x509.MarshalPKIXPublicKey(&ek.PublicKey)
	out["csr"], _ = x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "x"}}, ek)
	return out
}

// xxd is hex as xxd -p writes it: 60 digits a line.
func xxd(b []byte) string {
	h := hex.EncodeToString(b)
	var s strings.Builder
	for len(h) > 60 {
		s.WriteString(h[:60] + "\n")
		h = h[60:]
	}
	return s.String() + h + "\n"
}

// TestKeysInOtherEncodings: a private key in DER (each structure, a file
// of its own or the start of one), hex of DER or PEM, URL-encoded PEM,
// and JWKs with their private part are keys, through HasKey and the
// chunked FindKeyIn.
func TestKeysInOtherEncodings(t *testing.T) {
	t.Parallel()
	ders := derKeys(t)
	cases := map[string][]byte{}
	noise := make([]byte, 3000)
	rand.Read(noise)
	for name, der := range ders {
		cases["der "+name] = der
		cases["der then more bytes "+name] = append(append([]byte{}, der...), noise...)
		cases["hex der "+name] = []byte(xxd(der))
		cases["hex der upper "+name] = []byte(strings.ToUpper(hex.EncodeToString(der)))
		p := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
		cases["hex pem "+name] = []byte(xxd(p))
		cases["url query "+name] = []byte("key=" + url.QueryEscape(string(p)) + "&x=1\n")
		cases["url path "+name] = []byte("k: " + url.PathEscape(string(p)) + "\n")
		cases["url twice "+name] = []byte("u=" + url.QueryEscape("a?k="+url.QueryEscape(string(p))) + "\n")
	}
	b64 := func(n int) string {
		b := make([]byte, n)
		rand.Read(b)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	jwks := map[string]map[string]string{
		"rsa": {"kty": "RSA", "n": b64(256), "e": "AQAB", "d": b64(256), "p": b64(128), "q": b64(128)},
		"ec":  {"kty": "EC", "crv": "P-256", "x": b64(32), "y": b64(32), "d": b64(32)},
		"okp": {"kty": "OKP", "crv": "Ed25519", "x": b64(32), "d": b64(32)},
		"oct": {"kty": "oct", "k": b64(32)},
	}
	for name, m := range jwks {
		j, _ := json.Marshal(m)
		ji, _ := json.MarshalIndent(map[string]any{"keys": []any{m}}, "", "  ")
		cases["jwk "+name] = j
		cases["jwks indented "+name] = ji
		q, _ := json.Marshal(map[string]string{"jwk": string(j)})
		cases["jwk in a string "+name] = q
	}
	cases["jwk yaml"] = []byte("key:\n  kty: EC\n  crv: P-256\n  x: " + b64(32) + "\n  d: " + b64(32) + "\n")
	for name, data := range cases {
		if !HasKey(data) {
			t.Errorf("%s: not found by HasKey", name)
		}
		if at, err := FindKeyIn(bytes.NewReader(data), int64(len(data)), make([]byte, 512)); at < 0 || err != nil {
			t.Errorf("%s: not found by FindKeyIn in 512-byte chunks (%v)", name, err)
		}
	}
}

// TestNotKeysInOtherEncodings: certificates, public keys and CSRs in DER
// or hex, public JWKs, and text that mentions the markers are not keys.
func TestNotKeysInOtherEncodings(t *testing.T) {
	t.Parallel()
	cases := map[string][]byte{}
	for name, der := range publicDER(t) {
		cases["der "+name] = der
		cases["hex "+name] = []byte(xxd(der))
		cases["pem "+name] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	pub, _ := json.Marshal(map[string]string{"kty": "RSA", "n": strings.Repeat("A", 300), "e": "AQAB", "kid": "k1", "use": "sig"})
	cases["jwk public"] = pub
	cases["jwk public ec beside other json"] = []byte(`{"a": {"kty": "EC", "crv": "P-256", "x": "` + strings.Repeat("x", 43) + `", "y": "` + strings.Repeat("y", 43) + `"}, "b": {"id": "` + strings.Repeat("q", 43) + `"}}`)
	cases["prose"] = []byte("The JWK member kty names the key type; d is the private exponent. PRIVATE%20KEY is how a URL spells it.\n")
	cases["css"] = []byte("body { color: #2d2d2d; background: #2D2D2D2D; }\n")
	cases["dates"] = []byte("20100101 020100 0201000230 3082020100\n")
	cases["der header only"] = []byte{0x30, 0x82, 0x04, 0xa4, 0x02, 0x01, 0x00, 0x02, 0x82, 0x01, 0x01, 0x00, 0xff}
	for name, data := range cases {
		if HasKey(data) {
			t.Errorf("%s: taken for a key", name)
		}
	}
}

// TestDERKeyTruncated: a DER key cut short, or with a byte of its modulus
// changed, is not a key (the parse decides, not the header).
func TestDERKeyTruncated(t *testing.T) {
	t.Parallel()
	for name, der := range derKeys(t) {
		if HasKey(der[:len(der)-1]) {
			t.Errorf("%s cut short: taken for a key", name)
		}
	}
	der := derKeys(t)["pkcs1-rsa"]
	bad := append([]byte{}, der...)
	bad[20] ^= 1 // inside n: no longer divisible by p and q
	if HasKey(bad) {
		t.Error("an RSA structure whose modulus is not p*q taken for a key")
	}
}

// TestNoKeysInSystemBinaries: the system's executables and libraries hold
// no key by these rules, but for gnutls, which embeds a real one (a GOST
// test key, in PEM). Run with FSGUARD_SCAN_SYSTEM=1 (it reads every file).
func TestNoKeysInSystemBinaries(t *testing.T) {
	if os.Getenv("FSGUARD_SCAN_SYSTEM") == "" {
		t.Skip("set FSGUARD_SCAN_SYSTEM=1 to scan /usr/bin and /usr/lib")
	}
	embedsKeys := map[string]bool{"libgnutls.so": true}
	n := 0
	for _, pat := range []string{"/usr/bin/*", "/usr/sbin/*", "/usr/lib/x86_64-linux-gnu/*.so*", "/usr/lib/x86_64-linux-gnu/*/*.so*"} {
		ms, _ := filepath.Glob(pat)
		for _, p := range ms {
			f, err := os.Open(p)
			if err != nil {
				continue
			}
			fi, err := f.Stat()
			if err != nil || !fi.Mode().IsRegular() {
				f.Close()
				continue
			}
			at, _ := FindKeyIn(f, fi.Size(), nil)
			f.Close()
			n++
			base := filepath.Base(p)
			if i := strings.Index(base, ".so"); i >= 0 {
				base = base[:i+3]
			}
			if at >= 0 && !embedsKeys[base] {
				t.Errorf("%s: a key at byte %d", p, at)
			} else if at >= 0 {
				t.Logf("%s: its known key at byte %d", p, at)
			}
		}
	}
	t.Logf("%d files scanned", n)
}

// BenchmarkFindKeyInELF: a real binary (the go command), whose code and
// data hold the DER marker's bytes far more often than random data does.
func BenchmarkFindKeyInELF(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "bin", "go"))
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		FindKeyIn(bytes.NewReader(data), int64(len(data)), buf)
	}
}
