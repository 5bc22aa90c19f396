// Package gitindex rewrites a git index (the .git/index file, "DIRC"
// versions 2 to 4, SHA-1 or SHA-256) so that chosen entries carry the
// skip-worktree bit. git then does not look for those files in the working
// tree: in a view that hides tracked files (denied names, keys), `git
// status` does not report them deleted, and a patch built from `git diff`
// does not delete them.
//
// The format is git's Documentation/gitformat-index.txt. Only what this
// needs is parsed. The rewrite is version 3 or 4 with extended flags on
// every entry and without the extensions that record byte offsets (EOIE,
// IEOT), whatever it hides, so its length depends on the file alone (Size);
// every other byte is kept, and the trailing checksum is recomputed.
package gitindex

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
)

const (
	flagExtended    = 0x4000 // in an entry's flags: extended flags follow (v3+)
	extSkipWorktree = 0x4000 // in the extended flags
)

// ErrUnsupported is returned for an index this package does not rewrite
// (a split index); the caller serves it unchanged.
var ErrUnsupported = errors.New("gitindex: unsupported index")

// Hide returns the index with skip-worktree set on the entries hidden
// chooses, and how many entries it set. hidden is called once, with every
// entry's path in the index's order, and returns one answer per path (the
// caller may decide them at once). Its length does not depend on what is
// hidden (see Size). hidden is not called for an index Hide refuses.
func Hide(data []byte, hidden func(paths []string) []bool) ([]byte, int, error) {
	ix, err := parseAny(data)
	if err != nil {
		return nil, 0, err
	}
	return ix.write(hidden(ix.paths))
}

// Size is the length of every index Hide makes of data, whatever it hides,
// or of data itself where Hide refuses it (served as it is). Every entry is
// written with extended flags and the extensions that record byte offsets
// are dropped whether or not anything is hidden, so the length is known
// without deciding a single path: a walker that only stats .git/index (find,
// ls -l) never makes the view decide every tracked file.
func Size(data []byte) int64 {
	ix, err := parseAny(data)
	if err != nil {
		return int64(len(data))
	}
	return int64(ix.size())
}

// parseAny parses an index of either object format.
func parseAny(data []byte) (*index, error) {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, fmt.Errorf("gitindex: not an index")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("gitindex: version %d", version)
	}
	for _, hashLen := range []int{sha1.Size, sha256.Size} {
		ix, err := parse(data, version, hashLen)
		if err == nil || errors.Is(err, ErrUnsupported) {
			return ix, err
		}
	}
	return nil, fmt.Errorf("gitindex: malformed index")
}

// index is a parsed index: where each entry's bytes are, and what of them
// a rewrite changes.
type index struct {
	body    []byte // the index without its checksum
	version uint32
	fixed   int // an entry's bytes before its flags: ctime..size, object name
	newHash func() hash.Hash
	ents    []entry
	paths   []string // each entry's path, in order
	exts    [][2]int // the extensions kept, as [start, end) of body
}

type entry struct {
	start, end int // the entry's bytes in body, with its padding
	nameStart  int // its name's (v4: its prefix length's) first byte
	flags, ext uint16
}

func parse(data []byte, version uint32, hashLen int) (*index, error) {
	ix := &index{version: version, fixed: 40 + hashLen, newHash: sha1.New}
	if hashLen == sha256.Size {
		ix.newHash = sha256.New
	}
	if !checksumOK(data, hashLen, ix.newHash) {
		return nil, errors.New("checksum")
	}
	body := data[:len(data)-hashLen]
	ix.body = body
	count := binary.BigEndian.Uint32(body[8:12])
	fixed := ix.fixed
	// The count is the file's word: the entries it can hold bound it.
	n := min(int(count), len(body)/(fixed+3))
	ix.ents, ix.paths = make([]entry, 0, n), make([]string, 0, n)
	pos := 12
	prev := ""
	for i := uint32(0); i < count; i++ {
		start := pos
		if pos+fixed+2 > len(body) {
			return nil, errors.New("short entry")
		}
		flags := binary.BigEndian.Uint16(body[pos+fixed:])
		pos += fixed + 2
		var ext uint16
		if flags&flagExtended != 0 {
			if version < 3 || pos+2 > len(body) {
				return nil, errors.New("bad extended flags")
			}
			ext = binary.BigEndian.Uint16(body[pos:])
			pos += 2
		}
		nameStart := pos
		var name string
		if version == 4 {
			strip, n := binary.Uvarint(body[pos:])
			if n <= 0 || int(strip) > len(prev) {
				return nil, errors.New("bad v4 name")
			}
			pos += n
			end := bytes.IndexByte(body[pos:], 0)
			if end < 0 {
				return nil, errors.New("unterminated name")
			}
			name = prev[:len(prev)-int(strip)] + string(body[pos:pos+end])
			pos += end + 1
		} else {
			end := bytes.IndexByte(body[pos:], 0)
			if end < 0 {
				return nil, errors.New("unterminated name")
			}
			name = string(body[pos : pos+end])
			// Entries are padded with 1-8 NULs to a multiple of 8 bytes.
			pos = start + (pos-start+end+8)&^7
			if pos > len(body) {
				return nil, errors.New("short padding")
			}
		}
		prev = name
		ix.ents = append(ix.ents, entry{start: start, end: pos, nameStart: nameStart, flags: flags, ext: ext})
		ix.paths = append(ix.paths, name)
	}
	// Extensions: kept, except those that record byte offsets of entries
	// (no longer true) and the split index (whose entries live elsewhere).
	for pos < len(body) {
		if pos+8 > len(body) {
			return nil, errors.New("short extension")
		}
		sig := string(body[pos : pos+4])
		size := int(binary.BigEndian.Uint32(body[pos+4:]))
		if pos+8+size > len(body) {
			return nil, errors.New("extension overruns")
		}
		switch sig {
		case "link":
			return nil, ErrUnsupported
		case "EOIE", "IEOT":
		default:
			ix.exts = append(ix.exts, [2]int{pos, pos + 8 + size})
		}
		pos += 8 + size
	}
	return ix, nil
}

// write makes the rewritten index, with skip-worktree on the entries hide
// says (one answer per entry, in order).
func (ix *index) write(hide []bool) ([]byte, int, error) {
	if len(hide) != len(ix.ents) {
		return nil, 0, fmt.Errorf("gitindex: %d answers for %d entries", len(hide), len(ix.ents))
	}
	body := ix.body
	out := bytes.NewBuffer(make([]byte, 0, len(body)+len(ix.ents)*10+64))
	out.Write(body[:4])
	binary.Write(out, binary.BigEndian, max(ix.version, 3))
	out.Write(body[8:12])
	set := 0
	for i, e := range ix.ents {
		ext := e.ext
		if hide[i] {
			if ext&extSkipWorktree == 0 {
				set++
			}
			ext |= extSkipWorktree
		}
		// Every entry is written with extended flags, hidden or not (a v2
		// entry so becomes a valid v3 one): see Size.
		out.Write(body[e.start : e.start+ix.fixed])
		var fl [4]byte
		binary.BigEndian.PutUint16(fl[:], e.flags|flagExtended)
		binary.BigEndian.PutUint16(fl[2:], ext)
		out.Write(fl[:])
		if ix.version == 4 {
			out.Write(body[e.nameStart:e.end])
			continue
		}
		name := ix.paths[i]
		out.WriteString(name)
		var pad [8]byte // 1 to 8 NULs
		out.Write(pad[:entryLen(ix.fixed, name)-(ix.fixed+4+len(name))])
	}
	for _, x := range ix.exts {
		out.Write(body[x[0]:x[1]])
	}
	h := ix.newHash()
	h.Write(out.Bytes())
	out.Write(h.Sum(nil))
	return out.Bytes(), set, nil
}

// size is the length write makes, whatever it hides: the layout of write,
// counted.
func (ix *index) size() int {
	n := 12
	for i, e := range ix.ents {
		if ix.version == 4 {
			n += ix.fixed + 4 + e.end - e.nameStart
			continue
		}
		n += entryLen(ix.fixed, ix.paths[i])
	}
	for _, x := range ix.exts {
		n += x[1] - x[0]
	}
	return n + ix.newHash().Size()
}

// entryLen is the length of a v2 or v3 entry with extended flags, padded.
func entryLen(fixed int, name string) int {
	return (fixed + 4 + len(name) + 8) &^ 7
}

func checksumOK(data []byte, n int, newHash func() hash.Hash) bool {
	if len(data) < 12+n {
		return false
	}
	h := newHash()
	h.Write(data[:len(data)-n])
	return bytes.Equal(h.Sum(nil), data[len(data)-n:])
}
