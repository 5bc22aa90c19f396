package read

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// Masked is one credential masked in what a read showed: its family, where
// it starts (1-based line, and column in characters as the line is shown)
// and its length in characters. The value itself is never part of it.
type Masked struct {
	Family string `json:"family"`
	Line   int64  `json:"line"`
	Column int64  `json:"column"`
	Length int64  `json:"length"`
}

// maxMaskNotes bounds the masked spans a note names one by one.
const maxMaskNotes = 20

// places finds where each mask starts in lines and columns, reading r (the
// file's bytes; a mask's Unit and byte order say its encoding) up to the
// last mask. Lines end as the scanner ends them: "\n", "\r\n", a bare
// "\r"; columns count characters (UTF-8 sequences, or code units), and a
// byte order mark at the start is not shown, so not counted.
func places(r io.ReaderAt, masks []sniff.Mask) ([]Masked, error) {
	if len(masks) == 0 {
		return nil, nil
	}
	unit := int64(max(masks[0].Unit, 1))
	be := masks[0].BigEndian
	out := make([]Masked, 0, len(masks))
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
				m := masks[next]
				out = append(out, Masked{Family: m.Family, Line: line, Column: col + 1, Length: int64(m.Len) / unit})
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

// markMasked gives each window the masks among the lines it shows, and
// the read a note naming them.
func markMasked(src *source, parts []*Result, p *windowPlan) error {
	all, err := places(src.f, src.masks)
	if err != nil {
		return err
	}
	for _, part := range parts {
		for _, m := range all {
			if m.Line >= part.Range.Start && m.Line <= part.Range.End {
				part.Masked = append(part.Masked, m)
			}
		}
	}
	p.notes = append(p.notes, maskNotes(collectMasked(parts))...)
	return nil
}

// collectMasked is every window's masks, in file order.
func collectMasked(parts []*Result) []Masked {
	var out []Masked
	for _, p := range parts {
		out = append(out, p.Masked...)
	}
	return out
}

// maskNotes says what was masked, naming at most maxMaskNotes spans.
func maskNotes(ms []Masked) []string {
	if len(ms) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d credential%s masked in place (same length, public prefix kept): ", len(ms), plural(int64(len(ms)), "", "s"))
	for i, m := range ms {
		if i == maxMaskNotes {
			fmt.Fprintf(&b, "; and %d more", len(ms)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s at line %d, column %d", m.Family, m.Line, m.Column)
	}
	b.WriteString(". A masked value written back unchanged on its line is restored; never retype one")
	return []string{b.String()}
}

// notebookMasked is a notebook's masks, placed in its JSON (the file's
// lines, not its cells).
func notebookMasked(data []byte, masks []sniff.Mask) []Masked {
	ms, _ := places(bytes.NewReader(data), masks)
	return ms
}
