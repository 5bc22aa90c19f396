package roots

import (
	"encoding/binary"
	"testing"
)

// TestACLMode: the mode bits shown for an ACL never let a caller in whom
// the ACL shuts out, for each kind of caller the bits tell apart.
func TestACLMode(t *testing.T) {
	t.Parallel()
	type ent struct{ tag, perm uint16 }
	acl := func(es ...ent) []byte {
		b := binary.LittleEndian.AppendUint32(nil, 2)
		for _, e := range es {
			b = binary.LittleEndian.AppendUint16(b, e.tag)
			b = binary.LittleEndian.AppendUint16(b, e.perm)
			b = binary.LittleEndian.AppendUint32(b, 1001)
		}
		return b
	}
	for _, c := range []struct {
		name string
		acl  []byte
		want uint32
		ok   bool
	}{
		{"minimal", acl(ent{aclUserObj, 6}, ent{aclGroupObj, 4}, ent{aclOther, 4}), 0o644, true},
		{"a named user granted beyond the bits", acl(ent{aclUserObj, 6}, ent{aclUser, 4}, ent{aclGroupObj, 0}, ent{aclMask, 4}, ent{aclOther, 0}), 0o600, true},
		{"a named user shut out of what other may read", acl(ent{aclUserObj, 6}, ent{aclUser, 0}, ent{aclGroupObj, 4}, ent{aclMask, 4}, ent{aclOther, 4}), 0o600, true},
		{"a named group shut out", acl(ent{aclUserObj, 7}, ent{aclGroupObj, 5}, ent{aclGroup, 1}, ent{aclMask, 7}, ent{aclOther, 5}), 0o751, true},
		{"the mask narrows the owning group", acl(ent{aclUserObj, 7}, ent{aclGroupObj, 7}, ent{aclGroup, 7}, ent{aclMask, 5}, ent{aclOther, 7}), 0o755, true},
		{"no other entry", acl(ent{aclUserObj, 6}, ent{aclGroupObj, 4}), 0, false},
		{"an unknown tag", acl(ent{aclUserObj, 6}, ent{aclGroupObj, 4}, ent{aclOther, 4}, ent{0x40, 7}), 0, false},
		{"a bad version", []byte{1, 0, 0, 0}, 0, false},
		{"cut short", acl(ent{aclUserObj, 6}, ent{aclGroupObj, 4}, ent{aclOther, 4})[:27], 0, false},
	} {
		got, ok := aclMode(c.acl)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%s: %04o %v, want %04o %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
