package read

import (
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

// markMasked gives each window the masks among the lines it shows, and
// the read a note naming them.
func markMasked(src *source, parts []*Result, p *windowPlan) error {
	all, err := locate(src.f, src.masks)
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

// locate is each mask as a read names it.
func locate(r io.ReaderAt, masks []sniff.Mask) ([]Masked, error) {
	at, err := sniff.Locate(r, masks)
	if err != nil {
		return nil, err
	}
	out := make([]Masked, len(masks))
	for i, m := range masks {
		out[i] = Masked{Family: m.Family, Line: at[i].Line, Column: at[i].Column, Length: int64(m.Len / max(m.Unit, 1))}
	}
	return out, nil
}
