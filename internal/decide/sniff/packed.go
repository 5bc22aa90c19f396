package sniff

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/policy"
)

// Packed files — gzip, bzip2 and bare zlib streams, tar and zip archives,
// recognised by their magic bytes, never by their names — are looked into: a key or a
// credential compressed, or a denied file (.env, id_rsa) packed in an
// archive, is out of the view's reach only if what is inside is checked as
// a file of the tree would be. Members are checked by name (the policy's
// deny rules, with the member's path inside the archive) and by content
// (keys in every encoding, credentials in text), archives inside archives
// too, within bounds of members, bytes and depth. What cannot be checked
// within the bounds — too large, too many members, too deep, encrypted, a
// compression method not known here, damaged — is reported as unchecked:
// the verdict refuses it, never serves it unchecked. A credential cannot be
// masked inside compressed bytes, so one found in a member refuses the
// file too.

// Bounds of one packed file's check: they bound its memory (one member
// at a time in memory, at each depth) and its time (every byte
// decompressed counts).
const (
	// MaxPackedMembers is the most entries looked at, over all depths.
	MaxPackedMembers = 10000
	// MaxPackedMember is the largest member read, decompressed.
	MaxPackedMember = 16 << 20
	// MaxPackedBytes is the most bytes decompressed, over all members
	// and depths (a gzip bomb stops here).
	MaxPackedBytes = 128 << 20
	// MaxPackedDepth is how deep archives inside archives are opened: a
	// .tgz inside a .zip is depth 2 (a tar inside its gzip is one level).
	MaxPackedDepth = 2
	// maxZipDirectory bounds a zip's central directory, which the zip
	// reader holds whole.
	maxZipDirectory = 4 << 20
)

// Packing kinds.
const (
	Gzip  = "gzip"
	Bzip2 = "bzip2"
	Zlib  = "zlib"
	Zip   = "zip"
	Tar   = "tar"
)

// unreadPacked are the packings known by their magic that fsguard cannot
// decompress: a key in one is out of reach of every check, so a file in
// one is reported unchecked (refused), never served as opaque bytes.
var unreadPacked = []struct{ kind, magic string }{
	{"xz", "\xfd7zXZ\x00"},
	{"zstd", "\x28\xb5\x2f\xfd"},
	{"7z", "7z\xbc\xaf\x27\x1c"},
	{"rar", "Rar!\x1a\x07"},
	{"lzip", "LZIP"},
}

// PackedKind names the packing of content that starts with head (at
// least 512 bytes when there are): "gzip", "bzip2", "zlib", "zip", "tar",
// one of unreadPacked's, or "".
func PackedKind(head []byte) string {
	switch {
	case isZlib(head):
		return Zlib
	case len(head) >= 3 && head[0] == 0x1f && head[1] == 0x8b && head[2] == 8:
		return Gzip
	case len(head) >= 10 && string(head[:3]) == "BZh" && head[3] >= '1' && head[3] <= '9' &&
		(string(head[4:10]) == "\x31\x41\x59\x26\x53\x59" || string(head[4:10]) == "\x17\x72\x45\x38\x50\x90"):
		return Bzip2
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return Zip
	case isTarHeader(head):
		return Tar
	}
	for _, u := range unreadPacked {
		if bytes.HasPrefix(head, []byte(u.magic)) {
			return u.kind
		}
	}
	return ""
}

// packedKindOf is the packing of data, a whole file: by its first bytes,
// or a zip by its end record (behind a prefix).
func packedKindOf(data []byte) string {
	kind, _ := PackedKindIn(data, bytes.NewReader(data), int64(len(data)))
	return kind
}

// PackedKindIn is the packing of the file of size bytes that r reads,
// whose first bytes are head (at least 512 when there are): by head
// (PackedKind), or a zip by the end record its last bytes hold, whatever
// is before it (a self-extractor's stub, an image the zip is appended
// to), as every zip reader finds one.
func PackedKindIn(head []byte, r io.ReaderAt, size int64) (string, error) {
	if kind := PackedKind(head); kind != "" {
		return kind, nil
	}
	if size < zipEndLen {
		return "", nil
	}
	var tail []byte
	if int64(len(head)) >= size {
		tail = head[size-min(size, ZipTail) : size]
	} else {
		tail = make([]byte, min(size, ZipTail))
		if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil && err != io.EOF {
			return "", err
		}
	}
	if ZipAtEnd(tail) {
		return Zip, nil
	}
	return "", nil
}

// zlibHead is how much of a zlib stream's output isZlib inflates.
const zlibHead = 4096

// isZlib: head starts a zlib stream (RFC 1950: deflate, a 32 KiB window
// or less, its header's check right) that inflates as one: to its end
// with its checksum right, or to zlibHead bytes, or, cut at the end of
// head, to half of head's length at least. A zlib
// header is two bytes that text can start with ("x^"), so the header
// alone does not decide. A git object (zlib of "blob 12\x00...") is not
// one: a repository's objects are the history scan's to report, not the
// view's to refuse. One with a preset dictionary: isDictZlib.
func isZlib(head []byte) bool {
	if len(head) < 8 || head[0]&0x0f != 8 || head[0]>>4 > 7 || (uint(head[0])<<8|uint(head[1]))%31 != 0 {
		return false
	}
	if head[1]&0x20 != 0 {
		return isDictZlib(head)
	}
	zr, err := zlib.NewReader(bytes.NewReader(head))
	if err != nil {
		return false
	}
	out := make([]byte, zlibHead)
	n := 0
	for n < zlibHead {
		k, err := zr.Read(out[n:])
		n += k
		if err == io.EOF {
			break // its end, its checksum checked
		}
		if err == io.ErrUnexpectedEOF && n >= len(head)/2 {
			break // cut with head
		}
		if err != nil {
			return false
		}
	}
	return !isGitObject(out[:n])
}

// isDictZlib: head is a whole zlib stream with a preset dictionary (its
// id in the 4 bytes after the header). What it holds cannot be read
// without the dictionary, so such a stream is reported unchecked
// (inspect's reader refuses it), never served as opaque bytes. Over a
// stand-in dictionary any back reference resolves, and bytes of text
// decode as fixed-Huffman deflate for a long way, so a stream is taken
// for one only when it inflates to its final block's end with exactly
// its checksum's 4 bytes after it: head must hold it whole.
func isDictZlib(head []byte) bool {
	if len(head) < 14 {
		return false
	}
	br := bytes.NewReader(head[6:]) // a ByteReader: flate reads no further than the stream's end
	fr := flate.NewReaderDict(br, make([]byte, 32<<10))
	if _, err := io.Copy(io.Discard, io.LimitReader(fr, 64<<20)); err != nil {
		return false
	}
	var one [1]byte
	if n, err := fr.Read(one[:]); n != 0 || err != io.EOF {
		return false // more than the bound: not decided as one
	}
	return br.Len() == 4
}

// isGitObject: b starts as a git object does ("blob 12\x00").
func isGitObject(b []byte) bool {
	kind, rest, ok := bytes.Cut(b, []byte(" "))
	if !ok || !slices.Contains([]string{"blob", "tree", "commit", "tag"}, string(kind)) {
		return false
	}
	size, _, ok := bytes.Cut(rest, []byte{0})
	if !ok || len(size) == 0 || len(size) > 20 {
		return false
	}
	for _, c := range size {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isTarHeader: a tar header, POSIX, GNU or older, whose checksum is
// right (text that happens to hold "ustar" at 257 is not one).
func isTarHeader(h []byte) bool {
	if len(h) < 512 {
		return false
	}
	sum := strings.TrimRight(strings.TrimSpace(string(h[148:156])), "\x00 ")
	if sum == "" || h[0] == 0 {
		return false
	}
	var want int64
	if _, err := fmt.Sscanf(sum, "%o", &want); err != nil {
		return false
	}
	var got int64
	for i, c := range h[:512] {
		if i >= 148 && i < 156 {
			c = ' '
		}
		got += int64(c)
	}
	return got == want
}

// Why a packed file is refused.
const (
	InsideKey        = "key"        // a member is or holds a private key
	InsideName       = "name"       // a member's name is denied (Rule)
	InsideCredential = "credential" // a member's text holds a credential (Family)
	InsideUnchecked  = "unchecked"  // it cannot be checked within the bounds (Detail)
	InsideTwoWays    = "two-ways"   // a zip's streaming and directory readings disagree (Detail)
	InsideRefused    = "refused"    // the policy refuses packed files ([sniff] archives = "deny")
)

// Inside is what a packed file holds that the view must not serve.
type Inside struct {
	Why string
	// Member is the member's path, archives inside archives joined by
	// "/" (a gzip stream's member is its original name, or "-").
	Member string
	Rule   string // InsideName: the deny glob
	Family string // InsideCredential: the credential's family
	Detail string // InsideUnchecked: which bound, or what could not be read; InsideTwoWays: where a zip's readings part
}

// Unpacker checks packed files: members' names against Deny, their
// content for keys and, when Creds is set, credentials.
type Unpacker struct {
	Deny  []policy.Glob
	Fold  bool
	Creds *Detector
	// bounds, when set, replaces the Max* bounds (tests).
	bounds *bounds
}

// bounds are a check's bounds: the Max* constants, but in tests.
type bounds struct {
	members     int
	member, all int64
}

var defaultBounds = bounds{MaxPackedMembers, MaxPackedMember, MaxPackedBytes}

// unpack is one packed file's check under way: its bounds and budget.
type unpack struct {
	u       *Unpacker
	b       bounds
	members int
	bytes   int64
}

// errOver is a bound met while decompressing.
type errOver struct{ what string }

func (e *errOver) Error() string { return e.what }

// Inspect checks the packed file r of size bytes, whose packing is kind
// (PackedKind); nil when nothing in it stops it from being served. err is
// an error reading r itself.
func (u *Unpacker) Inspect(r io.ReaderAt, size int64, kind string) (*Inside, error) {
	p := &unpack{u: u, b: defaultBounds}
	if u.bounds != nil {
		p.b = *u.bounds
	}
	in, err := p.inspect(r, size, kind, "", 1)
	var over *errOver
	if errors.As(err, &over) {
		return &Inside{Why: InsideUnchecked, Detail: over.what}, nil
	}
	return in, err
}

// unchecked is an Inside for a member that cannot be checked: a zip
// whose two readings disagree is one (zipDisagree), told apart.
func unchecked(member, why string) *Inside {
	if d, ok := strings.CutPrefix(why, zipDisagree); ok {
		return &Inside{Why: InsideTwoWays, Member: member, Detail: d}
	}
	return &Inside{Why: InsideUnchecked, Member: member, Detail: why}
}

// inspect checks one packed stream at depth, its members named under
// prefix.
func (p *unpack) inspect(r io.ReaderAt, size int64, kind, prefix string, depth int) (*Inside, error) {
	switch kind {
	case Gzip:
		return p.gzip(io.NewSectionReader(r, 0, size), prefix, depth)
	case Zip:
		return p.zip(r, size, prefix, depth)
	case Tar:
		return p.tar(io.NewSectionReader(r, 0, size), prefix, depth, true)
	case Bzip2:
		return p.stream(bzip2.NewReader(io.NewSectionReader(r, 0, size)), prefix+"-", depth)
	case Zlib:
		zr, err := zlib.NewReader(io.NewSectionReader(r, 0, size))
		if err != nil {
			return unchecked(prefix, "damaged zlib: "+err.Error()), nil
		}
		return p.stream(zr, prefix+"-", depth)
	}
	for _, u := range unreadPacked {
		if kind == u.kind {
			return unchecked(prefix, "a packing fsguard cannot read ("+kind+")"), nil
		}
	}
	return nil, nil
}

// counted counts the bytes decompressed against the file's budget.
type counted struct {
	r io.Reader
	p *unpack
}

func (c *counted) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.bytes += int64(n)
	if c.p.bytes > c.p.b.all {
		return n, &errOver{fmt.Sprintf("more than %d bytes decompressed", c.p.b.all)}
	}
	return n, err
}

// readMember reads a member's content whole, within the member bound;
// count: its bytes count against the budget (not yet counted by the
// gzip stream they come from).
// hint is the member's size as its header says (-1: unknown), to read it
// into a buffer of its size.
func (p *unpack) readMember(r io.Reader, member string, hint int64, count bool) ([]byte, *Inside, error) {
	if count {
		r = &counted{r, p}
	}
	var b bytes.Buffer
	if hint >= 0 {
		b.Grow(int(min(hint, p.b.member) + 1))
	}
	_, err := b.ReadFrom(io.LimitReader(r, p.b.member+1))
	data := b.Bytes()
	var over *errOver
	switch {
	case errors.As(err, &over):
		return nil, nil, err
	case err != nil:
		return nil, unchecked(member, "damaged: "+err.Error()), nil
	case int64(len(data)) > p.b.member:
		return nil, p.tooLarge(member), nil
	}
	return data, nil, nil
}

// gzip checks a gzip stream: a tar inside is read as it streams; anything
// else is a member, read whole.
func (p *unpack) gzip(r io.Reader, prefix string, depth int) (*Inside, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return unchecked(prefix, "damaged gzip: "+err.Error()), nil
	}
	name := zr.Name
	if name == "" {
		name = "-"
	}
	member := prefix + path.Base(name)
	if in := p.named(member); in != nil {
		return in, nil
	}
	return p.stream(zr, member, depth)
}

// stream checks a decompressed stream (gzip's, bzip2's) named member: a
// tar inside is read as it streams; anything else is a member, read whole.
func (p *unpack) stream(zr io.Reader, member string, depth int) (*Inside, error) {
	prefix := member[:strings.LastIndex(member, "/")+1]
	br := bufio.NewReaderSize(&counted{zr, p}, 4096)
	head, _ := br.Peek(512)
	if isTarHeader(head) {
		return p.tar(br, prefix, depth, false)
	}
	data, in, err := p.readMember(br, member, -1, false)
	if in != nil || err != nil {
		return in, err
	}
	return p.content(data, member, depth)
}

// tar checks a tar stream's entries, one at a time; count: its members'
// bytes count against the budget (a tar read from a gzip stream is
// counted as it is decompressed).
func (p *unpack) tar(r io.Reader, prefix string, depth int, count bool) (*Inside, error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, nil
		}
		var over *errOver
		if errors.As(err, &over) {
			return nil, err
		}
		if err != nil {
			return unchecked(prefix, "damaged tar: "+err.Error()), nil
		}
		member := prefix + memberPath(h.Name)
		if in := p.entry(member); in != nil {
			return in, nil
		}
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeSymlink, tar.TypeLink, tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			continue // a name, no content
		}
		// Every other type flag carries data that extractors write out as
		// a file (contiguous files, flags they do not know): checked.
		if h.Size > p.b.member {
			return p.tooLarge(member), nil
		}
		data, in, err := p.readMember(tr, member, h.Size, count)
		if in != nil || err != nil {
			return in, err
		}
		if in, err := p.content(data, member, depth); in != nil || err != nil {
			return in, err
		}
	}
}

// zip checks a zip archive as both its readings see it (zipwalk.go):
// through its central directory, and walking its local headers; the
// members are read from the local records, once the two are found one.
func (p *unpack) zip(r io.ReaderAt, size int64, prefix string, depth int) (*Inside, error) {
	tail := make([]byte, min(size, ZipTail))
	if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil && err != io.EOF {
		return nil, err
	}
	e, why, ok := findZipEnd(tail, size)
	if !ok {
		if why == "" {
			why = "damaged zip: no end of central directory"
		}
		return unchecked(prefix, why), nil
	}
	es, why, err := zipEntries(r, e, p.b.members)
	if why != "" || err != nil {
		return unchecked(prefix, why), err
	}
	es, why, err = zipLayout(r, es, e.at-e.dirSize)
	if why != "" || err != nil {
		return unchecked(prefix, why), err
	}
	for i := range es {
		z := &es[i]
		member := prefix + memberPath(z.name)
		if in := p.entry(member); in != nil {
			return in, nil
		}
		if z.csize == 0 && z.usize == 0 {
			continue // a directory, or an empty file
		}
		if z.flags&1 != 0 {
			return unchecked(member, "an encrypted member"), nil
		}
		if z.usize > p.b.member {
			return p.tooLarge(member), nil
		}
		rd, check, why := zipMember(r, z)
		if why != "" {
			return unchecked(member, why), nil
		}
		data, in, err := p.readMember(rd, member, z.usize, true)
		if in != nil || err != nil {
			return in, err
		}
		if why := check(data); why != "" {
			return unchecked(member, why), nil
		}
		if in, err := p.content(data, member, depth); in != nil || err != nil {
			return in, err
		}
	}
	return nil, nil
}

// memberPath is a member's name as a path inside the archive: cleaned,
// without a leading "/", "./" or "../".
func memberPath(name string) string {
	p := path.Clean("/" + strings.ReplaceAll(name, "\\", "/"))
	return strings.TrimPrefix(p, "/")
}

// tooLarge is the Inside of a member beyond the member bound.
func (p *unpack) tooLarge(member string) *Inside {
	return unchecked(member, fmt.Sprintf("a member larger than %d bytes", p.b.member))
}

// entry counts a member against the bound and checks its name.
func (p *unpack) entry(member string) *Inside {
	p.members++
	if p.members > p.b.members {
		return unchecked(member, fmt.Sprintf("more than %d members", p.b.members))
	}
	return p.named(member)
}

// named checks a member's path against the deny rules, as a file of that
// path under a root (relative rules) or at that absolute path (absolute
// ones: an archive of / holds home/u/.ssh/...).
func (p *unpack) named(member string) *Inside {
	if member == "" || member == "-" {
		return nil
	}
	if i := policy.MatchGlobs(p.u.Deny, member, "/"+member, p.u.Fold); i >= 0 {
		return &Inside{Why: InsideName, Member: member, Rule: p.u.Deny[i].String()}
	}
	return nil
}

// content checks a member's bytes: an archive inside is opened (to the
// depth bound), anything else searched for keys and credentials (a binary
// one also as UTF-16 without a byte order mark).
func (p *unpack) content(data []byte, member string, depth int) (*Inside, error) {
	if HasKey(data) {
		return &Inside{Why: InsideKey, Member: member}, nil
	}
	if kind := packedKindOf(data); kind != "" {
		if depth >= MaxPackedDepth {
			return unchecked(member, fmt.Sprintf("archives nested deeper than %d", MaxPackedDepth)), nil
		}
		return p.inspect(bytes.NewReader(data), int64(len(data)), kind, member+"/", depth+1)
	}
	if p.u.Creds == nil {
		return nil, nil
	}
	// A member that is not text (an executable, a database, UTF-16
	// without a byte order mark) holds tokens as readably once unpacked:
	// it is searched as binary files are.
	find := p.u.Creds.Find
	sample := data[:min(len(data), 8192)]
	if c := Classify(sample, len(sample) == len(data)).Class; c != Text && c != Encoding {
		find = p.u.Creds.FindBinary
	}
	if ms := find(data); len(ms) > 0 {
		return &Inside{Why: InsideCredential, Member: member, Family: ms[0].Family}, nil
	}
	return nil, nil
}
