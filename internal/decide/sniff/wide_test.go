package sniff

import (
	"bytes"
	"strings"
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

// TestEightBitAfterBOM: a file that starts with a UTF-16 or UTF-32 byte
// order mark and goes on in 8-bit text is read both ways: its token is
// masked by Find, Scan, ScanHalves and a window's check, byte for byte.
func TestEightBitAfterBOM(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	var tok Sample
	for _, s := range SampleCredentials(9) {
		if s.Family == "github-pat" {
			tok = s
		}
	}
	for _, bom := range []string{"\xff\xfe", "\xfe\xff", "\xff\xfe\x00\x00"} {
		text := bom + "TOKEN=" + tok.Value + "\nnext line\n"
		want := strings.Index(text, tok.Secret)
		check := func(how string, ms []Mask) {
			if !Masked(ms, int64(want), 1) || !Masked(ms, int64(want+len(tok.Secret)-1), 1) {
				t.Errorf("%q then 8-bit text, %s: %+v", bom, how, ms)
			}
		}
		b := []byte(text)
		check("Find", d.Find(b))
		ms, err := d.Scan(bytes.NewReader(b), int64(len(b)), nil)
		if err != nil {
			t.Fatal(err)
		}
		check("Scan", ms)
		ms, err = d.ScanHalves(bytes.NewReader(b), int64(len(b)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		check("ScanHalves", ms)
		unit, be := Units(b)
		check("FindInWindow", d.FindInWindow(b, 0, true, unit, be))
	}
}
