// Package held owns the value that says which lines of one version of a
// file a session holds: the lines it was handed in full, as spans. The
// journal computes it from its records; edit planning reads it; neither
// needs the other to speak of it.
package held

import "sort"

// Lines is what a session holds of one version of a file: the lines it was
// handed in full, as sorted, disjoint, non-adjacent spans.
type Lines struct {
	// Seen: some record of this version exists (an empty version is held
	// through its record alone).
	Seen  bool
	Spans [][2]int64
}

// Covers reports whether every line from..to is held.
func (h Lines) Covers(from, to int64) bool {
	if from < 1 || from > to {
		return false
	}
	i := sort.Search(len(h.Spans), func(i int) bool { return h.Spans[i][1] >= from })
	return i < len(h.Spans) && h.Spans[i][0] <= from && h.Spans[i][1] >= to
}

// Window reports whether the window start..end of a version of
// totalLines lines is held: every line of it, or, for an empty version,
// its record.
func (h Lines) Window(start, end, totalLines int64) bool {
	return h.Seen && (totalLines == 0 || h.Covers(start, end))
}

// Has reports whether line n is held.
func (h Lines) Has(n int64) bool { return h.Covers(n, n) }

// Add merges the span a..b in, in place: spans stay sorted, disjoint and
// non-adjacent, and an add costs a search and a splice, not a sort.
func (h *Lines) Add(a, b int64) {
	if a < 1 || a > b {
		return
	}
	// The first span that a..b touches or follows: its end reaches a-1.
	i := sort.Search(len(h.Spans), func(i int) bool { return h.Spans[i][1] >= a-1 })
	k := i
	for k < len(h.Spans) && h.Spans[k][0] <= b+1 {
		a, b = min(a, h.Spans[k][0]), max(b, h.Spans[k][1])
		k++
	}
	h.Spans = append(h.Spans[:i], append([][2]int64{{a, b}}, h.Spans[k:]...)...)
}

// SpansOf builds the spans of the line numbers that are true in has, 1..n.
func SpansOf(n int64, has func(int64) bool) [][2]int64 {
	var out [][2]int64
	for i := int64(1); i <= n; i++ {
		if !has(i) {
			continue
		}
		if k := len(out); k > 0 && out[k-1][1] == i-1 {
			out[k-1][1] = i
		} else {
			out = append(out, [2]int64{i, i})
		}
	}
	return out
}
