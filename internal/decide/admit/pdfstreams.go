package admit

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/ascii85"
	"encoding/hex"
	"errors"
	"io"

	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// A PDF's text is not all it holds: its streams also carry attachments
// (embedded files), metadata, forms and scripts, and its strings carry
// form values and annotations, which no text extraction returns and which
// the mount serves as the PDF's bytes, where any PDF tool (or zlib) gets
// them back. A stream is usually compressed, and in an encrypted PDF
// encrypted too, so no scan of the file's bytes finds a key in one. So
// every stream is decrypted when the PDF opens with the empty user
// password (pdfcrypt.go), decoded through the filter chain its dictionary
// names (pdffilters.go: FlateDecode, LZWDecode, RunLengthDecode, the
// ASCII ones, predictors), and every layer is searched for keys and
// credentials, and looked into when it is itself a packed file (a zip
// attached to the PDF); every object's strings are searched, decrypted.
// Since a dictionary can lie, a stream body is also decoded by each
// decoder that takes it (FlateDecode, with or without zlib's header,
// ASCIIHexDecode, ASCII85Decode, chained up to maxStreamLayers deep):
// when its chain is empty or does not decode it, beyond what the chain
// decodes, and for a body no object header parses.
//
// Memory is bounded: a layer is held whole only up to maxStreamBytes (it
// may be decoded further); a larger one (a big image's pixels) is searched
// as it is inflated, a window at a time, and refused as unreadable only if
// it starts as another encoding would (it would need decoding further to
// be searched). Time is bounded: at most maxStreamsDecoded bytes are
// decoded or decrypted per PDF (every layer of a chain counts), and
// object headers parsed past maxStreamsParsed, past which it is refused as
// one fsguard cannot read, never served unchecked.

const (
	maxStreamLayers   = 4
	maxStreamBytes    = sniff.MaxPackedMember
	maxStreamsDecoded = 1 << 30
	streamWindow      = 1 << 20
	streamOverlap     = 64 << 10
)

// streamFinding searches the decoded streams of the PDF data for what its
// text search would refuse: a key, a credential (det, nil for none), a
// packed file holding either. It returns the finding (nil: none).
// Every object is parsed from its header (pdfobj.go): a stream is
// decrypted when the PDF is (pdfcrypt.go), decoded through its /Filter
// chain (pdffilters.go), and searched as below; its strings are searched
// too. A stream body no header parses is searched as it is found.
func (d *Decider) streamFinding(data []byte, det *sniff.Detector, unpacker *sniff.Unpacker) (*sniff.Inside, error) {
	s := &streamSearch{det: det, unpacker: unpacker, budget: maxStreamsDecoded}
	o := newPDFObjects(data)
	keys, encrypted := pdfKeys(o)
	if encrypted && len(keys) == 0 {
		return &sniff.Inside{Why: insideDocUnreadable, Detail: "it is encrypted, and not with an empty user password (a password is needed to read it)"}, nil
	}
	if len(keys) > maxPDFKeys {
		return &sniff.Inside{Why: insideDocUnreadable, Detail: "it is encrypted with more keys than fsguard tries"}, nil
	}
	seen := map[int]bool{}
	parsed := int64(0)
	for _, h := range o.hs {
		v, end, ok, over := pdfValueOver(data, h.at)
		if parsed += int64(end - h.at); parsed > maxStreamsParsed(len(data)) || over {
			return unreadableIf(errObjectsTooLarge), nil
		}
		if !ok {
			continue
		}
		if in := s.strings(v, h, keys); in != nil {
			return in, nil
		}
		st, ok := pdfStreamAt(data, h, v, end, o.length)
		if !ok {
			continue
		}
		seen[st.start] = true
		if in, err := s.stream(st, keys); err != nil || in != nil {
			return in, err
		}
	}
	for rest := data; ; {
		body, next, ok := nextStream(rest)
		if !ok {
			return nil, nil
		}
		rest = next
		if seen[cap(data)-cap(body)] { // parsed from its header above
			continue
		}
		if in, err := s.layers(body, 0); err != nil || in != nil {
			return in, err
		}
	}
}

// maxStreamsParsed bounds the bytes parsed from object headers in a PDF
// of size bytes: headers inside other objects (in a string, a stream) are
// parsed too, but never more than this over all.
func maxStreamsParsed(size int) int64 { return 8*int64(size) + 1<<20 }

// errObjectsTooLarge is a PDF whose objects overlap past the parsing
// bound, or one of whose objects nests or holds more than a parse does.
var errObjectsTooLarge = errors.New("its objects are larger or deeper than fsguard parses")

// stream searches one stream object: each body, decrypted with each key
// (and as it is: an encrypted PDF leaves some streams plain), decoded
// through its filter chain; when the chain does not decode it, by the
// decoders that take it.
func (s *streamSearch) stream(st pdfStream, keys []pdfKey) (*sniff.Inside, error) {
	fs, ps := filtersOf(st.dict)
	xref := st.dict["Type"] == pdfName("XRef")
	for _, body := range st.bodies {
		if in, err := s.chain(body, fs, ps); err != nil || in != nil {
			return in, err
		}
		if xref {
			continue // never encrypted
		}
		// One decryption held at a time.
		for _, k := range keys {
			for _, n := range st.nums {
				if k.stm == pdfPlain {
					continue
				}
				if s.budget -= int64(len(body)); s.budget < 0 {
					return unreadableIf(errStreamsTooLarge), nil
				}
				if b := k.decrypt(k.stm, n, st.gen, body); b != nil {
					// Decrypted bytes are nowhere in the file, so the
					// file-wide scan never saw them: searched as they
					// are (a stream with no filter, or one whose chain
					// does not decode), then through the chain.
					if in := s.find(b); in != nil {
						return in, nil
					}
					if in, err := s.chain(b, fs, ps); err != nil || in != nil {
						return in, err
					}
				}
			}
		}
	}
	return nil, nil
}

// chain searches body decoded through its filter chain, and what that
// decodes to further; by the decoders that take it when the chain is
// empty or does not decode it.
func (s *streamSearch) chain(body []byte, fs []pdfName, ps []pdfDict) (*sniff.Inside, error) {
	if len(fs) == 0 {
		return s.layers(body, 0)
	}
	r, err := chainReader(body, fs, ps, s.counted)
	if err != nil {
		if errors.Is(err, errFilterChain) {
			return unreadableIf(err), nil
		}
		return s.layers(body, 0)
	}
	out, err := io.ReadAll(io.LimitReader(r, maxStreamBytes+1))
	if errors.Is(err, errStreamsTooLarge) {
		return unreadableIf(err), nil
	}
	if len(out) == 0 {
		return s.layers(body, 0)
	}
	if len(out) > maxStreamBytes {
		if in := s.find(out); in != nil {
			return in, nil
		}
		if _, again, _ := s.decodeHead(out); again {
			return &sniff.Inside{Why: insideDocUnreadable, Detail: "a stream decodes to more than fsguard holds, encoded again"}, nil
		}
		return s.rest(out, r)
	}
	return s.layers(out, 1)
}

// counted counts what r reads against the budget.
func (s *streamSearch) counted(r io.Reader) io.Reader { return &budgeted{r: r, s: s} }

type budgeted struct {
	r io.Reader
	s *streamSearch
}

func (b *budgeted) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.s.budget -= int64(n); b.s.budget < 0 {
		return n, errStreamsTooLarge
	}
	return n, err
}

// maxPDFStrings bounds the strings of one object searched.
const maxPDFStrings = 1 << 16

// strings searches the strings of the object v (header h), decrypted
// with each key when the PDF is encrypted, joined by new lines.
func (s *streamSearch) strings(v any, h pdfHeader, keys []pdfKey) *sniff.Inside {
	var strs [][]byte
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if len(strs) >= maxPDFStrings || depth > maxPDFDepth {
			return
		}
		switch v := v.(type) {
		case []byte:
			strs = append(strs, v)
		case []any:
			for _, e := range v {
				walk(e, depth+1)
			}
		case pdfDict:
			for _, e := range v {
				walk(e, depth+1)
			}
		}
	}
	walk(v, 0)
	if len(strs) == 0 {
		return nil
	}
	if in := s.find(bytes.Join(strs, []byte("\n"))); in != nil {
		return in
	}
	for _, k := range keys {
		if k.str == pdfPlain {
			continue
		}
		for _, n := range h.nums {
			var plain [][]byte
			for _, str := range strs {
				if s.budget -= int64(len(str)); s.budget < 0 {
					return unreadableIf(errStreamsTooLarge)
				}
				if b := k.decrypt(k.str, n, h.gen, str); b != nil {
					plain = append(plain, b)
				}
			}
			if in := s.find(bytes.Join(plain, []byte("\n"))); in != nil {
				return in
			}
		}
	}
	return nil
}

// streamSearch is one PDF's search of its streams, with its budget.
type streamSearch struct {
	det      *sniff.Detector
	unpacker *sniff.Unpacker
	budget   int64
}

// layers searches the layers one stream body decodes to.
// depth is the layers decoded before layer (0: it is a stream's body).
func (s *streamSearch) layers(layer []byte, depth int) (*sniff.Inside, error) {
	for ; ; depth++ {
		if depth > 0 {
			if in := s.find(layer); in != nil {
				return in, nil
			}
		}
		if in, err := s.packed(layer); err != nil || in != nil {
			return in, err
		}
		if depth == maxStreamLayers {
			return nil, nil
		}
		next, more, err := s.decode(layer)
		if err != nil || next == nil {
			return unreadableIf(err), nil
		}
		if more != nil {
			// Too large to hold: searched as it is inflated, and not
			// decoded further, which it must not need.
			if in := s.find(next); in != nil {
				return in, nil
			}
			if _, again, _ := s.decodeHead(next); again {
				return &sniff.Inside{Why: insideDocUnreadable, Detail: "a stream decodes to more than fsguard holds, encoded again"}, nil
			}
			return s.rest(next, more)
		}
		layer = next
	}
}

func unreadableIf(err error) *sniff.Inside {
	if err == nil {
		return nil
	}
	return &sniff.Inside{Why: insideDocUnreadable, Detail: err.Error()}
}

// find searches b for a key or a credential.
func (s *streamSearch) find(b []byte) *sniff.Inside {
	if sniff.HasKey(b) {
		return &sniff.Inside{Why: insideDocKey}
	}
	if s.det != nil {
		if ms := s.det.Find(b); len(ms) > 0 {
			return &sniff.Inside{Why: insideDocCredential, Family: ms[0].Family}
		}
	}
	return nil
}

// packed looks into b when it is a packed file.
func (s *streamSearch) packed(b []byte) (*sniff.Inside, error) {
	if s.unpacker == nil {
		return nil, nil
	}
	kind, err := sniff.PackedKindIn(b, bytes.NewReader(b), int64(len(b)))
	if err != nil || kind == "" || kind == sniff.Zlib {
		return nil, nil // a zlib layer is decoded as a stream's (decode), held or not
	}
	in, err := s.unpacker.Inspect(bytes.NewReader(b), int64(len(b)), kind)
	if err != nil || in == nil {
		return nil, err
	}
	switch in.Why {
	case sniff.InsideKey:
		return &sniff.Inside{Why: insideDocKey}, nil
	case sniff.InsideCredential:
		return &sniff.Inside{Why: insideDocCredential, Family: in.Family}, nil
	}
	return in, nil
}

// rest searches what r still inflates after held (the first bytes, already
// searched), a window at a time, each window overlapping the last.
func (s *streamSearch) rest(held []byte, r io.Reader) (*sniff.Inside, error) {
	win := make([]byte, streamOverlap+streamWindow)
	keep := copy(win, held[max(0, len(held)-streamOverlap):])
	for {
		n, err := io.ReadFull(r, win[keep:])
		if n > 0 {
			if s.budget -= int64(n); s.budget < 0 {
				return unreadableIf(errStreamsTooLarge), nil
			}
			if in := s.find(win[:keep+n]); in != nil {
				return in, nil
			}
			keep = copy(win, win[max(0, keep+n-streamOverlap):keep+n])
		}
		if err != nil {
			return nil, nil // the end, or a stream cut short: what it gave was searched
		}
	}
}

// errStreamsTooLarge is a PDF whose streams inflate to more than the bound.
var errStreamsTooLarge = errors.New("its streams decode to more than fsguard reads")

// decode decodes b with the first filter that takes it: the layer whole
// (more nil), or its first maxStreamBytes and the reader of the rest;
// nil when no filter takes it. A flate stream cut short is what it
// decoded so far, as a reader would show it.
func (s *streamSearch) decode(b []byte) ([]byte, io.Reader, error) {
	inflate := func(r io.Reader) ([]byte, io.Reader, error) {
		out, _ := io.ReadAll(io.LimitReader(r, maxStreamBytes+1))
		if s.budget -= int64(len(out)); s.budget < 0 {
			return nil, nil, errStreamsTooLarge
		}
		if len(out) > maxStreamBytes {
			return out, r, nil
		}
		return out, nil, nil
	}
	if zr, err := zlib.NewReader(bytes.NewReader(b)); err == nil {
		if out, more, err := inflate(zr); err != nil || len(out) > 0 {
			return out, more, err
		}
	}
	if out, more, err := inflate(flate.NewReader(bytes.NewReader(b))); err != nil || len(out) > 0 {
		return out, more, err
	}
	out, _, err := s.decodeHead(b)
	return out, nil, err
}

// decodeHead decodes b as hex or ASCII85 (which never grow what they
// decode); again reports whether b starts as one of them or as a zlib
// stream would.
func (s *streamSearch) decodeHead(b []byte) (out []byte, again bool, err error) {
	head := b[:min(len(b), 4096)]
	if zr, err := zlib.NewReader(bytes.NewReader(head)); err == nil {
		var one [64]byte
		if n, _ := io.ReadFull(zr, one[:]); n == len(one) {
			again = true
		}
	}
	t := bytes.TrimSpace(b)
	isHex := len(t) > 0
	for _, c := range bytes.TrimSpace(head) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '>' || c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f') {
			isHex = false
			break
		}
	}
	if isHex {
		again = true
		h, _, _ := bytes.Cut(t, []byte(">"))
		h = bytes.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\r' || r == '\t' || r == '\f' {
				return -1
			}
			return r
		}, h)
		if len(h)%2 == 1 {
			h = append(h, '0')
		}
		if d, err := hex.DecodeString(string(h)); err == nil && len(d) > 0 {
			return d, true, nil
		}
	}
	a := bytes.TrimPrefix(t, []byte("<~"))
	if i := bytes.Index(a, []byte("~>")); i >= 0 {
		a = a[:i]
		o, err := io.ReadAll(io.LimitReader(ascii85.NewDecoder(bytes.NewReader(a)), maxStreamBytes+1))
		if len(o) > maxStreamBytes {
			return nil, true, errStreamsTooLarge
		}
		if err == nil && len(o) > 0 {
			return o, true, nil
		}
	}
	return nil, again, nil
}

// nextStream finds the first stream body in b: the bytes after a "stream"
// keyword's end of line up to the next "endstream" (or the end of b), and
// what follows it.
func nextStream(b []byte) (body, rest []byte, ok bool) {
	for {
		i := bytes.Index(b, []byte("stream"))
		if i < 0 {
			return nil, nil, false
		}
		if i >= 3 && string(b[i-3:i]) == "end" {
			b = b[i+len("stream"):]
			continue
		}
		b = b[i+len("stream"):]
		if len(b) > 0 && b[0] == '\r' {
			b = b[1:]
		}
		if len(b) > 0 && b[0] == '\n' {
			b = b[1:]
		}
		end := bytes.Index(b, []byte("endstream"))
		if end < 0 {
			return b, nil, true
		}
		return b[:end], b[end+len("endstream"):], true
	}
}
