package sniff

import (
	"bytes"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"regexp"
)

// Keys in other encodings than PEM text: binary DER (PKCS#1 RSA and
// OpenSSL DSA, PKCS#8, SEC1 EC), the same DER or a PEM key written as hex
// (xxd -p), a PEM key URL-encoded (%20 or + for spaces, %0A for newlines,
// encoded once or twice), and a JSON Web Key with its private part. Each is
// decided by decoding and parsing what is there: a DER key is one only if
// it parses as one, its lengths exact and its numbers consistent (an RSA
// modulus divisible by both primes), so certificates, public keys and the
// bytes of a binary that look like a header stay served.
//
// The text encodings are found anywhere, from markers the key scan's one
// pass meets (see markers). Binary DER is looked for where a DER key is
// kept: at the start of a file (a .der or .key file holds one object), or
// of a packed file's member (see Unpacker). Looking for it at every offset
// would take a pass for its version's 0x02, which machine code holds every
// few dozen bytes, on every byte of every binary the mount serves; and a
// key inside another binary format (a keystore, a database) is that
// format's to protect (its name is denied, as *.p12, *.jks, *.keystore).

// encoded are the markers of keys in these encodings.
var encoded = []marker{
	// Hex: "----" of a PEM header, and the DER version after "30..",
	// from its "2" on (so that all four share the anchor '2').
	{s: []byte("2d2d2d2d"), check: hexTextAt, reach: fixedReach(2*lookAhead + lookAhead/8)},
	{s: []byte("2D2D2D2D"), check: hexTextAt, reach: fixedReach(2*lookAhead + lookAhead/8)},
	{s: []byte("20100"), check: hexDERAt, reach: hexDERReach},
	{s: []byte("20101"), check: hexDERAt, reach: hexDERReach},
	// URL-encoded: the header's space escaped. Shares 'P' and 'R' with
	// "PRIVATE KEY", so it costs no pass of its own.
	{s: []byte("PRIVATE%"), check: urlAt},
	{s: []byte("PRIVATE+"), check: urlAt},
	// JWK: the key type's name.
	{s: []byte("kty"), check: jwkAt, behind: jwkSpan},
}

// derMax is the longest DER key looked at: a two-byte length (RSA keys up
// to 16384 bits and more).
const derMax = 4 + 0xFFFF

// fixedReach is a reach of n bytes past the marker, whatever the chunk.
func fixedReach(n int) func([]byte, int) int {
	return func([]byte, int) int { return n }
}

// derSpan is a SEQUENCE header ending right before a version INTEGER:
// where the structure starts and ends.
type derSpan struct{ start, end int }

// derHeaders returns the SEQUENCE headers that may end at at (short,
// 0x81 and 0x82 length forms), with the extent each gives.
func derHeaders(b []byte, at int) []derSpan {
	var out []derSpan
	if at >= 2 && b[at-2] == 0x30 && b[at-1] >= 40 && b[at-1] < 0x80 {
		out = append(out, derSpan{at - 2, at + int(b[at-1])})
	}
	if at >= 3 && b[at-3] == 0x30 && b[at-2] == 0x81 && b[at-1] >= 0x80 {
		out = append(out, derSpan{at - 3, at + int(b[at-1])})
	}
	if at >= 4 && b[at-4] == 0x30 && b[at-3] == 0x82 && b[at-2] != 0 {
		out = append(out, derSpan{at - 4, at + (int(b[at-2])<<8 | int(b[at-1]))})
	}
	return out
}

// derNext reports whether the tag after a version INTEGER of value v
// starts one of the structures: PKCS#1 (v 0, or 1 with other primes) and
// DSA go on with an INTEGER, PKCS#8 (v 0, or 1 for RFC 5958) with the
// algorithm's SEQUENCE, SEC1 (v 1) with the key's OCTET STRING.
func derNext(v, tag byte) bool {
	return tag == 0x02 || tag == 0x30 || v == 1 && tag == 0x04
}

// derStart is the length of the DER private key that head (a file's
// first bytes) may start with, from its SEQUENCE header and the version
// INTEGER after it; 0 when it starts with none.
func derStart(head []byte) int {
	for _, hl := range []int{2, 3, 4} {
		if len(head) < hl+4 || head[hl] != 0x02 || head[hl+1] != 0x01 || head[hl+2] > 1 || !derNext(head[hl+2], head[hl+3]) {
			continue
		}
		for _, h := range derHeaders(head, hl) {
			if h.start == 0 {
				return h.end
			}
		}
	}
	return 0
}

// DERKey reports whether der is, whole, a private key in DER: PKCS#1 RSA,
// OpenSSL's DSA, PKCS#8 (any algorithm) or SEC1 EC.
func DERKey(der []byte) bool {
	var seq asn1.RawValue
	if rest, err := asn1.Unmarshal(der, &seq); err != nil || len(rest) != 0 ||
		seq.Class != asn1.ClassUniversal || seq.Tag != asn1.TagSequence || !seq.IsCompound {
		return false
	}
	b := seq.Bytes
	var ver int
	b, err := asn1.Unmarshal(b, &ver)
	if err != nil || ver != 0 && ver != 1 || len(b) == 0 {
		return false
	}
	switch b[0] {
	case 0x02:
		return rsaOrDSA(b, ver)
	case 0x30:
		return pkcs8(b)
	case 0x04:
		return ver == 1 && sec1(b)
	}
	return false
}

// rsaOrDSA: the integers after the version are an RSA private key (n, e,
// d, p, q, dp, dq, qinv: n divisible by p and by q) or a DSA one (p, q,
// g, y, x: q divides p-1).
func rsaOrDSA(b []byte, ver int) bool {
	var ints []*big.Int
	for len(b) > 0 && b[0] == 0x02 && len(ints) < 8 {
		n := new(big.Int)
		var err error
		if b, err = asn1.Unmarshal(b, &n); err != nil || n.Sign() <= 0 {
			return false
		}
		ints = append(ints, n)
	}
	zero := new(big.Int)
	switch {
	case len(ints) == 8:
		if len(b) > 0 && !(ver == 1 && onlySequence(b)) {
			return false
		}
		n, p, q := ints[0], ints[3], ints[4]
		one := big.NewInt(1)
		return n.BitLen() >= 256 && p.Cmp(one) > 0 && q.Cmp(one) > 0 &&
			new(big.Int).Mod(n, p).Cmp(zero) == 0 && new(big.Int).Mod(n, q).Cmp(zero) == 0
	case len(ints) == 5 && len(b) == 0 && ver == 0:
		p, q, x := ints[0], ints[1], ints[4]
		pm1 := new(big.Int).Sub(p, big.NewInt(1))
		return p.BitLen() >= 512 && q.BitLen() >= 160 && x.Cmp(q) < 0 &&
			new(big.Int).Mod(pm1, q).Cmp(zero) == 0
	}
	return false
}

// onlySequence: b is one SEQUENCE (multi-prime RSA's other primes).
func onlySequence(b []byte) bool {
	var rv asn1.RawValue
	rest, err := asn1.Unmarshal(b, &rv)
	return err == nil && len(rest) == 0 && rv.Tag == asn1.TagSequence && rv.IsCompound
}

// pkcs8: AlgorithmIdentifier, the private key's OCTET STRING, and at most
// the optional [0] attributes and [1] public key.
func pkcs8(b []byte) bool {
	var alg pkix.AlgorithmIdentifier
	b, err := asn1.Unmarshal(b, &alg)
	if err != nil || len(alg.Algorithm) < 2 {
		return false
	}
	var key []byte
	if b, err = asn1.Unmarshal(b, &key); err != nil || len(key) < 16 {
		return false
	}
	return onlyTagged(b)
}

// sec1: the private key's OCTET STRING (16 to 72 bytes: P-224 to P-521
// and their kin), then at most [0] parameters and [1] public key.
func sec1(b []byte) bool {
	var key []byte
	b, err := asn1.Unmarshal(b, &key)
	if err != nil || len(key) < 16 || len(key) > 72 {
		return false
	}
	return onlyTagged(b)
}

// onlyTagged: b holds nothing but context-specific [0] and [1] fields, in
// that order.
func onlyTagged(b []byte) bool {
	next := 0
	for len(b) > 0 {
		var rv asn1.RawValue
		var err error
		if b, err = asn1.Unmarshal(b, &rv); err != nil || rv.Class != asn1.ClassContextSpecific || rv.Tag < next || rv.Tag > 1 {
			return false
		}
		next = rv.Tag + 1
	}
	return true
}

// unhex decodes hex digits from b, skipping whitespace (xxd -p breaks
// lines), up to max bytes; it stops at anything else.
func unhex(b []byte, max int) []byte {
	out := make([]byte, 0, min(max, len(b)/2))
	hi := -1
	for _, c := range b {
		var v int
		switch {
		case c >= '0' && c <= '9':
			v = int(c - '0')
		case c >= 'a' && c <= 'f':
			v = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v = int(c-'A') + 10
		case c == '\n' || c == '\r' || c == ' ' || c == '\t':
			continue
		default:
			return out
		}
		if hi < 0 {
			hi = v
			continue
		}
		out = append(out, byte(hi<<4|v))
		hi = -1
		if len(out) >= max {
			return out
		}
	}
	return out
}

// hexTextAt: "----" in hex starts a key written as text.
func hexTextAt(data []byte, at int) bool {
	return plainKey(unhex(data[at:], lookAhead))
}

// hexVal is the value of two hex digits at b[i:], or -1.
func hexVal(b []byte, i int) int {
	if i < 0 || i+2 > len(b) {
		return -1
	}
	d := unhex(b[i:i+2], 1)
	if len(d) != 1 {
		return -1
	}
	return int(d[0])
}

// hexDERStarts returns where hex DER headers may start before the version
// marker at at ("2010x" follows the version's "0"), with the length of the
// structure in bytes from there.
func hexDERStarts(b []byte, at int) []derSpan {
	v := at - 1 // the version's "02"
	if v < 0 || b[v] != '0' {
		return nil
	}
	var out []derSpan
	if hexVal(b, v-4) == 0x30 {
		if l := hexVal(b, v-2); l >= 40 && l < 0x80 {
			out = append(out, derSpan{v - 4, 2 + l})
		}
	}
	if hexVal(b, v-6) == 0x30 && hexVal(b, v-4) == 0x81 {
		if l := hexVal(b, v-2); l >= 0x80 {
			out = append(out, derSpan{v - 6, 3 + l})
		}
	}
	if hexVal(b, v-8) == 0x30 && hexVal(b, v-6) == 0x82 {
		if h, l := hexVal(b, v-4), hexVal(b, v-2); h > 0 && l >= 0 {
			out = append(out, derSpan{v - 8, 4 + (h<<8 | l)})
		}
	}
	return out
}

// hexDERReach: how far a hex DER key may reach past its marker (its
// digits, and a line break every 30 bytes as xxd -p writes them).
func hexDERReach(c []byte, i int) int {
	if i < 9 {
		return 2*derMax + derMax/15
	}
	far := -1
	for _, h := range hexDERStarts(c, i) {
		far = max(far, 2*h.end+h.end/15+16)
	}
	return far
}

// hexDERAt: DER written in hex, its version's digits at at-1.
func hexDERAt(data []byte, at int) bool {
	for _, h := range hexDERStarts(data, at) {
		der := unhex(data[h.start:], h.end)
		if len(der) == h.end && DERKey(der) {
			return true
		}
	}
	return false
}

// unescapeURL decodes %XX escapes (and '+' as a space, when plus); other
// bytes are kept.
func unescapeURL(b []byte, plus bool) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '%':
			if v := hexVal(b, i+1); v >= 0 {
				out = append(out, byte(v))
				i += 2
				continue
			}
		case plus && b[i] == '+':
			out = append(out, ' ')
			continue
		}
		out = append(out, b[i])
	}
	return out
}

// urlAt: a key header whose space is URL-encoded, decoded (once or twice:
// an escaped URL in a URL) and checked as text.
func urlAt(data []byte, at int) bool {
	win := data[lineStart(data, at):]
	for range 3 {
		if plainKey(unescapeURL(win, true)) {
			return true
		}
		next := unescapeURL(win, false)
		if plainKey(next) {
			return true
		}
		if bytes.Equal(next, win) {
			return false
		}
		win = next
	}
	return false
}

// jwkSpan is how far around "kty" a JWK's members are looked for: an RSA
// key of 8192 bits is about 7 KiB of JSON.
const jwkSpan = 8 << 10

// jwkType is "kty" with its value: a private key's type.
var jwkType = regexp.MustCompile(`^kty\\?["']?\s*[:=]\s*\\?["']?(RSA|EC|OKP|oct)\b`)

// jwkSecret is a JWK's private member: "d" (RSA, EC, OKP) or "k" (oct),
// as a name in JSON, JavaScript or YAML, quoted or escaped inside a
// string, and its base64url value.
var jwkSecret = regexp.MustCompile(`(?:^|[\s{,"'\\])([dk])\\?["']?\s*[:=]\s*\\?["']?[A-Za-z0-9_-]{20,}`)

// jwkAt: a JSON Web Key with its private member, within the object that
// holds "kty" (or, where no braces enclose it, YAML, near it).
func jwkAt(data []byte, at int) bool {
	m := jwkType.FindSubmatch(data[at:min(len(data), at+64)])
	if m == nil {
		return false
	}
	want := byte('d')
	if string(m[1]) == "oct" {
		want = 'k'
	}
	lo, hi := enclosing(data, at)
	for _, s := range jwkSecret.FindAllSubmatch(data[lo:hi], -1) {
		if s[1][0] == want {
			return true
		}
	}
	return false
}

// enclosing is the span of the braces around at, or 2 KiB either side
// when there are none within reach.
func enclosing(data []byte, at int) (int, int) {
	lo, hi := -1, -1
	for i, depth := at-1, 0; i >= 0 && at-i <= jwkSpan; i-- {
		if data[i] == '}' {
			depth++
		} else if data[i] == '{' {
			if depth == 0 {
				lo = i
				break
			}
			depth--
		}
	}
	for i, depth := at, 0; i < len(data) && i-at <= jwkSpan; i++ {
		if data[i] == '{' {
			depth++
		} else if data[i] == '}' {
			if depth == 0 {
				hi = i + 1
				break
			}
			depth--
		}
	}
	if lo < 0 || hi < 0 {
		return max(0, at-2048), min(len(data), at+2048)
	}
	return lo, hi
}
