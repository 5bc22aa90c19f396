package sniff

import (
	"io"
	"slices"
)

// A file whose bytes the classifier calls binary (a NUL byte, no byte
// order mark) may still be text: UTF-16 written without a byte order mark
// is ASCII with every other byte NUL. A credential in it is a credential,
// so such a file is also read as UTF-16 for the scan, at both of its two
// alignments: UTF-16 little-endian at an even offset, and big-endian (the
// same ASCII bytes one offset on, as little-endian at odd offsets). The
// masks found keep the file's bytes' lengths and fill each code unit as
// the UTF-16 file would be filled.

// FindWide returns the credentials in b, a whole file's bytes, read as
// UTF-16 without a byte order mark at both alignments.
func (d *Detector) FindWide(b []byte) []Mask {
	if len(d.rules) == 0 {
		return nil
	}
	var out []Mask
	for skip := range 2 {
		if len(b) <= skip {
			break
		}
		c := b[skip:]
		n := narrow(slices.Clone(c[:len(c)/2*2]), 2, false)
		out = d.chunk(n, 0, len(n), int64(skip), 2, false, out)
	}
	out, _ = merge(out)
	return out
}

// ScanWide is FindWide for the first size bytes of r, read in chunks of
// buf as Scan reads: it holds nothing of the file but the masks.
func (d *Detector) ScanWide(r io.ReaderAt, size int64, buf []byte) ([]Mask, error) {
	if len(d.rules) == 0 {
		return nil, nil
	}
	var out []Mask
	for skip := range int64(2) {
		if size-skip < 2 {
			break
		}
		// Whole code units only: a scan's chunks end on one.
		n := (size - skip) &^ 1
		ms, err := d.scanRange(shifted{r, skip}, n, 0, n, 2, false, buf)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			m.Off += skip
			out = append(out, m)
		}
	}
	return merge(out)
}

// shifted is r from offset by on.
type shifted struct {
	r  io.ReaderAt
	by int64
}

func (s shifted) ReadAt(b []byte, off int64) (int, error) { return s.r.ReadAt(b, off+s.by) }

// FindBinary returns the credentials in b, the whole bytes of a file the
// classifier calls binary: as Find finds them, and as FindWide does.
func (d *Detector) FindBinary(b []byte) []Mask {
	out, _ := merge(append(d.Find(b), d.FindWide(b)...))
	return out
}

// MergeMasks returns the masks of found, sorted and merged as a verdict's
// are (ErrTooManyMasks past MaxMasks).
func MergeMasks(found ...[]Mask) ([]Mask, error) {
	var out []Mask
	for _, f := range found {
		out = append(out, f...)
	}
	return merge(out)
}
