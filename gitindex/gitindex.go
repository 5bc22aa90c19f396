// Package gitindex rewrites a git index (the .git/index file, "DIRC"
// versions 2 to 4, SHA-1 or SHA-256) so that chosen entries carry the
// skip-worktree bit. git then does not look for those files in the working
// tree: in a view that hides tracked files (denied names, keys), `git
// status` does not report them deleted, and a patch built from `git diff`
// does not delete them.
//
// The format is git's Documentation/gitformat-index.txt. Only what this
// needs is parsed; every other byte is kept, and the trailing checksum is
// recomputed.
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

// Hide returns the index with skip-worktree set on every entry whose path
// hidden reports, and how many entries it set. Its length does not depend
// on what is hidden (see Size).
func Hide(data []byte, hidden func(path string) bool) ([]byte, int, error) {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, 0, fmt.Errorf("gitindex: not an index")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return nil, 0, fmt.Errorf("gitindex: version %d", version)
	}
	for _, hashLen := range []int{sha1.Size, sha256.Size} {
		out, n, err := hide(data, version, hashLen, hidden)
		if err == nil || errors.Is(err, ErrUnsupported) {
			return out, n, err
		}
	}
	return nil, 0, fmt.Errorf("gitindex: malformed index")
}

func hide(data []byte, version uint32, hashLen int, hidden func(string) bool) ([]byte, int, error) {
	newHash := sha1.New
	if hashLen == sha256.Size {
		newHash = sha256.New
	}
	if !checksumOK(data, hashLen, newHash) {
		return nil, 0, errors.New("checksum")
	}
	body := data[:len(data)-hashLen]
	count := binary.BigEndian.Uint32(body[8:12])
	outVersion := max(version, 3)
	out := bytes.NewBuffer(make([]byte, 0, len(data)+int(count)*8))
	out.Write(body[:4])
	binary.Write(out, binary.BigEndian, outVersion)
	out.Write(body[8:12])
	pos := 12
	prev := ""
	set := 0
	fixed := 40 + hashLen // ctime..size, then the object name
	for i := uint32(0); i < count; i++ {
		start := pos
		if pos+fixed+2 > len(body) {
			return nil, 0, errors.New("short entry")
		}
		flags := binary.BigEndian.Uint16(body[pos+fixed:])
		pos += fixed + 2
		var ext uint16
		if flags&flagExtended != 0 {
			if version < 3 || pos+2 > len(body) {
				return nil, 0, errors.New("bad extended flags")
			}
			ext = binary.BigEndian.Uint16(body[pos:])
			pos += 2
		}
		var name string
		if version == 4 {
			strip, n := binary.Uvarint(body[pos:])
			if n <= 0 || int(strip) > len(prev) {
				return nil, 0, errors.New("bad v4 name")
			}
			pos += n
			end := bytes.IndexByte(body[pos:], 0)
			if end < 0 {
				return nil, 0, errors.New("unterminated name")
			}
			name = prev[:len(prev)-int(strip)] + string(body[pos:pos+end])
			pos += end + 1
		} else {
			end := bytes.IndexByte(body[pos:], 0)
			if end < 0 {
				return nil, 0, errors.New("unterminated name")
			}
			name = string(body[pos : pos+end])
			// Entries are padded with 1-8 NULs to a multiple of 8 bytes.
			pos = start + (pos-start+end+8)&^7
			if pos > len(body) {
				return nil, 0, errors.New("short padding")
			}
		}
		prev = name
		if hidden(name) {
			if ext&extSkipWorktree == 0 {
				set++
			}
			ext |= extSkipWorktree
		}
		// Every entry is written with extended flags, hidden or not (a v2
		// entry so becomes a valid v3 one): see Size.
		out.Write(body[start : start+fixed])
		var fl [4]byte
		binary.BigEndian.PutUint16(fl[:], flags|flagExtended)
		binary.BigEndian.PutUint16(fl[2:], ext)
		out.Write(fl[:])
		nameStart := start + fixed + 2
		if flags&flagExtended != 0 {
			nameStart += 2
		}
		if version == 4 {
			out.Write(body[nameStart:pos])
			continue
		}
		out.WriteString(name)
		entryLen := fixed + 4 + len(name)
		out.Write(make([]byte, (entryLen+8)&^7-entryLen))
	}
	// Extensions: kept, except those that record byte offsets of entries
	// (no longer true) and the split index (whose entries live elsewhere).
	for pos < len(body) {
		if pos+8 > len(body) {
			return nil, 0, errors.New("short extension")
		}
		sig := string(body[pos : pos+4])
		size := int(binary.BigEndian.Uint32(body[pos+4:]))
		if pos+8+size > len(body) {
			return nil, 0, errors.New("extension overruns")
		}
		switch sig {
		case "link":
			return nil, 0, ErrUnsupported
		case "EOIE", "IEOT":
		default:
			out.Write(body[pos : pos+8+size])
		}
		pos += 8 + size
	}
	h := newHash()
	h.Write(out.Bytes())
	out.Write(h.Sum(nil))
	return out.Bytes(), set, nil
}

// Size is the length of every index Hide makes of data, whatever it hides,
// or of data itself where Hide refuses it (served as it is). Every entry is
// written with extended flags and the extensions that record byte offsets
// are dropped whether or not anything is hidden, so the length is known
// without deciding a single path: a walker that only stats .git/index (find,
// ls -l) never makes the view decide every tracked file.
func Size(data []byte) int64 {
	out, _, err := Hide(data, func(string) bool { return false })
	if err != nil {
		return int64(len(data))
	}
	return int64(len(out))
}

func checksumOK(data []byte, n int, newHash func() hash.Hash) bool {
	if len(data) < 12+n {
		return false
	}
	h := newHash()
	h.Write(data[:len(data)-n])
	return bytes.Equal(h.Sum(nil), data[len(data)-n:])
}
