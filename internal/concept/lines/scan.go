// Package lines owns the line scanner: one streaming pass over a file that
// selects the window of lines to show, clamps long lines, stops the view at
// the line and byte caps, and keeps counting lines, validating UTF-8,
// watching for private key markers and hashing to EOF (or to the scan
// bound) so the footer's totals and the content hash are exact.
//
// Memory is flat: a few fixed buffers and at most one clamped line per
// shown line, whatever the size of the file or of its longest line.
//
// Lines end at "\n", "\r\n" or a bare "\r"; a final terminator adds no line.
package lines

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// Options say what to select and how far to scan.
type Options struct {
	Offset       int64 // first line to show, 1-based
	Limit        int   // at most this many lines
	MaxLineChars int   // longer lines are clamped to this many characters
	MaxBytes     int   // the shown lines (as rendered) fit in this many bytes
	MaxScanBytes int64 // stop counting and hashing after this many bytes
	SkipBOM      bool  // do not show a leading UTF-8 byte order mark
	Anchors      bool  // lines are rendered with anchors (for the byte cap)
	// SizeHint, when known (> 0), is the input's size: a small input gets
	// buffers its own size and is hashed inline, so a read of a 2 KiB file
	// allocates a few KiB and no goroutine, not 1 MiB and one.
	SizeHint int64
}

// Cut says what ended the window before the end of the file.
type Cut string

const (
	CutNone  Cut = ""      // the window reached the end of the file
	CutLines Cut = "lines" // the line limit
	CutBytes Cut = "bytes" // the byte cap
)

// Line is one shown line.
type Line struct {
	N         int64  // 1-based line number
	Text      string // the line without its terminator, clamped
	Truncated bool   // Text was clamped to MaxLineChars characters
}

// Result is what one pass found.
type Result struct {
	Lines      []Line
	Cut        Cut
	ViewBytes  int   // rendered size of Lines
	TotalLines int64 // lines seen; the file's total when Complete
	Bytes      int64 // bytes scanned
	Complete   bool  // the scan reached EOF within MaxScanBytes
	Sum        [sha256.Size]byte
	BadUTF8At  int64 // offset of the first invalid UTF-8 byte, or -1
}

// chunkSize is the read size (a variable so tests can move chunk
// boundaries around); nbuf buffers let reading, scanning and hashing
// overlap.
var chunkSize = 256 << 10

const nbuf = 4

// Scan makes the single pass over r.
func Scan(r io.Reader, o Options) (*Result, error) {
	if o.Offset < 1 {
		o.Offset = 1
	}
	s := &scanner{o: o, res: Result{BadUTF8At: -1}, line: 1}
	h := newHasher(o.SizeHint)
	defer h.stop()
	var err error
	for {
		buf := h.get()
		n, rerr := io.ReadFull(r, buf)
		over := false
		if lim := o.MaxScanBytes - s.res.Bytes; o.MaxScanBytes > 0 && int64(n) > lim {
			// More bytes exist than may be scanned: the totals stay partial.
			n, over = int(lim), true
		}
		if n > 0 {
			h.put(buf[:n])
			s.chunk(buf[:n])
		} else {
			h.release(buf)
		}
		if over {
			break
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			s.res.Complete = true
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
	}
	s.finish()
	sum := h.sum()
	if s.res.Complete {
		s.res.Sum = sum
	}
	return &s.res, err
}

// scanner is the per-pass state.
type scanner struct {
	o   Options
	res Result

	line    int64 // number of the line being read
	inLine  bool  // some byte of the current line has been seen
	prevCR  bool  // the previous chunk ended in '\r'
	done    bool  // the window is closed; only counting remains
	cur     []byte
	curOver bool // the current line has more bytes than cur holds

	utf8Carry []byte // an incomplete rune at the end of the last chunk
	bomLeft   int    // BOM bytes still to skip
	started   bool
}

func (s *scanner) chunk(b []byte) {
	base := s.res.Bytes
	s.res.Bytes += int64(len(b))
	if !s.started {
		s.started = true
		if s.o.SkipBOM && s.o.Offset == 1 && bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}) {
			s.bomLeft = 3
		}
	}
	s.checkUTF8(b, base)
	if !s.done {
		s.window(b)
		return
	}
	s.count(b)
}

// count advances the line count over b without looking at line contents.
// Terminators are counted with vectorised searches: '\n' + '\r' - "\r\n",
// with a "\r\n" split across chunks counted once.
func (s *scanner) count(b []byte) {
	if len(b) == 0 {
		return
	}
	terms := int64(bytes.Count(b, nl))
	if bytes.IndexByte(b, '\r') >= 0 {
		terms += int64(bytes.Count(b, cr)) - int64(bytes.Count(b, crlf))
	}
	if s.prevCR && b[0] == '\n' {
		terms--
	}
	last := b[len(b)-1]
	// A line is open at the end of b unless b ends in a terminator.
	openAtEnd := last != '\n' && last != '\r'
	// Lines completed in b: each terminator ends one line, counting the
	// line that was open when b began (or an empty line).
	s.line += terms
	s.inLine = openAtEnd
	s.prevCR = last == '\r'
}

var (
	nl   = []byte{'\n'}
	cr   = []byte{'\r'}
	crlf = []byte{'\r', '\n'}
)

// window walks b line by line while the window is open.
func (s *scanner) window(b []byte) {
	for len(b) > 0 {
		if s.prevCR {
			s.prevCR = false
			if b[0] == '\n' {
				b = b[1:]
				continue
			}
		}
		if s.line < s.o.Offset {
			// Skip to the line before the window with the fast counter
			// when a whole chunk lies before it.
			i := nextTerm(b)
			if i < 0 {
				s.inLine = true
				return
			}
			s.endLine(b[i])
			b = b[i+1:]
			continue
		}
		if !s.inLine && !s.admitLine() {
			s.done = true
			s.count(b)
			return
		}
		i := nextTerm(b)
		if i < 0 {
			s.take(b)
			return
		}
		s.take(b[:i])
		s.emit()
		s.endLine(b[i])
		b = b[i+1:]
		if s.done {
			s.count(b)
			return
		}
	}
}

// admitLine is called when a new line starts inside the window: it says
// whether the line limit leaves room for it.
func (s *scanner) admitLine() bool {
	if len(s.res.Lines) >= s.o.Limit {
		s.res.Cut = CutLines
		return false
	}
	s.inLine = true
	return true
}

func (s *scanner) endLine(term byte) {
	s.line++
	s.inLine = false
	s.prevCR = term == '\r'
}

func nextTerm(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	var j int
	if i < 0 {
		j = bytes.IndexByte(b, '\r')
	} else {
		j = bytes.IndexByte(b[:i], '\r')
	}
	if j >= 0 {
		return j
	}
	return i
}

// take appends part of the current line, keeping at most enough bytes to
// hold MaxLineChars characters.
func (s *scanner) take(b []byte) {
	s.inLine = true
	if s.bomLeft > 0 {
		k := min(s.bomLeft, len(b))
		b, s.bomLeft = b[k:], s.bomLeft-k
	}
	room := s.o.MaxLineChars*utf8.UTFMax - len(s.cur)
	if len(b) > room {
		b, s.curOver = b[:max(room, 0)], true
	}
	s.cur = append(s.cur, b...)
}

// emit finishes the current line into the window, or closes the window if
// the byte cap has no room for it.
func (s *scanner) emit() {
	text, truncated := clamp(s.cur, s.o.MaxLineChars, s.curOver)
	s.cur, s.curOver = s.cur[:0], false
	l := Line{N: s.line, Text: text, Truncated: truncated}
	size := RenderedSize(l, s.o.MaxLineChars, s.o.Anchors)
	if s.res.ViewBytes+size > s.o.MaxBytes && len(s.res.Lines) > 0 {
		s.res.Cut = CutBytes
		s.done = true
		return
	}
	s.res.ViewBytes += size
	s.res.Lines = append(s.res.Lines, l)
}

// clamp cuts b to max characters (runes; an invalid byte counts as one).
func clamp(b []byte, max int, over bool) (string, bool) {
	n, i := 0, 0
	for i < len(b) && n < max {
		_, size := utf8.DecodeRune(b[i:])
		i += size
		n++
	}
	return string(b[:i]), over || i < len(b)
}

func (s *scanner) finish() {
	if s.inLine {
		if !s.done && s.line >= s.o.Offset {
			s.emit()
		}
		s.line++
	}
	s.res.TotalLines = s.line - 1
	if len(s.utf8Carry) > 0 && s.res.BadUTF8At < 0 && s.res.Complete {
		s.res.BadUTF8At = s.res.Bytes - int64(len(s.utf8Carry))
	}
}

// checkUTF8 validates b as the continuation of the stream.
func (s *scanner) checkUTF8(b []byte, base int64) {
	if s.res.BadUTF8At >= 0 {
		return
	}
	if len(s.utf8Carry) > 0 {
		// Finish the rune split across chunks.
		need := min(utf8.UTFMax-len(s.utf8Carry), len(b))
		joined := append(s.utf8Carry, b[:need]...)
		r, size := utf8.DecodeRune(joined)
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(joined) && len(b) == need {
				s.utf8Carry = joined
				return
			}
			s.res.BadUTF8At = base - int64(len(s.utf8Carry))
			return
		}
		b = b[size-len(s.utf8Carry):]
		base += int64(size - len(s.utf8Carry))
		s.utf8Carry = s.utf8Carry[:0]
	}
	// Hold back an incomplete rune at the end for the next chunk.
	tail := incompleteTail(b)
	if bad := sniff.InvalidUTF8(b[:len(b)-tail], true); bad >= 0 {
		s.res.BadUTF8At = base + int64(bad)
		return
	}
	s.utf8Carry = append(s.utf8Carry[:0], b[len(b)-tail:]...)
}

// incompleteTail returns how many bytes at the end of b start a rune that
// b does not complete.
func incompleteTail(b []byte) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}

// hasher hashes chunks on its own goroutine so that hashing, the slowest
// part of the pass, overlaps with reading and scanning. An input known to
// fit in one chunk is hashed inline: there is nothing to overlap.
type hasher struct {
	free   chan []byte
	work   chan []byte
	out    chan [sha256.Size]byte
	h      hash.Hash
	inline bool
	pooled bool // the buffers are chunkSize and go back to bufPool
}

// bufPool keeps full-size chunk buffers between scans.
var bufPool = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

func newHasher(sizeHint int64) *hasher {
	h := &hasher{
		free: make(chan []byte, nbuf),
		out:  make(chan [sha256.Size]byte, 1),
		h:    sha256.New(),
	}
	if sizeHint > 0 && sizeHint < int64(chunkSize) {
		// One buffer a byte larger than the input: ReadFull sees the end
		// in the same pass.
		h.inline = true
		h.free <- make([]byte, sizeHint+1)
		return h
	}
	h.pooled = true
	for i := 0; i < nbuf; i++ {
		b := *bufPool.Get().(*[]byte)
		if len(b) != chunkSize { // a test moved chunkSize
			b = make([]byte, chunkSize)
		}
		h.free <- b
	}
	h.work = make(chan []byte, nbuf)
	go func(work <-chan []byte) {
		for b := range work {
			h.h.Write(b)
			h.free <- b[:cap(b)]
		}
		var sum [sha256.Size]byte
		copy(sum[:], h.h.Sum(nil))
		h.out <- sum
	}(h.work)
	return h
}

func (h *hasher) get() []byte { return <-h.free }

func (h *hasher) put(b []byte) {
	if h.inline {
		h.h.Write(b)
		h.free <- b[:cap(b)]
		return
	}
	h.work <- b
}

func (h *hasher) release(b []byte) { h.free <- b }

func (h *hasher) sum() [sha256.Size]byte {
	if h.inline {
		var sum [sha256.Size]byte
		copy(sum[:], h.h.Sum(nil))
		h.inline = false // stop has nothing left to do
		return sum
	}
	close(h.work)
	h.work = nil
	sum := <-h.out
	h.recycle()
	return sum
}

func (h *hasher) stop() {
	if h.work != nil {
		close(h.work)
		<-h.out
		h.recycle()
	}
}

// recycle gives the full-size buffers back to the pool once the hashing
// goroutine is done with them.
func (h *hasher) recycle() {
	if !h.pooled {
		return
	}
	h.pooled = false
	for {
		select {
		case b := <-h.free:
			bufPool.Put(&b)
		default:
			return
		}
	}
}
