package admit

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/ascii85"
	"errors"
	"io"
	"math/bits"
)

// A stream's /Filter chain, decoded as a reader decodes it: FlateDecode
// and LZWDecode (with their /DecodeParms: EarlyChange, PNG and TIFF
// predictors), RunLengthDecode, ASCIIHexDecode and ASCII85Decode, each a
// reader over the one before, every layer's bytes counted against the
// PDF's budget (a bomb of nested layers stops at the budget). Image
// codecs (DCT, JPX, CCITT, JBIG2) end the chain: what they encode is
// pixels, searched as they are.

// maxFilterChain bounds the filters one stream's chain is decoded through;
// a longer chain is unreadable.
const maxFilterChain = 8

// errFilterChain is a stream whose chain is longer than fsguard decodes.
var errFilterChain = errors.New("a stream has more filters than fsguard decodes")

// filtersOf is a stream dictionary's filter chain and its parameters
// (nil where none).
func filtersOf(d pdfDict) ([]pdfName, []pdfDict) {
	var fs []pdfName
	switch f := d["Filter"].(type) {
	case pdfName:
		fs = []pdfName{f}
	case []any:
		for _, v := range f {
			if n, ok := v.(pdfName); ok {
				fs = append(fs, n)
			}
		}
	}
	ps := make([]pdfDict, len(fs))
	switch p := d["DecodeParms"].(type) {
	case pdfDict:
		if len(ps) > 0 {
			ps[0] = p
		}
	case []any:
		for i, v := range p {
			if i < len(ps) {
				ps[i], _ = v.(pdfDict)
			}
		}
	}
	return fs, ps
}

// chainReader is the reader of body decoded through filters fs with
// parameters ps, each layer counted by count.
func chainReader(body []byte, fs []pdfName, ps []pdfDict, count func(io.Reader) io.Reader) (io.Reader, error) {
	if len(fs) > maxFilterChain {
		return nil, errFilterChain
	}
	r := io.Reader(bytes.NewReader(body))
	for i, f := range fs {
		switch f {
		case "FlateDecode", "Fl":
			br := bufio.NewReader(r)
			if h, _ := br.Peek(2); len(h) == 2 && h[0]&0x0f == 8 && (uint(h[0])<<8|uint(h[1]))%31 == 0 {
				zr, err := zlib.NewReader(br)
				if err != nil {
					return nil, err
				}
				r = zr
			} else {
				r = flate.NewReader(br)
			}
			r = predicted(r, ps[i])
		case "LZWDecode", "LZW":
			r = predicted(newLZW(r, pdfInt(ps[i], "EarlyChange", 1) != 0), ps[i])
		case "RunLengthDecode", "RL":
			r = &runLength{r: bufio.NewReader(r)}
		case "ASCIIHexDecode", "AHx":
			r = &hexReader{r: bufio.NewReader(r)}
		case "ASCII85Decode", "A85":
			r = ascii85.NewDecoder(&a85Body{r: bufio.NewReader(r)})
		case "Crypt":
			continue // decrypted before, or Identity
		default:
			return r, nil // an image codec: pixels from here on
		}
		r = count(r)
	}
	return r, nil
}

// lzw decodes PDF's LZW: codes of 9 to 12 bits, most significant bit
// first, 256 clearing the table and 257 ending the data; with early
// change (the default), the code width grows one code early.
type lzw struct {
	r      *bufio.Reader
	early  int
	acc    uint32
	nacc   uint
	width  uint
	next   int
	prev   int
	prefix [4096]int16
	suffix [4096]byte
	length [4096]int
	out    []byte
	buf    [4096]byte
	done   bool
}

func newLZW(r io.Reader, early bool) *lzw {
	l := &lzw{r: bufio.NewReader(r), width: 9, next: 258, prev: -1}
	if early {
		l.early = 1
	}
	for i := range 256 {
		l.suffix[i], l.length[i], l.prefix[i] = byte(i), 1, -1
	}
	return l
}

// errLZW is a code not in the table.
var errLZW = errors.New("lzw: a code not in the table")

func (l *lzw) Read(p []byte) (int, error) {
	for len(l.out) == 0 {
		if l.done {
			return 0, io.EOF
		}
		for l.nacc < l.width {
			c, err := l.r.ReadByte()
			if err != nil {
				l.done = true
				return 0, io.EOF
			}
			l.acc = l.acc<<8 | uint32(c)
			l.nacc += 8
		}
		code := int(l.acc >> (l.nacc - l.width) & (1<<l.width - 1))
		l.nacc -= l.width
		switch {
		case code == 256:
			l.width, l.next, l.prev = 9, 258, -1
			continue
		case code == 257:
			l.done = true
			return 0, io.EOF
		case code < l.next && (code < 256 || code >= 258):
			l.out = l.entry(code, l.buf[:])
			if l.prev >= 0 {
				l.add(l.prev, l.out[0])
			}
		case code == l.next && l.prev >= 0:
			e := l.entry(l.prev, l.buf[:])
			first := e[0]
			l.out = append(l.buf[:len(e)], first)
			l.add(l.prev, first)
		default:
			l.done = true
			return 0, errLZW
		}
		l.prev = code
	}
	n := copy(p, l.out)
	l.out = l.out[n:]
	return n, nil
}

// entry writes the string of code into buf, returning it.
func (l *lzw) entry(code int, buf []byte) []byte {
	n := l.length[code]
	for i := n - 1; i >= 0; i-- {
		buf[i] = l.suffix[code]
		code = int(l.prefix[code])
	}
	return buf[:n]
}

func (l *lzw) add(prefix int, c byte) {
	if l.next >= 4096 {
		return
	}
	l.prefix[l.next], l.suffix[l.next] = int16(prefix), c
	l.length[l.next] = min(l.length[prefix]+1, 4095)
	l.next++
	l.width = uint(min(12, max(9, bits.Len(uint(l.next+l.early)))))
}

// runLength decodes RunLengthDecode.
type runLength struct {
	r    *bufio.Reader
	run  int
	lit  int
	b    byte
	done bool
}

func (rl *runLength) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		switch {
		case rl.run > 0:
			p[n] = rl.b
			rl.run--
			n++
		case rl.lit > 0:
			c, err := rl.r.ReadByte()
			if err != nil {
				rl.done = true
				rl.lit = 0
				continue
			}
			p[n] = c
			rl.lit--
			n++
		case rl.done:
			if n > 0 {
				return n, nil
			}
			return 0, io.EOF
		default:
			c, err := rl.r.ReadByte()
			switch {
			case err != nil || c == 128:
				rl.done = true
			case c < 128:
				rl.lit = int(c) + 1
			default:
				b, err := rl.r.ReadByte()
				if err != nil {
					rl.done = true
					continue
				}
				rl.b, rl.run = b, 257-int(c)
			}
		}
	}
	return n, nil
}

// hexReader decodes ASCIIHexDecode: white space skipped, '>' ends it, an
// odd last digit is followed by 0.
type hexReader struct {
	r    *bufio.Reader
	done bool
}

func (h *hexReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && !h.done {
		var v [2]byte
		got := 0
		for got < 2 {
			c, err := h.r.ReadByte()
			if err != nil || c == '>' {
				h.done = true
				break
			}
			if isPDFSpace(c) {
				continue
			}
			d, ok := unhex(c)
			if !ok {
				h.done = true
				break
			}
			v[got] = d
			got++
		}
		if got > 0 {
			p[n] = v[0]<<4 | v[1]
			n++
		}
	}
	if n == 0 && h.done {
		return 0, io.EOF
	}
	return n, nil
}

// a85Body is an ASCII85 stream's body: without a leading "<~", up to its
// "~>".
type a85Body struct {
	r       *bufio.Reader
	started bool
	done    bool
}

func (a *a85Body) Read(p []byte) (int, error) {
	if !a.started {
		a.started = true
		if h, _ := a.r.Peek(2); string(h) == "<~" {
			a.r.Discard(2)
		}
	}
	n := 0
	for n < len(p) && !a.done {
		c, err := a.r.ReadByte()
		if err != nil || c == '~' {
			a.done = true
			break
		}
		p[n] = c
		n++
	}
	if n == 0 && a.done {
		return 0, io.EOF
	}
	return n, nil
}

// maxPredictorRow bounds a predictor's row.
const maxPredictorRow = 1 << 20

// predicted undoes the predictor /DecodeParms p names (PNG's, 10 to 15,
// and TIFF's 2 for 8-bit components) on r.
func predicted(r io.Reader, p pdfDict) io.Reader {
	pred := pdfInt(p, "Predictor", 1)
	if pred < 2 {
		return r
	}
	colors, bpc, cols := pdfInt(p, "Colors", 1), pdfInt(p, "BitsPerComponent", 8), pdfInt(p, "Columns", 1)
	if colors < 1 || colors > 64 || bpc < 1 || bpc > 16 || cols < 1 || cols > maxPredictorRow {
		return &failed{errors.New("predictor parameters out of range")}
	}
	row := (colors*bpc*cols + 7) / 8
	if row > maxPredictorRow {
		return &failed{errors.New("a predictor row larger than fsguard decodes")}
	}
	bpp := int(max(1, (colors*bpc+7)/8))
	if pred == 2 && bpc != 8 {
		return r
	}
	return &predictor{r: r, png: pred >= 10, bpp: bpp, cur: make([]byte, row), prev: make([]byte, row)}
}

type failed struct{ err error }

func (f *failed) Read([]byte) (int, error) { return 0, f.err }

type predictor struct {
	r         io.Reader
	png       bool
	bpp       int
	cur, prev []byte
	out       []byte
}

func (pr *predictor) Read(p []byte) (int, error) {
	for len(pr.out) == 0 {
		var kind [1]byte
		if pr.png {
			if _, err := io.ReadFull(pr.r, kind[:]); err != nil {
				return 0, err
			}
		}
		n, err := io.ReadFull(pr.r, pr.cur)
		if n == 0 {
			if err == nil || err == io.ErrUnexpectedEOF {
				err = io.EOF
			}
			return 0, err
		}
		c, prev, bpp := pr.cur[:n], pr.prev, pr.bpp
		for i := range c {
			var a, b, d int
			if i >= bpp {
				a = int(c[i-bpp])
				d = int(prev[i-bpp])
			}
			b = int(prev[i])
			switch {
			case !pr.png:
				c[i] += byte(a)
			case kind[0] == 1:
				c[i] += byte(a)
			case kind[0] == 2:
				c[i] += byte(b)
			case kind[0] == 3:
				c[i] += byte((a + b) / 2)
			case kind[0] == 4:
				pa, pb, pc := abs(b-d), abs(a-d), abs(a+b-2*d)
				switch {
				case pa <= pb && pa <= pc:
					c[i] += byte(a)
				case pb <= pc:
					c[i] += byte(b)
				default:
					c[i] += byte(d)
				}
			}
		}
		copy(pr.prev, c)
		pr.out = c
	}
	n := copy(p, pr.out)
	pr.out = pr.out[n:]
	return n, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
