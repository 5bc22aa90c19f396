package admit

import (
	"bytes"
	"errors"
	"strings"
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

// countingReader counts the bytes read through it.
type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += n
	return n, err
}

// TestLeadUnchanged: a window whose bytes before its range are a key's
// body bytes has the blocks before it compared too, and a header stored
// there (the window's own blocks unchanged) is found; a window of text
// reads nothing more.
func TestLeadUnchanged(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		fill string
		look bool
	}{
		{"base64", "TUlJRXZRSUJBREFOQmdrcWhraUc5dzBCQVFFRkFBU0NCS2N3Z2dTakFnRUFBb0lCQVFDN\n", true},
		{"text", "an ordinary line of text; nothing more.\n", false},
		{"words", "letters and spaces only\n", false},
	} {
		data := []byte(strings.Repeat(c.fill, 256<<10/len(c.fill)+1))[:256<<10]
		rec := newRecorder(bytes.NewReader(data), int64(len(data)))
		if _, err := rec.ReadAt(make([]byte, len(data)), 0); err != nil {
			t.Fatal(err)
		}
		s := rec.sums()
		w := Window{Bytes: data[128<<10 : 256<<10], Base: 128 << 10, AtEOF: true, Head: data[:4], From: 140 << 10, To: 144 << 10}
		cr := &countingReader{r: bytes.NewReader(data)}
		if !s.leadUnchanged(cr, w) || (cr.n > 0) != c.look {
			t.Errorf("%s, unchanged: read %d bytes before the window", c.name, cr.n)
		}
		changed := bytes.Clone(data)
		copy(changed[10<<10:], "-----BEGIN RSA PRIVATE KEY-----\n")
		if got := s.leadUnchanged(bytes.NewReader(changed), w); got == c.look {
			t.Errorf("%s, a header stored two blocks before the window: unchanged %v", c.name, got)
		}
	}
}
