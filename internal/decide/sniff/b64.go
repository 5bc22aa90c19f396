package sniff

import (
	"encoding/base64"
	"slices"
	"strings"
)

// Credentials base64-encoded — a Kubernetes Secret's data, a .env file
// or a config passed through `base64`, a token anywhere inside the
// encoded text — are found by decoding the base64 around them and looking
// into it with the same rules; the mask covers the base64 characters that
// encode the credential (rounded out to whole characters, and its padding
// when it ends the value), so it has the length of the encoded bytes.
//
// Where to decode is found from anchors, as for text: the base64 of each
// family's fixed part (its prefix, or the fixed middle of a family told by
// its middle: ".atlasv1.", "_mmk", "8Q~") at each of the three places it
// may sit in a group of three bytes. At each, the characters that its bytes
// alone decide are an anchor; the place says where the group starts
// (b64Patterns), so the decoding starts on a group boundary however far
// the credential is from the start of the run of base64.
//
// Each anchor found decodes a window of the run around it: b64Back
// characters before it and up to maxEncoded in all. Anchors on the same
// grid of groups whose credential the last window decoded already held
// are not decoded again, so a run of anchors costs a few windows per
// maxEncoded characters (per grid), whatever it holds.

// b64Cand is the name of the rule that finds anchors: its spans are
// candidates for the decoding (resolve), never masks.
const b64Cand = "\x00base64"

const (
	// b64Back is how far before an anchor its window starts, in
	// characters (whole groups): room for the part of a credential
	// before its anchor (a MaxMind key's 36 bytes before "_mmk").
	b64Back = 128
	// maxEncoded bounds a window: a scan's look ahead, less its
	// padding.
	maxEncoded = credAhead - 8
	// b64Reach is how far past an anchor a credential is taken to be
	// found whole by a window that reaches that far.
	b64Reach = maxEncoded / 2
)

// Both alphabets, and a window's ends.
var b64any = cls("A-Za-z0-9+/_-")

var _ = [1]int{}[max(0, b64Back-credBack)]

// b64Finder decodes around base64 anchors: inner finds the credentials
// in what is decoded; at maps each anchor to the places in a group
// (bits 0, 2 and 3: the character it starts at) its text may start at.
type b64Finder struct {
	inner *Detector
	at    map[string]uint8
}

// b64Plain are the plain texts whose base64 anchors a window: every
// rule's anchors (a prefix, the fixed middle of a family told by it, the
// name a value follows, in its usual letter cases), made four bytes long
// by the bytes that may follow a shorter one, and the starts of what holds
// credentials (a URL with a password, an AWS credentials file).
func b64Plain() []string {
	starts := []string{"AKIA", "ASIA", "[default]", "aws_access_key_id", "aws_secret_access_key", "AWS_SECRET_ACCESS_KEY"}
	for _, sch := range oneOf("https http postgres postgresql mysql mariadb mongodb mongodb+srv redis rediss amqp amqps ftp sftp smtp smtps ldap ldaps") {
		starts = append(starts, sch+"://")
	}
	long := func(p string, next *class) []string {
		out := []string{p}
		for next != nil && len(out[0]) < 4 {
			var grown []string
			for _, q := range out {
				for c := range 256 {
					if next[c] {
						grown = append(grown, q+string(rune(c)))
					}
				}
			}
			out = grown
		}
		return out
	}
	for _, r := range builtin {
		for _, a := range r.anchors {
			forms := []string{a}
			if r.fold {
				forms = append(forms, strings.ToLower(a), strings.ToUpper(a), strings.ToUpper(a[:1])+strings.ToLower(a[1:]))
			}
			for _, f := range forms {
				starts = append(starts, long(f, r.next)...)
			}
		}
	}
	slices.Sort(starts)
	return slices.Compact(starts)
}

// b64Patterns calls add with each anchor of p's base64 (either alphabet)
// and the character of its group it starts at: p's bytes at offset o of a
// group of three decide the characters from ceil(8o/6) to floor(8(o+len)/6).
// Fewer than four decided characters make no anchor.
func b64Patterns(p string, add func(pat string, ci int)) {
	for o := range 3 {
		buf := make([]byte, o+len(p)+2)
		copy(buf[o:], p)
		enc := base64.StdEncoding.EncodeToString(buf)
		lo, hi := (8*o+5)/6, 8*(o+len(p))/6
		if hi-lo < 4 {
			continue
		}
		std := enc[lo:hi]
		add(std, lo)
		url := []byte(std)
		for i, c := range url {
			switch c {
			case '+':
				url[i] = '-'
			case '/':
				url[i] = '_'
			}
		}
		add(string(url), lo)
	}
}

// newB64 makes the rule finding anchors, and the finder decoding there
// with inner.
func newB64(inner *Detector) (*rule, *b64Finder) {
	f := &b64Finder{inner: inner, at: map[string]uint8{}}
	var anchors []string
	for _, p := range b64Plain() {
		b64Patterns(p, func(pat string, ci int) {
			if f.at[pat] == 0 {
				anchors = append(anchors, pat)
			}
			f.at[pat] |= 1 << ci
		})
	}
	r := &rule{name: b64Cand, anchors: anchors, find: func(c []byte, at, n int, out []span) []span {
		return append(out, span{s: at, e: at + n, family: b64Cand})
	}}
	return r, f
}

// encodedAnchors are the anchors of base64-encoded credentials.
func encodedAnchors() []string {
	r, _ := newB64(nil)
	return r.anchors
}

// b64Window is a window decoded: [ws, we), and whether it stopped for
// its bounds (capped) rather than at the run's ends.
type b64Window struct {
	ws, we             int
	backCapped, capped bool
}

// resolve replaces the candidates among spans (anchors found in c) by
// the credentials their windows decode to.
func (f *b64Finder) resolve(c []byte, spans []span) []span {
	var cands []span
	out := spans[:0]
	for _, s := range spans {
		if s.family == b64Cand {
			cands = append(cands, s)
		} else {
			out = append(out, s)
		}
	}
	if len(cands) == 0 {
		return out
	}
	slices.SortFunc(cands, func(a, b span) int { return a.s - b.s })
	var last [4]*b64Window // the last window on each grid of groups
	var raw, dec []byte
	for _, cand := range cands {
		ci := f.at[string(c[cand.s:cand.e])]
		for k := range 4 {
			if ci&(1<<k) == 0 {
				continue
			}
			gs := cand.s - k
			if gs < 0 {
				continue
			}
			if w := last[gs&3]; w != nil && cand.e <= w.we && (!w.backCapped || gs-b64Back >= w.ws) && (!w.capped || gs+b64Reach <= w.we) {
				continue // decoded whole by the last window
			}
			w := &b64Window{ws: gs, we: gs}
			for w.ws >= 4 && gs-w.ws < b64Back && all64(c[w.ws-4:w.ws]) {
				w.ws -= 4
			}
			w.backCapped = gs-w.ws >= b64Back
			for w.we < len(c) && w.we-w.ws < maxEncoded && b64any[c[w.we]] {
				w.we++
			}
			w.capped = w.we-w.ws >= maxEncoded
			last[gs&3] = w
			raw = append(raw[:0], c[w.ws:w.we]...)
			if len(raw)%4 == 1 { // not a whole last byte
				raw = raw[:len(raw)-1]
			}
			for i, b := range raw {
				switch b {
				case '-':
					raw[i] = '+'
				case '_':
					raw[i] = '/'
				}
			}
			dec = slices.Grow(dec[:0], base64.RawStdEncoding.DecodedLen(len(raw)))[:base64.RawStdEncoding.DecodedLen(len(raw))]
			n, err := base64.RawStdEncoding.Decode(dec, raw)
			if err != nil {
				continue
			}
			ms, _ := merge(f.inner.chunk(dec[:n], 0, n, 0, 1, false, nil))
			for _, m := range ms {
				s := w.ws + int(m.Off)*4/3
				e := min(w.we, w.ws+((int(m.Off)+m.Len)*4+2)/3)
				if int(m.Off)+m.Len == n {
					for e < len(c) && e-w.we < 2 && c[e] == '=' {
						e++
					}
				}
				out = append(out, span{s: s, e: e, family: m.Family})
			}
		}
	}
	return out
}

// all64 reports whether b is all base64.
func all64(b []byte) bool {
	for _, x := range b {
		if !b64any[x] {
			return false
		}
	}
	return true
}
