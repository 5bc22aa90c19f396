package sniff

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/policy"
)

// TestScanHalvesIsScan: a file scanned in two halves at once has exactly
// the masks of one scan, whatever credential sits across the halves' edge
// (its key on either side, its context on the other), in UTF-8 and UTF-16.
func TestScanHalvesIsScan(t *testing.T) {
	t.Parallel()
	p, err := policy.Default(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDetector(p.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	samples := SampleCredentials(3)
	size := 4 * minChunk
	for i, s := range samples {
		for _, shift := range []int{-credBack - 1, -len(s.Value) - 1, -len(s.Value) / 2, -1, 0, 1, credBack} {
			filler := bytes.Repeat([]byte("lorem ipsum dolor "), size/18+1)[:size]
			at := size/2 + shift
			line := []byte("\nkey = " + s.Value + "\n")
			data := append(append(append([]byte{}, filler[:at]...), line...), filler[at:]...)
			for _, wide := range []bool{false, true} {
				in := data
				if wide && i%5 == 0 {
					in = []byte(utf16Text(string(data)))
				} else if wide {
					continue
				}
				r := bytes.NewReader(in)
				whole, err1 := d.Scan(r, int64(len(in)), make([]byte, minChunk))
				halves, err2 := d.ScanHalves(r, int64(len(in)), make([]byte, minChunk), make([]byte, minChunk))
				if err1 != nil || err2 != nil || !reflect.DeepEqual(whole, halves) {
					t.Fatalf("%s at the edge %+d (wide %v): Scan %v (%v), ScanHalves %v (%v)", s.Family, shift, wide, whole, err1, halves, err2)
				}
				if len(whole) == 0 {
					t.Fatalf("%s at the edge %+d (wide %v): not found", s.Family, shift, wide)
				}
			}
		}
	}
}

// utf16Text is s in UTF-16LE with its byte order mark.
func utf16Text(s string) string {
	var b bytes.Buffer
	b.WriteString("\xff\xfe")
	for _, r := range s {
		b.WriteByte(byte(r))
		b.WriteByte(byte(r >> 8))
	}
	return b.String()
}
