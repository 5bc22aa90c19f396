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
// (embedded files), metadata, forms and scripts, which no text extraction
// returns and which the mount serves as the PDF's bytes, where any PDF
// tool (or zlib) gets them back. A stream is usually compressed, so no
// scan of the file's bytes finds a key in one. So every stream's body is
// also decoded as its filters would decode it (FlateDecode, with or
// without zlib's header, ASCIIHexDecode, ASCII85Decode, chained up to
// maxStreamLayers deep) and every layer is searched for keys and
// credentials, and looked into when it is itself a packed file (a zip
// attached to the PDF). The filters are not parsed: each decoder is tried
// on each body, so a stream whose dictionary lies about its filter is
// decoded all the same.
//
// Memory is bounded: a layer is held whole only up to maxStreamBytes (it
// may be decoded further); a larger one (a big image's pixels) is searched
// as it is inflated, a window at a time, and refused as unreadable only if
// it starts as another encoding would (it would need decoding further to
// be searched). Time is bounded: at most maxStreamsDecoded bytes are
// inflated per PDF, past which it is refused as one fsguard cannot read,
// never served unchecked.

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
func (d *Decider) streamFinding(data []byte, det *sniff.Detector, unpacker *sniff.Unpacker) (*sniff.Inside, error) {
	s := &streamSearch{det: det, unpacker: unpacker, budget: maxStreamsDecoded}
	for rest := data; ; {
		body, next, ok := nextStream(rest)
		if !ok {
			return nil, nil
		}
		rest = next
		if in, err := s.layers(body); err != nil || in != nil {
			return in, err
		}
	}
}

// streamSearch is one PDF's search of its streams, with its budget.
type streamSearch struct {
	det      *sniff.Detector
	unpacker *sniff.Unpacker
	budget   int64
}

// layers searches the layers one stream body decodes to.
func (s *streamSearch) layers(layer []byte) (*sniff.Inside, error) {
	for depth := 0; ; depth++ {
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
