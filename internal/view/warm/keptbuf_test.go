package warm

import (
	"bytes"
	"testing"
)

// TestKeptCopy: a copy holds the bytes whatever buffer it reuses (one
// given back may be), in a buffer of its size class; a slice of no class
// (a caller's own) is not taken in.
func TestKeptCopy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ n, class int }{{1, 0}, {4096, 0}, {4097, 1}, {8192, 1}, {65537, 5}, {MaxPush, 5}} {
		if got := keptClass(c.n); got != c.class {
			t.Errorf("keptClass(%d) = %d, want %d", c.n, got, c.class)
		}
	}
	if KeptCopy(nil) != nil {
		t.Error("an empty file's copy holds a buffer")
	}
	for _, n := range []int{1, 100, 4096, 5000, 70000, MaxPush} {
		a := bytes.Repeat([]byte{'a'}, n)
		first := KeptCopy(a)
		KeptDone(first)
		b := bytes.Repeat([]byte{'b'}, n)
		second := KeptCopy(b) // may reuse first's buffer
		if !bytes.Equal(second, b) || cap(second) != 1<<(keptClass(n)+minKeptShift) {
			t.Errorf("%d bytes: copy of len %d cap %d, or other bytes", n, len(second), cap(second))
		}
		KeptDone(second)
	}
	KeptDone(make([]byte, 10, 100)) // no class: not pooled, no panic
}
