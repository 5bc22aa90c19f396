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

// Place is where a mask starts as the file's lines are shown: a 1-based
// line, and a 1-based column in characters.
type Place struct{ Line, Column int64 }

// Locate finds where each mask starts in lines and columns, reading r (the
// file's bytes; a mask's Unit and byte order say its encoding) up to the
// last mask. Lines end as the scanner ends them: "\n", "\r\n", a bare
// "\r"; columns count characters (UTF-8 sequences, or code units), and a
// byte order mark at the start is not shown, so not counted.
func Locate(r io.ReaderAt, masks []Mask) ([]Place, error) {
	if len(masks) == 0 {
		return nil, nil
	}
	unit := int64(max(masks[0].Unit, 1))
	be := masks[0].BigEndian
	out := make([]Place, 0, len(masks))
	line, col := int64(1), int64(0)
	prevCR := false
	buf := make([]byte, 64<<10-(64<<10)%unit)
	var off int64
	next := 0
	last := masks[len(masks)-1].Off
	for off <= last && next < len(masks) {
		n, err := r.ReadAt(buf, off)
		n -= n % int(unit)
		if n == 0 {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		for i := 0; i < n; i += int(unit) {
			at := off + int64(i)
			for next < len(masks) && masks[next].Off == at {
				out = append(out, Place{Line: line, Column: col + 1})
				next++
			}
			var c uint32
			for k := int64(0); k < unit; k++ {
				b := uint32(buf[i+int(k)])
				if be {
					c = c<<8 | b
				} else {
					c |= b << (8 * k)
				}
			}
			switch {
			case at == 0 && (unit == 1 && n >= 3 && buf[0] == 0xEF && buf[1] == 0xBB && buf[2] == 0xBF || unit > 1 && c == 0xFEFF):
				// A byte order mark: not shown. (UTF-8's is three bytes:
				// the next two are continuation bytes, not counted.)
			case c == '\n':
				if !prevCR {
					line++
				}
				col = 0
			case c == '\r':
				line++
				col = 0
			case unit == 1 && c&0xC0 == 0x80:
				// a UTF-8 continuation byte: part of the character counted
			case unit == 2 && c >= 0xDC00 && c <= 0xDFFF:
				// a low surrogate: part of the pair counted
			default:
				col++
			}
			prevCR = c == '\r'
		}
		off += int64(n)
	}
	return out, nil
}
