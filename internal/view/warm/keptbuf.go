package warm

import (
	"math/bits"
	"sync"
)

// keptBufs recycles the buffers that hold the content a listing read for
// its pushes, by size class (powers of two from 4 KiB to MaxPush). A cold
// walker's listings keep a copy of nearly every file they admit, and a
// fresh allocation for each — most of them larger than the runtime's
// small-object sizes, so each came zeroed from new pages — was a twentieth
// of the daemon's CPU in a first grep -r. A buffer goes back once its push
// is made (the store copies it into the kernel), or once it is known that
// it never will be: parked past the budget, its directory forgotten, a
// list made ahead dropped, an entry its listing never handed over. A
// walker that reads nothing (find, git status) then recycles a few MiB
// rather than allocate a copy of every small file in the tree.
var keptBufs [keptClasses]sync.Pool

const (
	minKeptShift = 12 // 4 KiB
	keptClasses  = 18 - minKeptShift
)

// keptClass is the class of a buffer of n bytes (n ≤ MaxPush).
func keptClass(n int) int {
	if n <= 1<<minKeptShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minKeptShift
}

// MaxPush is the largest file pushed whole; larger ones are read on
// demand (their first READs are large anyway).
const MaxPush = 128 << 10

// KeptCopy returns a copy of data in a recycled buffer.
func KeptCopy(data []byte) []byte {
	if len(data) == 0 {
		return nil // an empty file is never pushed
	}
	c := keptClass(len(data))
	var b []byte
	if p, ok := keptBufs[c].Get().(*[]byte); ok {
		b = *p
	} else {
		b = make([]byte, 1<<(c+minKeptShift))
	}
	return append(b[:0], data...)
}

// KeptDone gives back a buffer KeptCopy made, when nothing refers to it.
func KeptDone(b []byte) {
	if c := keptClass(cap(b)); cap(b) == 1<<(c+minKeptShift) && c < keptClasses {
		keptBufs[c].Put(&b)
	}
}
