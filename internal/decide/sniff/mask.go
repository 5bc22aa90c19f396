package sniff

import "io"

// A Mask is one credential found in a file's bytes: [Off, Off+Len) in the
// file's own encoding. Served, those bytes are replaced by the family's
// public prefix (the first Keep bytes, kept) and a fill of the same byte
// length, so every size, offset, line and column stays true for every tool.
type Mask struct {
	Family string // the rule's name, e.g. "github-pat"
	Off    int64  // the first byte of the credential in the file
	Len    int    // its length in bytes
	Keep   int    // leading bytes shown as they are (the family's public prefix), a multiple of Unit
	// Unit is the width of the file's code units (1 for UTF-8, 2 for
	// UTF-16, 4 for UTF-32) and BigEndian their byte order: the fill is one
	// '*' per code unit, so the masked file decodes as the original does.
	Unit      int
	BigEndian bool
}

// Fill is the character a mask is filled with, one per code unit.
const Fill = '*'

// ApplyMasks overwrites, in b (the file's bytes from offset off), every part
// of masks that b covers. masks are sorted by Off and do not overlap.
func ApplyMasks(masks []Mask, b []byte, off int64) {
	end := off + int64(len(b))
	for _, m := range masks {
		if m.Off >= end {
			break
		}
		if m.Off+int64(m.Len) <= off {
			continue
		}
		m.fill(b, off)
	}
}

// fill writes m's fill over the part of it that b (from file offset off)
// holds, code unit by code unit from the mask's start, so a buffer that
// begins or ends inside a unit is filled as the whole file would be.
func (m Mask) fill(b []byte, off int64) {
	unit := max(m.Unit, 1)
	for i := m.Keep; i < m.Len; i++ {
		p := m.Off + int64(i) - off
		if p < 0 {
			continue
		}
		if p >= int64(len(b)) {
			return
		}
		// The byte's place in its code unit, from the unit's start.
		j := (i - m.Keep) % unit
		low := j == 0
		if m.BigEndian {
			low = j == unit-1
		}
		if low {
			b[p] = Fill
		} else {
			b[p] = 0
		}
	}
}

// Masked reports whether any byte of [off, off+n) lies inside a mask.
func Masked(masks []Mask, off, n int64) bool {
	for _, m := range masks {
		if m.Off >= off+n {
			return false
		}
		if m.Off+int64(m.Len) > off {
			return true
		}
	}
	return false
}

// MaskedReaderAt reads R with Masks applied: what every door serves of a
// version with masks.
type MaskedReaderAt struct {
	R     io.ReaderAt
	Masks []Mask
}

// ReadAt reads from R and masks what it read.
func (m MaskedReaderAt) ReadAt(b []byte, off int64) (int, error) {
	n, err := m.R.ReadAt(b, off)
	ApplyMasks(m.Masks, b[:n], off)
	return n, err
}
