package sniff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"sync"

	"github.com/fsguard/fsguard/internal/concept/charset"
	"github.com/fsguard/fsguard/internal/concept/policy"
)

// Credentials in ordinary text — tokens, and passwords in URLs and
// connection strings — are found by a Detector and masked in place (see
// Mask). A family is recognised by its structure: a provider's prefix, then
// the length and alphabet of what follows, and its checksum where the
// provider publishes one; or, where the value alone is ambiguous (an AWS
// secret key, a password), by the context around it. Base64 (a
// Kubernetes Secret's data) is decoded around the encodings of the
// families' fixed parts and looked into with the same rules (b64.go).
//
// A scan looks only where an anchor (a family's prefix, or the name a
// value follows) is: each anchor has a key, four of its bytes, and a scan
// hashes the three bytes at every other position into a bit table of the
// keys' three-byte runs (every key holds one that is sampled). Text
// without a candidate costs a load, a multiply and a table test per two
// bytes; a sampled hit is checked against two more tables of whole keys
// before any rule looks.

// MaxMasks is the most masks one file may have: past it Scan returns
// ErrTooManyMasks, and the file is refused rather than shown raw.
const MaxMasks = 4096

// ErrTooManyMasks is returned by Scan for a file holding more than
// MaxMasks credentials.
var ErrTooManyMasks = errors.New("sniff: more credentials than can be masked")

// Around a key, a rule looks at most this many code units back (its
// anchor may start up to policy.MaxSecretAnchor before the key, a policy's
// rule looks policy.MaxSecretMatch back from there) and ahead: chunks
// overlap by both, so a credential cut by a chunk boundary is found whole,
// from the one chunk that owns its key.
const (
	credBack  = 640
	credAhead = 4608
	// minChunk is the least chunk a scan reads (in bytes, for the widest
	// code unit): each must own some positions beyond its overlaps.
	minChunk = 4 * 4 * (credBack + credAhead)
)

// A span is a credential a rule found, in the scanned text's units:
// [s, e), its first keep units shown.
type span struct {
	s, e, keep int
	family     string // "": the rule's own
}

// A rule is one family (or a policy's own rule): where to look (anchors),
// and how to tell a credential there.
type rule struct {
	name    string
	anchors []string
	// fold: anchors match in any letter case.
	fold bool
	// next is, for anchors shorter than four bytes, the bytes that may
	// follow them (the table is keyed on four).
	next *class
	// find looks at the anchor found at c[at:at+n] and appends what it
	// finds. c holds credBack units before at and credAhead after it, or
	// the text's start or end.
	find func(c []byte, at, n int, out []span) []span
}

// class is a set of bytes.
type class [256]bool

// The prefilter's bit tables: 2^18 bits (32 KiB) each, few enough that
// they stay cached, enough that code without an anchor rarely hits them.
const (
	tripleBits = 18
	hashBits   = 18
)

// hash3 hashes the low three bytes of v into the triples table.
func hash3(v uint32) uint32 { return ((v & 0xFFFFFF) * 0x9E3779B1) >> (32 - tripleBits) }

// hash4 and hash4b are two independent hashes of a key: a position is
// looked up in the map of keys only when both have its bit set.
func hash4(w uint32) uint32  { return (w * 0x9E3779B1) >> (32 - hashBits) }
func hash4b(w uint32) uint32 { return (w * 0x85EBCA77) >> (32 - hashBits) }

// A Detector finds credentials. It is built once from a policy and never
// changes: it is safe for concurrent use.
type Detector struct {
	// triples has the bit hash3 of both three-byte runs of every key: a
	// scan samples every other position's three bytes, so a key at p is
	// found from p or p+1, whichever is sampled.
	triples [1 << tripleBits / 64]uint64
	// bloom has the bit hash4 of every key, confirm its hash4b.
	bloom, confirm [1 << hashBits / 64]uint64
	// keys maps a key (little-endian) to the anchors that hold it.
	keys  map[uint32][]hit
	rules []*rule
	// on holds the families reported; a rule may find a neighbour's
	// family (an AWS key id finds the secret beside it).
	on map[string]bool
	// esc, when set, finds credentials written with escapes, in the text
	// it decodes (escaped.go).
	esc *Detector
	// b64, when set, decodes base64 around the anchors its rule finds
	// (b64.go).
	b64 *b64Finder
}

// hit is an anchor of a rule.
type hit struct {
	rule   *rule
	anchor string
	off    int // where the four bytes sit in the anchor
}

// NewDetector builds the detector for a policy's [secrets] section (its
// rules already compiled, as policy.Parse leaves them). With masking off,
// it finds nothing.
func NewDetector(cfg policy.Secrets) (*Detector, error) {
	d, err := withEncoded(cfg)
	if err != nil || len(d.rules) == 0 {
		return d, err
	}
	// Credentials written with escapes are found by decoding them and
	// looking with the same rules (escaped.go).
	if d.esc, err = withEncoded(cfg); err != nil {
		return nil, err
	}
	return d, nil
}

// withEncoded is the detector of cfg's rules, and of credentials
// base64-encoded (a Kubernetes Secret's data), found by decoding them and
// looking with the same rules (b64.go).
func withEncoded(cfg policy.Secrets) (*Detector, error) {
	d, err := newDetector(cfg)
	if err != nil || len(d.rules) == 0 {
		return d, err
	}
	inner, err := newDetector(cfg)
	if err != nil {
		return nil, err
	}
	r, f := newB64(inner)
	d.add(r)
	d.b64 = f
	return d, nil
}

func newDetector(cfg policy.Secrets) (*Detector, error) {
	d := &Detector{keys: map[uint32][]hit{}, on: map[string]bool{}}
	if !cfg.Masks() {
		return d, nil
	}
	for _, f := range cfg.Families() {
		d.on[f] = true
	}
	for _, r := range builtin {
		if d.on[r.name] {
			d.add(r)
		}
	}
	if cfg.Generic && d.on[policy.GenericSecret] {
		d.add(genericRule)
	}
	for _, pr := range cfg.Rules {
		if !d.on[pr.Name] {
			continue
		}
		r, err := customRule(pr)
		if err != nil {
			return nil, err
		}
		d.add(r)
	}
	return d, nil
}

// Families returns the families d looks for, sorted.
func (d *Detector) Families() []string {
	var fs []string
	for f := range d.on {
		fs = append(fs, f)
	}
	slices.Sort(fs)
	return fs
}

// add puts r's anchors into the prefilter. An anchor is looked for by
// four of its bytes, its key: for a longer anchor, the four that code and
// prose hold least often (by the pairs of bytes in them).
func (d *Detector) add(r *rule) {
	d.rules = append(d.rules, r)
	for _, a := range r.anchors {
		best, bestCost := 0, -1
		for off := 0; off == 0 || off+4 <= len(a); off++ {
			cost := 0
			for _, k := range expand(a[off:], r.fold, r.next) {
				cost += commonness(le16(k)) + commonness(le16(k[1:])) + commonness(le16(k[2:]))
			}
			if bestCost < 0 || cost < bestCost {
				best, bestCost = off, cost
			}
		}
		for _, k := range expand(a[best:], r.fold, r.next) {
			w := binary.LittleEndian.Uint32(k)
			h, g := hash4(w), hash4b(w)
			d.bloom[h>>6] |= 1 << (h & 63)
			d.confirm[g>>6] |= 1 << (g & 63)
			d.keys[w] = append(d.keys[w], hit{r, a, best})
			for j := range 2 {
				t := hash3(w >> (8 * j))
				d.triples[t>>6] |= 1 << (t & 63)
			}
		}
	}
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

// commonPairs are the 256 byte pairs most frequent in source code and its
// documentation, most frequent first: they cover most of such text, so a
// run of rare pairs stands out.
const commonPairs = "  \x00\x00\n\t, \t\t 0inere 0xrent= teon tes: storths 00att et//r en)\nn  ialse a/ tr sti{\n {hele}\n0  =rrri edengmeroan) d arcox0itunedf \n\n,\npe \"urta cil f\t}io nndnsrn oif\\xistu r\n nctoliecneaslocaamct bce\tr :\ti:=nigeuemaAA p (ra\n/ve meal \t/ou\",foicfiacypllo ex dad lnautpts.ot.\nt.ch uc elvay ckodpa\xff\xfffursty()64 wffomimui\"\nmpsiprhapo},Inagrtemlu *x1ssCotsRee. Xe:olocno0,g ofhi vrula0\\apefop !e,e\nida us\n}igke Rai32e(ulscgo:\n\nf Tdiie),beSt 1 [rgr(\t{!=pl\x01\x00sh hx8ddbyfa1,t,os))h t(sasomoErldoo /Op\tcab12r)1610lsttnf C1 bue)su"

// commonness is how often two bytes follow each other in code, as
// Zipf's law has it from their rank: 1000 for the most frequent pair, 500
// for the second, ..., 0 past the 256th.
func commonness(g uint16) int { return int(commonnessTable()[g]) }

// commonnessTable is commonness of every pair, worked out once: a detector
// has thousands of anchors (base64's among them) to place.
var commonnessTable = sync.OnceValue(func() *[1 << 16]uint16 {
	var t [1 << 16]uint16
	for i := len(commonPairs) - 2; i >= 0; i -= 2 {
		t[le16([]byte(commonPairs[i:]))] = uint16(1000 / (i/2 + 1))
	}
	return &t
})

// expand returns every four bytes an anchor may start with: its letters
// in both cases when fold, and the bytes of next after a shorter one.
func expand(a string, fold bool, next *class) [][]byte {
	out := [][]byte{{}}
	for i := range 4 {
		var opts []byte
		switch {
		case i < len(a) && fold && isLetter(a[i]):
			opts = []byte{a[i] | 0x20, a[i] &^ 0x20}
		case i < len(a):
			opts = []byte{a[i]}
		case next == nil:
			panic(fmt.Sprintf("sniff: anchor %q is shorter than 4 bytes and says nothing of the bytes after it", a))
		default:
			for c := range 256 {
				if next[c] {
					opts = append(opts, byte(c))
				}
			}
		}
		var grown [][]byte
		for _, p := range out {
			for _, c := range opts {
				grown = append(grown, append(slices.Clip(p), c))
			}
		}
		out = grown
	}
	return out
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// Find returns the credentials in b, a whole file's bytes, sorted by Off
// and not overlapping: all of them, so a caller refuses b when there are
// more than MaxMasks (as Scan does).
func (d *Detector) Find(b []byte) []Mask {
	if len(d.rules) == 0 {
		return nil
	}
	unit, be := units(b)
	// Every file is read as 8-bit text too: one that starts with a byte
	// order mark may hold none after it.
	out := d.chunk(b, 0, len(b), 0, 1, false, nil)
	if unit > 1 {
		n := narrow(slices.Clone(b[:len(b)/unit*unit]), unit, be)
		out = d.chunk(n, 0, len(n), 0, unit, be, out)
	}
	out, _ = merge(out)
	return out
}

// Scan returns the credentials in the first size bytes of r, sorted by Off
// and not overlapping (a file starting with a byte order mark read both
// as its code units and as 8-bit text), reading it in chunks of len(buf) (at least
// minChunk: a smaller buf is replaced). It holds nothing of the file but
// the masks; past MaxMasks it stops with ErrTooManyMasks, and a file
// shorter than size (changed while scanned) is io.ErrUnexpectedEOF.
func (d *Detector) Scan(r io.ReaderAt, size int64, buf []byte) ([]Mask, error) {
	unit, be, err := d.head(r, size)
	if unit == 0 || err != nil {
		return nil, err
	}
	if unit == 1 {
		return d.scanRange(r, size, 0, size, 1, false, buf)
	}
	// A byte order mark may have 8-bit text after it: both readings.
	narrowed, err := d.scanRange(r, size, 0, size, 1, false, buf)
	if err != nil {
		return nil, err
	}
	size -= size % int64(unit) // whole code units: a scan's chunks end on one
	wide, err := d.scanRange(r, size, 0, size, unit, be, buf)
	if err != nil {
		return nil, err
	}
	return merge(append(narrowed, wide...))
}

// ScanHalves is Scan on two goroutines, each over half of the file with
// its own buffer: the first read of a large file waits for its scan.
func (d *Detector) ScanHalves(r io.ReaderAt, size int64, buf1, buf2 []byte) ([]Mask, error) {
	unit, be, err := d.head(r, size)
	if unit == 0 || err != nil {
		return nil, err
	}
	if unit > 1 {
		return d.Scan(r, size, buf1) // both readings; a rare file
	}
	half := size / 2
	half -= half % int64(unit)
	var second []Mask
	var err2 error
	done := make(chan struct{})
	go func() {
		defer close(done)
		second, err2 = d.scanRange(r, size, half, size, unit, be, buf2)
	}()
	first, err := d.scanRange(r, size, 0, half, unit, be, buf1)
	<-done
	if err == nil {
		err = err2
	}
	if err != nil {
		return nil, err
	}
	return merge(append(first, second...))
}

// head reads the start of a file for its code units (0: nothing to scan).
func (d *Detector) head(r io.ReaderAt, size int64) (unit int, be bool, err error) {
	if len(d.rules) == 0 || size <= 0 {
		return 0, false, nil
	}
	var head [4]byte
	n, err := r.ReadAt(head[:min(size, 4)], 0)
	if n < int(min(size, 4)) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, false, err
	}
	unit, be = units(head[:n])
	return unit, be, nil
}

// scanRange finds the credentials whose keys lie in [from, to) of a file
// of size bytes in code units of unit bytes: chunks of buf, each reading
// credBack units before the part it owns and credAhead after, so a
// credential cut by a chunk's or the range's edge is found whole, by the
// one chunk (of the one range) that owns its key.
func (d *Detector) scanRange(r io.ReaderAt, size, from, to int64, unit int, be bool, buf []byte) ([]Mask, error) {
	if len(buf) < minChunk {
		buf = make([]byte, minChunk)
	}
	buf = buf[:len(buf)/unit*unit]
	u := int64(unit)
	start := max(0, from-credBack*u)
	start -= start % u
	lo := int((from - start) / u)
	var out []Mask
	for start < size {
		want := min(int64(len(buf)), size-start)
		want -= want % u
		if want == 0 {
			break
		}
		n, err := r.ReadAt(buf[:want], start)
		if n < int(want) {
			// The file is shorter than size: it changed while scanned.
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		atEnd := start+want >= size
		c := buf[:n-n%unit]
		if unit > 1 {
			c = narrow(c, unit, be)
		}
		hi := len(c)
		if !atEnd {
			hi = len(c) - credAhead
		}
		last := atEnd
		if end := int((to - start) / u); end <= hi {
			hi, last = end, true
		}
		out = d.chunk(c, lo, hi, start, unit, be, out)
		if len(out) > 2*MaxMasks {
			if out, err = merge(out); err != nil {
				return nil, err
			}
		}
		if last {
			break
		}
		start += int64(hi-credBack) * u
		lo = credBack
	}
	return merge(out)
}

// units returns the code unit a file's first bytes announce by their BOM.
func units(head []byte) (int, bool) {
	switch charset.Detect(head) {
	case charset.UTF16LE:
		return 2, false
	case charset.UTF16BE:
		return 2, true
	case charset.UTF32LE:
		return 4, false
	case charset.UTF32BE:
		return 4, true
	}
	return 1, false
}

// narrow rewrites b's code units, in place, as one byte each: the unit's
// value when it is ASCII, else 0x80 (which no credential holds). It
// returns the narrowed text, len(b)/unit bytes.
func narrow(b []byte, unit int, be bool) []byte {
	n := len(b) / unit
	for k := range n {
		u := b[k*unit : k*unit+unit]
		var v uint32
		switch {
		case unit == 2 && be:
			v = uint32(binary.BigEndian.Uint16(u))
		case unit == 2:
			v = uint32(binary.LittleEndian.Uint16(u))
		case be:
			v = binary.BigEndian.Uint32(u)
		default:
			v = binary.LittleEndian.Uint32(u)
		}
		if v >= 0x80 {
			v = 0x80
		}
		b[k] = byte(v)
	}
	return b[:n]
}

// chunk finds the credentials whose anchors start in c[lo:hi] and appends
// them as masks: c's unit k is the file's bytes from base+k*unit.
func (d *Detector) chunk(c []byte, lo, hi int, base int64, unit int, be bool, out []Mask) []Mask {
	var spans []span
	end := min(hi, len(c)-3)
	// Every other position's two bytes are looked up in pairAny, from
	// lo: four samples per 8-byte load, the hot loop of every scan.
	last := lo - 1 // the last position looked at: none twice
	q := lo
	for ; q+8 <= len(c) && q <= end; q += 6 {
		x := binary.LittleEndian.Uint64(c[q:])
		t0, t1, t2 := hash3(uint32(x)), hash3(uint32(x>>16)), hash3(uint32(x>>32))
		if (d.triples[t0>>6]>>(t0&63)|d.triples[t1>>6]>>(t1&63)|d.triples[t2>>6]>>(t2&63))&1 == 0 {
			continue
		}
		// A sample here: the six positions whose keys these samples
		// hold, each tested without a branch, then the few that pass.
		var found uint32
		for k := range 6 {
			p := q - 1 + k
			if p <= last || p >= end {
				continue
			}
			w := binary.LittleEndian.Uint32(c[p:])
			h, g := hash4(w), hash4b(w)
			found |= uint32((d.bloom[h>>6]>>(h&63))&(d.confirm[g>>6]>>(g&63))&1) << k
		}
		last = q + 4
		for ; found != 0; found &= found - 1 {
			p := q - 1 + bits.TrailingZeros32(found)
			spans = d.look(c, p, binary.LittleEndian.Uint32(c[p:]), spans)
		}
	}
	// Every position before q-1 had its samples; the rest, one by one.
	for p := max(q-1, last+1, lo); p < end; p++ {
		w := binary.LittleEndian.Uint32(c[p:])
		if h, g := hash4(w), hash4b(w); (d.bloom[h>>6]>>(h&63))&(d.confirm[g>>6]>>(g&63))&1 != 0 {
			spans = d.look(c, p, w, spans)
		}
	}
	if d.b64 != nil {
		spans = d.b64.resolve(c, spans)
	}
	if d.esc != nil {
		spans = findEscaped(d.esc, c, lo, hi, base/int64(unit), spans)
	}
	// The last three positions hold no anchor's four bytes; an anchor
	// shorter than that ending the text has nothing after it to mask.
	for _, s := range spans {
		if s.s < 0 || s.e > len(c) || s.e <= s.s {
			continue
		}
		fam := s.family
		if !d.on[fam] {
			continue
		}
		keep := min(s.keep, s.e-s.s)
		out = append(out, Mask{
			Family: fam, Off: base + int64(s.s)*int64(unit), Len: (s.e - s.s) * unit,
			Keep: keep * unit, Unit: unit, BigEndian: be && unit > 1,
		})
	}
	return out
}

// look tries the anchors whose key is w, at c[p:].
func (d *Detector) look(c []byte, p int, w uint32, spans []span) []span {
	for _, h := range d.keys[w] {
		a, at := h.anchor, p-h.off
		if !hasAt(c, at, a, h.rule.fold) {
			continue
		}
		from := len(spans)
		spans = h.rule.find(c, at, len(a), spans)
		for k := from; k < len(spans); k++ {
			if spans[k].family == "" {
				spans[k].family = h.rule.name
			}
		}
	}
	return spans
}

// hasAt reports whether c holds s at i (in any letter case when fold).
func hasAt(c []byte, i int, s string, fold bool) bool {
	if i < 0 || i+len(s) > len(c) {
		return false
	}
	for k := range len(s) {
		x, y := c[i+k], s[k]
		if x != y && !(fold && isLetter(y) && x|0x20 == y|0x20) {
			return false
		}
	}
	return true
}

// merge sorts masks by Off and joins those that overlap (the first one's
// family; its kept prefix never hides what the other masks). More than
// MaxMasks are all returned, with ErrTooManyMasks.
func merge(ms []Mask) ([]Mask, error) {
	slices.SortFunc(ms, func(a, b Mask) int {
		if a.Off != b.Off {
			if a.Off < b.Off {
				return -1
			}
			return 1
		}
		return b.Len - a.Len
	})
	out := ms[:0]
	for _, m := range ms {
		if len(out) > 0 {
			p := &out[len(out)-1]
			pend := p.Off + int64(p.Len)
			if m.Off < pend {
				if m.Off < p.Off+int64(p.Keep) {
					// Shown: what both keep.
					k := min(p.Keep, int(m.Off-p.Off)+m.Keep)
					p.Keep = k - k%max(p.Unit, 1)
				}
				if e := m.Off + int64(m.Len); e > pend {
					p.Len = int(e - p.Off)
				}
				continue
			}
		}
		out = append(out, m)
	}
	if len(out) > MaxMasks {
		return out, ErrTooManyMasks
	}
	return out, nil
}
