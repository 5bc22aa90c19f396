package admit

import (
	"bytes"
	"errors"
	"hash/maphash"
	"io"
	"sync"
)

// A verdict is made on bytes, and is remembered for a version known by its
// identity; but a store through a shared mapping changes the bytes and
// not the identity. So admission records, for each block of the version
// (blockSize), a keyed hash of the very bytes its scans read (recorder:
// every read of the scans goes through it, and a block read twice must
// read the same), and the version's first bytes (which say its code
// units). A door about to serve bytes compares the whole blocks it read
// them in, with the margins around them, against those hashes (Check):
// the same hashes are the same bytes, checked; any other is a version the
// verdict did not see, decided afresh whatever its identity says.
//
// A window's blocks are not all a READ depends on: a key's header written
// before a body that was already there (admitted clean, unchanged) makes
// the body key material, and the header may lie blocks before the
// window. So when the window's bytes before the range served are all
// bytes a key's body is made of (leadUnchanged: base64, hex, escapes,
// white space, with digits), the lookBack blocks before the window are compared with
// their hashes too: a header further back than that leaves the range more
// than 128 KiB into its key's body, past the secret of every key format
// (an RSA key of 16384 bits is 12.5 KiB of PEM; an OpenSSH key keeps its
// secret before its comment). Text and code break the run of body bytes
// within the margins and cost nothing; a file of body bytes only (base64,
// hex) costs reading and hashing those blocks at each READ.
//
// The key is the daemon's own, random, never shown: a writer cannot make
// other bytes with the same hashes without it. Hashes take 8 bytes per
// block, at most maxBlocks per version and maxSumBytes for all remembered
// versions together (the cache is dropped whole past it, as past its
// count). A version larger than maxBlocks blocks of maxBlockSize has no
// hashes, and its READs are checked by the detectors alone (see Check).

// sumKey is the daemon's key for block hashes.
var sumKey = maphash.MakeSeed()

const (
	minBlockShift = 16 // 64 KiB: a 128 KiB READ reads no more than it would
	maxBlockShift = 20
	maxBlocks     = 16 << 10
	maxSumBytes   = 64 << 20
	lookBack      = 2
)

// errChangedScanning is a block read twice by one admission's scans with
// different bytes: the file changed while it was checked.
var errChangedScanning = errors.New("changed while checked")

// blockShift is log2 of the block size for a version of size bytes, and
// false when it is too large to be kept in hashes.
func blockShift(size int64) (uint, bool) {
	s := uint(minBlockShift)
	for (size+(1<<s)-1)>>s > maxBlocks {
		if s == maxBlockShift {
			return 0, false
		}
		s++
	}
	return s, true
}

// Reach returns the bytes [lo, hi) a door reads to check and serve the n
// bytes at off of a version of size bytes with back and ahead bytes of
// margin around them (sniff.Margins): the margins, widened to whole
// blocks. hi may lie past size.
func Reach(size, off int64, n int, back, ahead int64) (lo, hi int64) {
	lo, hi = max(0, off-back), off+int64(n)+ahead
	if s, ok := blockShift(size); ok {
		b := int64(1) << s
		lo, hi = lo&^(b-1), (hi+b-1)&^(b-1)
	}
	return lo, hi
}

// SameBlocks reports whether versions of sizes a and b are kept in the
// same blocks: a window read for the one is whole blocks of the other.
func SameBlocks(a, b int64) bool {
	sa, oka := blockShift(a)
	sb, okb := blockShift(b)
	return sa == sb && oka == okb
}

// sums is what admission read of a version: its blocks' hashes and its
// first bytes.
type sums struct {
	shift uint
	size  int64
	head  []byte
	block []uint64
}

// bytes is the memory s holds.
func (s *sums) bytes() int {
	if s == nil {
		return 0
	}
	return 8*len(s.block) + len(s.head)
}

// matches reports whether win, bytes of the version from offset base,
// are the bytes admission read: every block it holds whole has its hash,
// none is held in part, and head is the version's head.
func (s *sums) matches(win []byte, base int64, head []byte) bool {
	if !bytes.Equal(head, s.head) {
		return false
	}
	b := int64(1) << s.shift
	if base&(b-1) != 0 {
		return false
	}
	end := min(base+int64(len(win)), s.size)
	for at := base; at < end; at += b {
		e := min(at+b, s.size)
		if e > end || maphash.Bytes(sumKey, win[at-base:e-base]) != s.block[at>>s.shift] {
			return false
		}
	}
	return true
}

// recorder reads a version of size bytes for admission's scans, whole
// blocks at a time, and records each block's hash; a block read again
// (the scans overlap, and each reads the whole file) must read the same.
// Safe for concurrent use (the scans of the two halves of a file).
type recorder struct {
	r     io.ReaderAt
	size  int64
	shift uint
	ok    bool // hashes are kept for this size
	mu    sync.Mutex
	sum   []uint64
	seen  []bool
	left  int // blocks not seen yet
	head  [4]byte
}

func newRecorder(r io.ReaderAt, size int64) *recorder {
	rec := &recorder{r: r, size: size}
	rec.shift, rec.ok = blockShift(size)
	if rec.ok {
		n := int((size + (1 << rec.shift) - 1) >> rec.shift)
		rec.sum, rec.seen, rec.left = make([]uint64, n), make([]bool, n), n
	}
	return rec
}

// ReadAt reads p at off as the file's ReadAt does, reading every block it
// touches whole (a block it holds in part, into a buffer of its own) and
// recording the block's hash.
func (rec *recorder) ReadAt(p []byte, off int64) (int, error) {
	if !rec.ok || off >= rec.size {
		return rec.r.ReadAt(p, off)
	}
	n, err := rec.r.ReadAt(p, off)
	b := int64(1) << rec.shift
	end := min(off+int64(n), rec.size)
	var part []byte
	for at := off &^ (b - 1); at < end; at += b {
		e := min(at+b, rec.size)
		if at >= off && e <= end {
			if rerr := rec.record(at, p[at-off:e-off]); rerr != nil {
				return n, rerr
			}
			continue
		}
		// A block held in part: read whole, and what p holds of it must
		// be what the whole read read.
		if part == nil {
			part = make([]byte, b)
		}
		m, rerr := rec.r.ReadAt(part[:e-at], at)
		if int64(m) < e-at {
			if rerr == nil || rerr == io.EOF {
				rerr = io.ErrUnexpectedEOF
			}
			return n, rerr
		}
		lo, hi := max(at, off), min(e, end)
		if !bytes.Equal(p[lo-off:hi-off], part[lo-at:hi-at]) {
			return n, errChangedScanning
		}
		if rerr := rec.record(at, part[:e-at]); rerr != nil {
			return n, rerr
		}
	}
	return n, err
}

// record takes the hash of the block at off, whose bytes are blk.
func (rec *recorder) record(off int64, blk []byte) error {
	h := maphash.Bytes(sumKey, blk)
	i := off >> rec.shift
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.seen[i] {
		if rec.sum[i] != h {
			return errChangedScanning
		}
		return nil
	}
	if i == 0 {
		copy(rec.head[:], blk)
	}
	rec.seen[i], rec.sum[i] = true, h
	rec.left--
	return nil
}

// sums returns the hashes of a version whose every block the scans read,
// nil otherwise.
func (rec *recorder) sums() *sums {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !rec.ok || rec.left > 0 {
		return nil
	}
	return &sums{shift: rec.shift, size: rec.size, head: append([]byte(nil), rec.head[:min(4, rec.size)]...), block: rec.sum}
}

// bodyByte marks the bytes a key's body may be written in: base64 (and
// its URL-safe letters), hex, white space, and the escapes a body takes
// in a string or a URL.
var bodyByte = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \t\r\n\\%\"") {
		t[c] = true
	}
	return t
}()

// bodyLike reports whether b is all body bytes, a digit among them: a
// key's body, base64 or hex of random bytes, holds digits all along, and
// letters and white space alone (a file of words) are no key's.
func bodyLike(b []byte) bool {
	digit := false
	for _, c := range b {
		if !bodyByte[c] {
			return false
		}
		digit = digit || c-'0' < 10
	}
	return digit
}

// leadUnchanged reports whether the lookBack blocks before w (read from
// r), in which a key reaching into w's range could start, are the bytes
// admission read: true at once when w starts the file, or when its bytes
// before the range are not all body bytes (see the comment at the top).
func (s *sums) leadUnchanged(r io.ReaderAt, w Window) bool {
	if w.Base == 0 || w.From < w.Base || !bodyLike(w.Bytes[:w.From-w.Base]) {
		return true
	}
	b := int64(1) << s.shift
	bp := leads.Get().(*[]byte)
	defer leads.Put(bp)
	if int64(cap(*bp)) < b {
		*bp = make([]byte, b)
	}
	buf := (*bp)[:b]
	for i := w.Base>>s.shift - 1; i >= 0 && i >= w.Base>>s.shift-lookBack; i-- {
		if n, _ := r.ReadAt(buf, i<<s.shift); int64(n) < b || maphash.Bytes(sumKey, buf) != s.block[i] {
			return false
		}
	}
	return true
}

// leads holds the buffers leadUnchanged reads blocks into.
var leads = sync.Pool{New: func() any { return new([]byte) }}
