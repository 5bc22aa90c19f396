// Package fileid owns how a file version is named: its Identity (device,
// inode, size, mtime, ctime: if any moves, the content may have), its
// statId, and its contentId. Every package that names a version — the
// guard, the read, the journal, the admission cache, the mount — uses these,
// so a version has one name everywhere.
package fileid

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"golang.org/x/sys/unix"
)

// Identity is what a file version is known by on the fast path.
type Identity struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtimeNs"`
	CtimeNs int64  `json:"ctimeNs"`
}

// Of extracts the identity from a stat.
func Of(st *unix.Stat_t) Identity {
	return Identity{
		Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size,
		MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(),
	}
}

// StatID names a version by where and what it is on disk: the hash of its
// real path, device, inode, size and mtime.
func StatID(real string, id Identity) string {
	return Hash(real, strconv.FormatUint(id.Dev, 10), strconv.FormatUint(id.Ino, 10), strconv.FormatInt(id.Size, 10), strconv.FormatInt(id.MtimeNs, 10))
}

// ContentID names a version by its bytes: the hex of the sha256 of the
// whole content, however it was computed (a read's scan, a write's, an
// edit's buffer).
func ContentID(sum [sha256.Size]byte) string { return hex.EncodeToString(sum[:]) }

// Hash hashes NUL-separated fields, so no two field lists collide.
func Hash(fields ...string) string {
	h := sha256.New()
	for i, s := range fields {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}
