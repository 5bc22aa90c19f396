package mount

import (
	"testing"
)

// TestInodeNumbers: distinct backing identities get distinct numbers, the
// same identity always the same one, and only identities that do not fit
// the computed layout are remembered — until the kernel forgets them.
func TestInodeNumbers(t *testing.T) {
	t.Parallel()
	v := &view{devs: map[uint64]uint64{}, odd: map[idKey]uint64{}}
	const dir, reg = 0o040000, 0o100000
	keys := []idKey{
		{dev: 1, ino: 2, typ: reg}, {dev: 1, ino: 2, typ: dir}, {dev: 2, ino: 2, typ: reg},
		{dev: 1, ino: 3, typ: reg}, {dev: 1, ino: 1<<inoBits - 1, typ: reg},
		{dev: 1, ino: 1 << inoBits, typ: reg}, {dev: 3, ino: 1 << 62, typ: dir},
	}
	seen := map[uint64]idKey{}
	for _, k := range keys {
		n := v.ino(k)
		if n <= 1 {
			t.Errorf("%+v: number %d collides with the mount's root", k, n)
		}
		if other, ok := seen[n]; ok {
			t.Errorf("%+v and %+v share number %#x", k, other, n)
		}
		seen[n] = k
		if again := v.ino(k); again != n {
			t.Errorf("%+v: %#x then %#x", k, n, again)
		}
	}
	if len(v.odd) != 2 {
		t.Fatalf("%d identities remembered, want the 2 that do not fit", len(v.odd))
	}
	for n, k := range seen {
		v.forget(k, n)
	}
	if len(v.odd) != 0 {
		t.Fatalf("%d identities still remembered after the kernel forgot them", len(v.odd))
	}
}
