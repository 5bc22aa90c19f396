package sniff

import (
	"bytes"
	"testing"
	"time"
)

// TestScanEndsOnOddUTF16: a file announcing UTF-16 whose size is not a
// whole number of code units is scanned to its end, by either scan form,
// in bounded time (a trailing half unit holds no credential).
func TestScanEndsOnOddUTF16(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	for _, size := range []int{300<<10 + 1, 1<<20 + 4097} {
		b := bytes.Repeat([]byte("a\x00"), size/2+1)[:size]
		copy(b, "\xff\xfe")
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.Scan(bytes.NewReader(b), int64(size), make([]byte, 1<<20))
			d.ScanHalves(bytes.NewReader(b), int64(size), make([]byte, 1<<20), make([]byte, 1<<20))
		}()
		select {
		case <-done:
		case <-time.After(60 * time.Second): // a hang guard: the scans take milliseconds
			t.Fatalf("the scan of a UTF-16 file of odd size %d does not end", size)
		}
	}
}
