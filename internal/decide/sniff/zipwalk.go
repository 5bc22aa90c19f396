package sniff

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// A zip is read two ways by the tools that unpack it: through its central
// directory (unzip, Go's and Python's readers, Java's ZipFile) and by
// walking its local headers from the start as they stream by (Java's
// ZipInputStream, bsdtar and libarchive reading a pipe). A zip can be made
// that shows each of them other members: local headers that name other
// files than the directory, members the directory does not point to
// between the ones it does, a deflate stream that ends before the size the
// directory gives (the streaming reader reads on into hidden headers), two
// entries over the same bytes. So a zip is checked only when both readings
// are one: the local records the directory points to, each agreeing with
// its entry (name, method, flags, sizes, CRC), tile the bytes between the
// first of them and the directory exactly, no local header signature lies
// outside them (a prefix — a self-extractor's stub, a PNG the zip is
// appended to — is read for one, as a streaming reader skipping junk
// would), and each member's compressed bytes are exactly those it is read
// from. Any disagreement is reported (InsideTwoWays, its Detail saying
// where the readings part): the verdict refuses it as it refuses what
// cannot be checked, never guesses which reading an extractor takes.
//
// A zip is recognised by its end record, not only by its first bytes: a
// zip behind a prefix (self-extracting, appended to an image) is opened
// by every directory reader, its offsets taken relative to where the
// directory says the zip starts, as they take them.

// Zip record signatures and fixed sizes.
var (
	sigLocal = []byte("PK\x03\x04")
	sigDir   = []byte("PK\x01\x02")
	sigEnd   = []byte("PK\x05\x06")
	sigDesc  = []byte("PK\x07\x08")
)

const (
	zipEndLen   = 22
	zipDirLen   = 46
	zipLocalLen = 30
	// ZipTail is how many of a file's last bytes hold its zip end record,
	// if it has one (the record and the longest comment).
	ZipTail = zipEndLen + 0xFFFF
)

// Why a zip's two readings disagree (the prefix of an Inside's Detail).
const zipDisagree = "zip readers disagree: "

// zipEnd is a zip's end of central directory record.
type zipEnd struct {
	at               int64 // its offset in the file
	entries          int
	dirSize, dirOff  int64
	diskOK, zip64ish bool
}

// findZipEnd finds the end record in tail, the last bytes of a file of
// size bytes: the one record whose comment ends where the file ends. why
// says why there is none to take ("" and ok false: none at all).
func findZipEnd(tail []byte, size int64) (e zipEnd, why string, ok bool) {
	found, loose := 0, false
	for end := len(tail); ; {
		i := bytes.LastIndex(tail[:end], sigEnd)
		if i < 0 {
			break
		}
		end = i
		if len(tail)-i < zipEndLen {
			continue
		}
		n := int(binary.LittleEndian.Uint16(tail[i+20:]))
		switch {
		case i+zipEndLen+n == len(tail):
			found++
			r := tail[i:]
			e = zipEnd{
				at:      size - int64(len(tail)) + int64(i),
				entries: int(binary.LittleEndian.Uint16(r[10:])),
				dirSize: int64(binary.LittleEndian.Uint32(r[12:])),
				dirOff:  int64(binary.LittleEndian.Uint32(r[16:])),
				diskOK: binary.LittleEndian.Uint16(r[4:]) == 0 && binary.LittleEndian.Uint16(r[6:]) == 0 &&
					binary.LittleEndian.Uint16(r[8:]) == binary.LittleEndian.Uint16(r[10:]),
			}
			e.zip64ish = e.entries == 0xFFFF || e.dirOff == 0xFFFFFFFF || e.dirSize == 0xFFFFFFFF
		case i+zipEndLen+n < len(tail):
			loose = true
		}
	}
	switch {
	case found > 1:
		return e, zipDisagree + "two end records", false
	case found == 1:
		return e, "", true
	case loose:
		return e, zipDisagree + "bytes after the end record", false
	}
	return e, "", false
}

// ZipAtEnd reports whether tail, the last bytes of a file (ZipTail of
// them, or all when it is shorter), ends with a zip's end record: the one
// record whose comment ends where the file does, of one disk, its
// directory before it.
func ZipAtEnd(tail []byte) bool {
	e, _, ok := findZipEnd(tail, int64(len(tail)))
	return ok && e.diskOK && (e.zip64ish || e.dirSize <= e.at && int64(e.entries)*zipDirLen <= e.dirSize)
}

// zipEntry is a central directory entry.
type zipEntry struct {
	name               string
	flags, method      uint16
	crc                uint32
	csize, usize       int64
	off                int64 // its local header's offset in the file
	dataOff, recordEnd int64 // where its data starts, and its record ends
}

// zipEntries reads the central directory of the zip whose end record is e
// (at most members entries, whose size is bounded): its entries, with
// their local headers' offsets in the file. why says why it cannot.
func zipEntries(r io.ReaderAt, e zipEnd, members int) ([]zipEntry, string, error) {
	switch {
	case !e.diskOK:
		return nil, "a zip of more than one disk", nil
	case e.zip64ish:
		return nil, "a zip64 archive", nil
	case e.entries > members:
		return nil, fmt.Sprintf("more than %d members", members), nil
	case e.dirSize > maxZipDirectory:
		return nil, fmt.Sprintf("a central directory larger than %d bytes", maxZipDirectory), nil
	case e.dirSize > e.at || e.dirOff > e.at-e.dirSize:
		return nil, "damaged zip: a central directory outside the file", nil
	}
	// Offsets are from where the zip starts: the directory ends at the
	// end record, so that is its start less the directory's own offset
	// (0 for a plain zip, or one whose offsets count a prefix).
	base := e.at - e.dirSize - e.dirOff
	dir := make([]byte, e.dirSize)
	if _, err := r.ReadAt(dir, e.at-e.dirSize); err != nil && err != io.EOF {
		return nil, "", err
	}
	es := make([]zipEntry, 0, e.entries)
	for len(es) < e.entries {
		if len(dir) < zipDirLen || !bytes.HasPrefix(dir, sigDir) {
			return nil, "damaged zip: a central directory shorter than its entries", nil
		}
		nl := int(binary.LittleEndian.Uint16(dir[28:]))
		xl := int(binary.LittleEndian.Uint16(dir[30:]))
		cl := int(binary.LittleEndian.Uint16(dir[32:]))
		if len(dir) < zipDirLen+nl+xl+cl {
			return nil, "damaged zip: a central directory shorter than its entries", nil
		}
		z := zipEntry{
			name:   string(dir[zipDirLen : zipDirLen+nl]),
			flags:  binary.LittleEndian.Uint16(dir[8:]),
			method: binary.LittleEndian.Uint16(dir[10:]),
			crc:    binary.LittleEndian.Uint32(dir[16:]),
			csize:  int64(binary.LittleEndian.Uint32(dir[20:])),
			usize:  int64(binary.LittleEndian.Uint32(dir[24:])),
			off:    base + int64(binary.LittleEndian.Uint32(dir[42:])),
		}
		if z.csize == 0xFFFFFFFF || z.usize == 0xFFFFFFFF || z.off-base == 0xFFFFFFFF {
			return nil, "a zip64 member", nil
		}
		es = append(es, z)
		dir = dir[zipDirLen+nl+xl+cl:]
	}
	if len(dir) != 0 {
		return nil, zipDisagree + "a central directory longer than its entries", nil
	}
	return es, "", nil
}

// zipLayout checks that the local records of es (a zip whose directory
// starts at dirAt, in a file of r) agree with their entries and tile the
// file from the first of them to the directory, and that no local header
// signature lies outside them: what a streaming reader walks is what the
// directory lists. It fills each entry's dataOff and recordEnd (the end
// of its data, before a data descriptor), and returns es in file order.
func zipLayout(r io.ReaderAt, es []zipEntry, dirAt int64) ([]zipEntry, string, error) {
	order := slices.Clone(es)
	slices.SortStableFunc(order, func(a, b zipEntry) int { return int(min(max(a.off-b.off, -1), 1)) })
	start := dirAt
	if len(order) > 0 {
		start = order[0].off
	}
	if start < 0 {
		return nil, "damaged zip: a member before the file's start", nil
	}
	if at, err := findSig(r, 0, start); at >= 0 || err != nil {
		return nil, zipDisagree + fmt.Sprintf("a local header at %d, before the first member the directory lists", at), err
	}
	pos := start
	var h [zipLocalLen]byte
	for i := range order {
		z := &order[i]
		switch {
		case z.off < pos:
			return nil, zipDisagree + fmt.Sprintf("member %q overlaps the one before it", z.name), nil
		case z.off > pos:
			return nil, zipDisagree + fmt.Sprintf("bytes between members, before %q", z.name), nil
		}
		if z.off+zipLocalLen > dirAt {
			return nil, "damaged zip: a local header past the directory", nil
		}
		if _, err := r.ReadAt(h[:], z.off); err != nil {
			return nil, "", err
		}
		nl := int64(binary.LittleEndian.Uint16(h[26:]))
		xl := int64(binary.LittleEndian.Uint16(h[28:]))
		z.dataOff = z.off + zipLocalLen + nl + xl
		z.recordEnd = z.dataOff + z.csize
		if !bytes.Equal(h[:4], sigLocal) || z.recordEnd > dirAt {
			return nil, zipDisagree + fmt.Sprintf("member %q has no local header where the directory says", z.name), nil
		}
		name := make([]byte, nl)
		if _, err := r.ReadAt(name, z.off+zipLocalLen); err != nil {
			return nil, "", err
		}
		flags := binary.LittleEndian.Uint16(h[6:])
		method := binary.LittleEndian.Uint16(h[8:])
		crc := binary.LittleEndian.Uint32(h[14:])
		csize := int64(binary.LittleEndian.Uint32(h[18:]))
		usize := int64(binary.LittleEndian.Uint32(h[22:]))
		desc := flags&8 != 0
		// A size in the local header that is not the directory's:
		// a streaming reader goes by the local one. With a data
		// descriptor, the local one may be 0 (not known when written).
		same := func(local, dir int64) bool { return local == dir || desc && local == 0 }
		switch {
		case string(name) != z.name:
			return nil, zipDisagree + fmt.Sprintf("the local header of member %q names %q", z.name, name), nil
		case method != z.method || flags&9 != z.flags&9:
			return nil, zipDisagree + fmt.Sprintf("the local header of member %q gives another method or flags", z.name), nil
		case !same(csize, z.csize) || !same(usize, z.usize) || !same(int64(crc), int64(z.crc)):
			return nil, zipDisagree + fmt.Sprintf("the local header of member %q gives other sizes", z.name), nil
		}
		pos = z.recordEnd
		if desc {
			n, why, err := zipDescriptor(r, z, dirAt)
			if why != "" || err != nil {
				return nil, why, err
			}
			pos += n
		}
	}
	if at, err := findSig(r, pos, dirAt); at >= 0 || err != nil {
		return nil, zipDisagree + fmt.Sprintf("a local header at %d, after the last member the directory lists", at), err
	}
	return order, "", nil
}

// zipDescriptor checks the data descriptor after z's data: with or
// without its signature, giving the directory's CRC and sizes. It returns
// the descriptor's length.
func zipDescriptor(r io.ReaderAt, z *zipEntry, dirAt int64) (int64, string, error) {
	var d [16]byte
	n := min(int64(len(d)), dirAt-z.recordEnd)
	if _, err := r.ReadAt(d[:n], z.recordEnd); err != nil && err != io.EOF {
		return 0, "", err
	}
	want := func(b []byte) bool {
		return len(b) >= 12 && binary.LittleEndian.Uint32(b) == z.crc &&
			int64(binary.LittleEndian.Uint32(b[4:])) == z.csize && int64(binary.LittleEndian.Uint32(b[8:])) == z.usize
	}
	switch {
	case n >= 16 && bytes.Equal(d[:4], sigDesc) && want(d[4:16]):
		return 16, "", nil
	case want(d[:n]):
		return 12, "", nil
	}
	return 0, zipDisagree + fmt.Sprintf("member %q's data descriptor is not the directory's", z.name), nil
}

// findSig is the offset of the first local header signature in r's bytes
// [from, to) (-1: none).
func findSig(r io.ReaderAt, from, to int64) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk+len(sigLocal)-1)
	for at := from; at < to; at += chunk {
		n := min(int64(len(buf)), to-at)
		if _, err := r.ReadAt(buf[:n], at); err != nil && err != io.EOF {
			return -1, err
		}
		if i := bytes.Index(buf[:n], sigLocal); i >= 0 {
			return at + int64(i), nil
		}
	}
	return -1, nil
}

// zipMember opens z's content as a streaming reader reads it: stored, the
// bytes the sizes give (and none that a reader looking for its data
// descriptor would stop at); deflated, a stream that must end exactly at
// the compressed size. check, called once the content has been read
// whole, says why it disagrees ("": it does not).
func zipMember(r io.ReaderAt, z *zipEntry) (rd io.Reader, check func(data []byte) string, why string) {
	sec := io.NewSectionReader(r, z.dataOff, z.csize)
	crc := func(data []byte) string {
		switch {
		case int64(len(data)) != z.usize:
			return zipDisagree + fmt.Sprintf("member %q is not the size the directory gives", z.name)
		case crc32.ChecksumIEEE(data) != z.crc:
			return fmt.Sprintf("damaged zip: member %q fails its CRC", z.name)
		}
		return ""
	}
	switch z.method {
	case 0:
		if z.csize != z.usize {
			return nil, nil, zipDisagree + fmt.Sprintf("stored member %q has two sizes", z.name)
		}
		if z.flags&8 != 0 {
			if at, err := findSig(sec, 0, z.csize); at >= 0 || err != nil {
				return nil, nil, zipDisagree + fmt.Sprintf("stored member %q holds a data descriptor's signature", z.name)
			}
		}
		return sec, crc, ""
	case 8:
		br := bufio.NewReaderSize(sec, 4096)
		fr := flate.NewReader(br)
		return fr, func(data []byte) string {
			// The stream has ended: what it took of the section is
			// what was read from it less what is still buffered.
			left, _ := sec.Seek(0, io.SeekCurrent)
			if left-int64(br.Buffered()) != z.csize {
				return zipDisagree + fmt.Sprintf("member %q's deflate stream ends before its compressed size", z.name)
			}
			return crc(data)
		}, ""
	}
	return nil, nil, fmt.Sprintf("compression method %d", z.method)
}
