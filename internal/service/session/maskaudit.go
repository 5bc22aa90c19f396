package session

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/fsguard/fsguard/internal/store/journal"
)

// maxMaskDetail bounds the spans one mask record lists one by one.
const maxMaskDetail = 100

// MaskAudit is the admission decider's OnMasks for a journal: one record
// per version found to hold credentials (KindMask), each span by family,
// place, length and a keyed hash of its value; count, when set, is told
// of every span by family. The value itself is never recorded.
func MaskAudit(j *journal.Journal, count func(family string)) func(f *roots.File, masks []sniff.Mask) {
	return func(f *roots.File, masks []sniff.Mask) {
		key, kerr := j.MaskKey()
		at, _ := sniff.Locate(f, masks)
		var b strings.Builder
		for i, m := range masks {
			if count != nil {
				count(m.Family)
			}
			if i == maxMaskDetail {
				fmt.Fprintf(&b, "; and %d more", len(masks)-i)
				continue
			}
			if i > maxMaskDetail {
				continue
			}
			if i > 0 {
				b.WriteString("; ")
			}
			line, col := int64(0), int64(0)
			if i < len(at) {
				line, col = at[i].Line, at[i].Column
			}
			fmt.Fprintf(&b, "%s %d:%d len=%d value=%s", m.Family, line, col, m.Len, valueHash(f, m, key, kerr))
		}
		id := f.Identity()
		j.Append(&journal.Record{Kind: journal.KindMask, Code: "MASKED", Path: f.Shown, RealPath: f.Real,
			StatID: fileid.StatID(f.Real, id), Identity: &id, Detail: b.String(), Pid: uint32(os.Getpid()), Uid: uint32(os.Getuid())})
	}
}

// valueHash is the first 16 hex digits of HMAC-SHA256(key, value): the same
// secret in two files hashes alike, and no value can be read back from it.
func valueHash(f *roots.File, m sniff.Mask, key []byte, kerr error) string {
	if kerr != nil {
		return "unkeyed"
	}
	val := make([]byte, m.Len)
	if n, _ := f.ReadAt(val, m.Off); n != m.Len {
		return "unread"
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(val)
	return hex.EncodeToString(mac.Sum(nil)[:8])
}
