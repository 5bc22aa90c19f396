package admit

import (
	"bytes"
	"errors"
	"testing"
)

// TestRecorderSeesOneVersion: a decision's scans read the file more than
// once (two scans, overlapping chunks); a block read again with other
// bytes (a store through a shared mapping meanwhile) fails the scan as
// changed while checked, and a version whose every block was read keeps
// the hashes of the bytes read.
func TestRecorderSeesOneVersion(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16+7)
	r := bytes.NewReader(data)
	rec := newRecorder(r, int64(len(data)))
	buf := make([]byte, 100<<10)
	if _, err := rec.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	if rec.sums() != nil {
		t.Fatalf("hashes kept of a version not read whole")
	}
	if _, err := rec.ReadAt(make([]byte, len(data)-90<<10), 90<<10); err != nil {
		t.Fatal(err)
	}
	s := rec.sums()
	if s == nil || !s.matches(data[64<<10:192<<10], 64<<10, data[:4]) {
		t.Fatalf("the hashes kept are not of the bytes read")
	}
	changed := bytes.Clone(data)
	changed[70<<10] ^= 1
	rec = newRecorder(bytes.NewReader(changed), int64(len(data)))
	rec.ReadAt(buf, 0)
	copy(changed, data) // the block read in part before is other bytes now
	if _, err := rec.ReadAt(buf, 64<<10); !errors.Is(err, errChangedScanning) {
		t.Errorf("a block read again with other bytes: %v", err)
	}
}
