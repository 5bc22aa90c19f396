package sniff

import (
	"bytes"
	"encoding/base64"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
)

// Private keys are recognised by content anywhere in a file, however they
// are placed: after a BOM, indented, quoted, inside a JSON string with
// escaped newlines, in a YAML or TOML block, with CRLF, commented out,
// base64-encoded as a whole (a Kubernetes secret), or in UTF-16. A key needs
// its header *and* key material — a line of base64 after it — so prose,
// documentation and code that merely mention a header stay readable.
//
// Kinds: PEM "-----BEGIN ... PRIVATE KEY-----" of every kind (RSA, EC, DSA,
// OPENSSH, ENCRYPTED, PKCS#8), PGP "PRIVATE KEY BLOCK", SSH2 "---- BEGIN
// SSH2 ENCRYPTED PRIVATE KEY ----", PuTTY .ppk, and AWS secret access keys
// (credentials files, environment files); and keys in other encodings
// (encoded.go): DER, hex, URL-encoded PEM, JWK.

// marker is a byte string that starts a look at a possible key.
type marker struct {
	s     []byte
	check func(data []byte, at int) bool // at: the marker's offset in data
	// reach, when set, says from the chunk the marker was found in (at
	// its index i) how far past the marker the check reads: -1 when no
	// key can start there, so most places in a binary cost no window.
	// Unset: lookAhead.
	reach func(chunk []byte, i int) int
	// behind is how far back the check reads; 0: lookBehind.
	behind int
}

// plain are the markers of keys written as text.
var plain = []marker{
	{s: []byte("PRIVATE KEY"), check: pemAt},
	{s: []byte("PuTTY-User-Key-File-"), check: puttyAt},
	// "_secret...", "_SECRET...": the AWS names are found from their '_',
	// which they share (one pass, see anchors), and the "aws" or "AWS"
	// before it is checked after.
	{s: []byte("_secret_access_key"), check: awsBefore("aws")},
	{s: []byte("_SECRET_ACCESS_KEY"), check: awsBefore("AWS")},
}

// awsBefore checks an AWS secret key's name found from its '_' (see
// plain): prefix before it, and a key after.
func awsBefore(prefix string) func(d []byte, at int) bool {
	return func(d []byte, at int) bool {
		return at >= len(prefix) && string(d[at-len(prefix):at]) == prefix && awsAt(d, at-len(prefix))
	}
}

// markers are plain's, the same keys base64-encoded whole (a Kubernetes
// secret), and keys in other encodings (encoded: DER, hex, URL-encoded,
// JWK). A chunk is searched once per first byte among them (see anchors),
// so they are few.
var markers = append(append(append([]marker{}, plain...),
	marker{s: []byte("LS0tLS"), check: base64At},   // "----" (PEM, SSH2)
	marker{s: []byte("UHVUVFkt"), check: base64At}, // "PuTTY-"
), encoded...)

// wide are the keys in UTF-16 and UTF-32, each starting with "P" and a
// NUL (such text of ASCII has a NUL in every other byte, or three in
// four): found from the 'P' that "PRIVATE KEY" starts with too (see
// anchors). fsguard read shows text in either encoding when it has a BOM.
//
// One marker serves both byte orders: in ASCII the big-endian bytes are
// the little-endian ones shifted by a unit's padding ("\0P\0R\0I" holds
// "P\0R\0I"), so the little-endian form less its last padding is found
// in either, and text decoded as little-endian from where it was found
// reads the same either way. Searching each byte order apart would double
// the passes, and a big-endian marker starts with a NUL, so bytes.Index
// would stop at every NUL of the chunk; the first read of every
// large file waits for this whole-content scan, so each chunk takes one
// pass per marker here, whatever the byte order.
var wide = func() []marker {
	var ms []marker
	for _, s := range []string{"PRIVATE KEY", "PuTTY-User-Key-File-"} {
		for _, unit := range []int{2, 4} {
			le := wideLE(s, unit)
			ms = append(ms, marker{s: le[:len(le)-(unit-1)], check: wideAt(unit)})
		}
	}
	return ms
}()

// anchors are the markers, plain, base64, encoded and wide, grouped by
// their first byte: a chunk is searched once per anchor (bytes.IndexByte),
// each place it is found compared with the markers that start there.
// "PRIVATE KEY", its URL-encoded forms, "PuTTY-..." and the wide markers
// share 'P', the AWS names '_', the hex ones '2': a pass per distinct first
// byte rather than one per marker, and the first read of every large file
// waits for the whole-content scan.
var anchors = func() []anchor {
	var as []anchor
	for _, m := range append(append([]marker{}, markers...), wide...) {
		i := slices.IndexFunc(as, func(a anchor) bool { return a.b == m.s[0] })
		if i < 0 {
			i = len(as)
			as = append(as, anchor{b: m.s[0]})
		}
		as[i].ms = append(as[i].ms, m)
		as[i].next[m.s[1]] = true // every marker has two bytes at least
	}
	return as
}()

// anchor is a first byte and the markers that start with it.
type anchor struct {
	b  byte
	ms []marker
	// next holds the second bytes of ms. An anchor byte is met every 256
	// bytes of binary data (a git pack, a dataset) and on most lines of
	// code ('_'); comparing each place with every marker that starts
	// there made those places, not the passes, most of the scan's time.
	// One look at the byte after rules out nearly all of them.
	next [256]bool
}

// plainKey reports whether decoded text holds a key written as text.
func plainKey(text []byte) bool {
	for _, m := range plain {
		for i := 0; ; {
			j := bytes.Index(text[i:], m.s)
			if j < 0 {
				break
			}
			if m.check(text, i+j) {
				return true
			}
			i += j + 1
		}
	}
	return false
}

// Around a marker, a check looks this far back (to the header's start) and
// ahead (headers of the key, then its first line of material).
const (
	lookBehind = 256
	lookAhead  = 8 << 10
)

// maxMarker is the longest marker, so chunks overlap enough to find each
// marker exactly once.
var maxMarker = func() int {
	n := 0
	for _, m := range append(append([]marker{}, markers...), wide...) {
		n = max(n, len(m.s))
	}
	return n
}()

// FindKeyIn scans the first size bytes of r for a private key and returns
// the offset of the first marker that proves one, or -1. buf is the chunk
// buffer (nil: one of 1 MiB is made); the scan reads each byte once, plus a
// few KiB around each marker.
func FindKeyIn(r io.ReaderAt, size int64, buf []byte) (int64, error) {
	if buf == nil {
		// Sized to what there is: a classification's 8 KiB sample must not
		// cost a cleared 1 MiB, since every first lookup makes one.
		buf = make([]byte, min(size, 1<<20))
	}
	return findKeyIn(r, 0, size, size, buf)
}

// FindKeyInHalves is FindKeyIn over the two halves of the file at once,
// each with its own chunk buffer: a large file's first read waits for its
// whole-content scan, and a second core halves that wait. The answer is
// FindKeyIn's: the first marker that proves a key.
func FindKeyInHalves(r io.ReaderAt, size int64, buf1, buf2 []byte) (int64, error) {
	mid := size / 2
	type found struct {
		at  int64
		err error
	}
	second := make(chan found, 1)
	go func() {
		at, err := findKeyIn(r, mid, size, size, buf2)
		second <- found{at, err}
	}()
	// The first half runs on past mid by a marker less a byte, as chunks
	// overlap: a marker cut at mid is found whole, by the first half.
	at, err := findKeyIn(r, 0, min(size, mid+int64(maxMarker-1)), size, buf1)
	other := <-second
	switch {
	case err != nil:
		return -1, err
	case at >= 0:
		return at, nil
	}
	return other.at, other.err
}

// findKeyIn scans the bytes [from, to) of r for the marker of a key, each
// checked in its window of the first size bytes.
func findKeyIn(r io.ReaderAt, from, to, size int64, buf []byte) (int64, error) {
	var win []byte
	// The window around a marker is read again, so a check never depends
	// on where a chunk ended.
	window := func(from, want int64) ([]byte, error) {
		if cap(win) < int(want) {
			win = make([]byte, want)
		}
		w, err := r.ReadAt(win[:want], from)
		if err != nil && err != io.EOF {
			return nil, err
		}
		return win[:w], nil
	}
	for off := from; off < to; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), to-off)], off)
		if n == 0 && err != nil {
			if err == io.EOF {
				return -1, nil
			}
			return -1, err
		}
		if at, err := findInChunk(buf[:n], off, size, window); at >= 0 || err != nil {
			return at, err
		}
		if off+int64(n) >= to {
			break
		}
		// Overlap by one marker less a byte: a marker cut by the chunk's end
		// is found whole in the next chunk, and none is found twice.
		off += int64(max(n-(maxMarker-1), 1))
	}
	return -1, nil
}

// findInChunk looks for the markers in chunk, which starts at off of a
// file of size bytes; window gives the bytes [from, from+want) of the file
// for a marker's check. It returns the first marker that proves a key, or
// -1.
func findInChunk(chunk []byte, off, size int64, window func(from, want int64) ([]byte, error)) (int64, error) {
	return findInChunkFrom(chunk, off, 0, size, window)
}

// findInChunkFrom is findInChunk for bytes of the file from floor on: no
// check's window reaches before floor (a marker that looks further back
// than lookBehind, as a JWK's does, sees what there is).
func findInChunkFrom(chunk []byte, off, floor, size int64, window func(from, want int64) ([]byte, error)) (int64, error) {
	if off == 0 {
		// A DER key is looked for where it is kept: at the start (see
		// encoded.go).
		if n := derStart(chunk); n > 0 && int64(n) <= size {
			win, err := window(0, int64(n))
			if err != nil {
				return -1, err
			}
			if DERKey(win) {
				return 0, nil
			}
		}
	}
	// proves checks the marker m found at i of the chunk in its window.
	proves := func(m marker, i int) (int64, bool, error) {
		at := off + int64(i)
		ahead, behind := lookAhead, lookBehind
		if m.reach != nil {
			if ahead = m.reach(chunk, i); ahead < 0 {
				return at, false, nil
			}
		}
		if m.behind > 0 {
			behind = m.behind
		}
		from := max(floor, at-int64(behind))
		win, err := window(from, min(size, at+int64(len(m.s)+ahead))-from)
		if err != nil {
			return -1, false, err
		}
		return at, m.check(win, int(at-from)), nil
	}
	for _, a := range anchors {
		for i := 0; ; {
			j := bytes.IndexByte(chunk[i:], a.b)
			if j < 0 {
				break
			}
			i += j
			if i+1 >= len(chunk) || !a.next[chunk[i+1]] {
				// No marker starts here (one cut by the chunk's end is
				// found whole in the next chunk, see findKeyIn).
				i++
				continue
			}
			for _, m := range a.ms {
				if bytes.HasPrefix(chunk[i:], m.s) {
					if at, ok, err := proves(m, i); ok || err != nil {
						return at, err
					}
				}
			}
			i++
		}
	}
	return -1, nil
}

// HasKey reports whether b holds a private key. It is searched where it
// lies: a listing's whole read of each small file asks this, and a copy
// of b per file was a tenth of a cold walker's allocations.
func HasKey(b []byte) bool {
	at, _ := findInChunk(b, 0, int64(len(b)), func(from, want int64) ([]byte, error) {
		return b[from : from+want], nil
	})
	return at >= 0
}

// pemHeader is a PEM, PGP or SSH2 private key header around "PRIVATE KEY".
var pemHeader = regexp.MustCompile(`-{4,5} ?BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{4,5}`)

// pemAt: "PRIVATE KEY" inside a header line, followed by key material.
func pemAt(data []byte, at int) bool {
	start := lineStart(data, at)
	loc := pemHeader.FindIndex(data[start:min(len(data), at+64)])
	if loc == nil || start+loc[0] > at || start+loc[1] < at {
		return false
	}
	return materialAfter(data[start+loc[1]:])
}

// puttyAt: a PuTTY key file header, and its private lines.
func puttyAt(data []byte, at int) bool {
	rest := data[at:]
	i := bytes.Index(rest, []byte("Private-Lines:"))
	if i < 0 {
		return false
	}
	return materialAfter(rest[i+len("Private-Lines:"):])
}

// awsValue is what follows an AWS secret key's name: = or :, then 40 chars.
var awsValue = regexp.MustCompile(`^["']?\s*[=:]\s*["']?[A-Za-z0-9/+]{40}(?:[^A-Za-z0-9/+]|$)`)

func awsAt(data []byte, at int) bool {
	return awsValue.Match(data[at+len("aws_secret_access_key"):])
}

// base64At: a base64 run that decodes to a key written as text. The run
// goes on across line breaks and the indentation after them: `base64`
// wraps its output at 76 columns, and a YAML block or an indented string
// holds it in lines, so the first line alone decodes to the header and
// too little material. At most maxB64Run characters are taken.
func base64At(data []byte, at int) bool {
	run := make([]byte, 0, min(len(data)-at, maxB64Run))
	for i := at; i < len(data) && len(run) < maxB64Run; i++ {
		c := data[i]
		if isBase64(c) {
			run = append(run, c)
			continue
		}
		if c != '\n' && c != '\r' {
			break
		}
		// A line break: the run goes on on the next line, after its
		// indentation.
		for i+1 < len(data) && (data[i+1] == '\n' || data[i+1] == '\r' || data[i+1] == ' ' || data[i+1] == '\t') {
			i++
		}
	}
	run = run[:len(run)/4*4]
	dec := make([]byte, base64.StdEncoding.DecodedLen(len(run)))
	n, _ := base64.StdEncoding.Decode(dec, run)
	return plainKey(dec[:n])
}

// maxB64Run bounds the base64 characters base64At decodes: a key's header
// and its first lines of material are well within it, and its line breaks
// and indentation still fit in a check's window (lookAhead).
const maxB64Run = 6 << 10

// wideAt decodes the window around a UTF-16 (unit 2) or UTF-32 (unit 4)
// marker as little-endian from the marker's alignment (big-endian text is
// read the same from there: see wide) and checks it as text. Units that
// are not characters are left out: they cannot be part of a key's text.
func wideAt(unit int) func([]byte, int) bool {
	return func(data []byte, at int) bool {
		var units []uint16
		var text []rune
		for i := at % unit; i+unit <= len(data); i += unit {
			var v uint32
			for k := 0; k < unit; k++ {
				v |= uint32(data[i+k]) << (8 * k)
			}
			if unit == 2 {
				units = append(units, uint16(v))
			} else if v <= unicode.MaxRune {
				text = append(text, rune(v))
			}
		}
		if unit == 2 {
			text = utf16.Decode(units)
		}
		return plainKey([]byte(string(text)))
	}
}

// wideLE encodes s in UTF-16 (unit 2) or UTF-32 (unit 4), little-endian.
func wideLE(s string, unit int) []byte {
	var vals []uint32
	if unit == 2 {
		for _, u := range utf16.Encode([]rune(s)) {
			vals = append(vals, uint32(u))
		}
	} else {
		for _, r := range s {
			vals = append(vals, uint32(r))
		}
	}
	var b []byte
	for _, v := range vals {
		for k := 0; k < unit; k++ {
			b = append(b, byte(v>>(8*k)))
		}
	}
	return b
}

// lineStart is where the line holding at begins: after a newline, or after
// an escaped "\n" (a key inside a JSON or quoted string), at most
// lookBehind back.
func lineStart(data []byte, at int) int {
	for i := at - 1; i >= 0 && at-i < lookBehind; i-- {
		if data[i] == '\n' || data[i] == '\r' || (data[i] == 'n' && i > 0 && data[i-1] == '\\') {
			return i + 1
		}
	}
	return max(0, at-lookBehind)
}

// materialAfter reports whether key material follows a header: the first
// line that is neither empty nor an RFC 1421-style header ("Proc-Type:
// 4,ENCRYPTED", "Comment: ...", "Version: ...") nor its continuation is
// at least minMaterial base64 characters, once the quoting and indentation
// of its placement are taken off. The rest of the header's own line counts
// too (a key written on one line).
func materialAfter(rest []byte) bool {
	lines := splitLines(rest)
	for i, raw := range lines {
		l := unwrap(raw)
		if i == 0 {
			// The header line's remainder: one long token is a one-line key.
			for _, tok := range strings.Fields(l) {
				if len(tok) >= minMaterial && allBase64(tok) {
					return true
				}
			}
			continue
		}
		if l == "" {
			continue
		}
		if strings.Contains(l, ":") && !allBase64(l) {
			continue // a header of the key
		}
		if i > 1 && strings.HasSuffix(strings.TrimSpace(lines[i-1]), `\`) {
			continue // a header's continuation
		}
		return len(l) >= minMaterial && allBase64(l)
	}
	return false
}

// minMaterial is the shortest first line of key material taken: PEM lines
// are 64 characters, OpenSSH's 70; an excerpt in documentation ("MIIEpAIB...")
// is shorter.
const minMaterial = 32

// splitLines splits on newlines, carriage returns and escaped "\n" or
// "\r\n" (a key inside a string), at most 16 lines.
func splitLines(b []byte) []string {
	s := string(b)
	s = strings.NewReplacer(`\r\n`, "\n", `\n`, "\n", `\r`, "\n", "\r\n", "\n", "\r", "\n").Replace(s)
	parts := strings.SplitN(s, "\n", 17)
	if len(parts) > 16 {
		parts = parts[:16]
	}
	return parts
}

// unwrap takes off what a placement puts around a line of material:
// indentation, quotes, comment leaders, YAML and string-concatenation marks.
func unwrap(l string) string {
	l = strings.TrimSpace(l)
	for {
		before := l
		l = strings.TrimLeft(l, " \t\"'`|>")
		for _, p := range []string{"#", "//", ";", "*", "-"} {
			if strings.HasPrefix(l, p) && !strings.HasPrefix(l, "----") {
				l = strings.TrimPrefix(l, p)
			}
		}
		l = strings.TrimRight(l, " \t\"'`,+;\\")
		if l == before {
			return l
		}
	}
}

func allBase64(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isBase64(s[i]) {
			return false
		}
	}
	return true
}

func isBase64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}
