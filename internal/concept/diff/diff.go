// Package diff owns line diffs: a shortest edit script between two
// versions of a file's lines (Myers' O(ND) algorithm, bounded so a file
// rewritten wholesale costs little to give up on), its grouping into
// hunks with context, and their unified-diff text. It works on line texts
// only: what a terminator is, and what a line is, is the window package's
// business.
package diff

import (
	"strconv"
	"strings"
)

// Kind is what an edit does to one line.
type Kind int8

const (
	Equal  Kind = iota // the line is in both versions
	Delete             // the line is only in the old version
	Insert             // the line is only in the new version
)

// Op is one step of an edit script. Old and New are 0-based line indexes
// into the old and new versions. An Insert has no old line: its Old is the
// number of old lines before it; likewise a Delete's New.
type Op struct {
	Kind     Kind
	Old, New int
}

// Lines returns a shortest edit script from a to b, or false when it needs
// more than maxEdits deleted plus inserted lines.
func Lines(a, b []string, maxEdits int) ([]Op, bool) {
	// Equal ends are the common case (one edit in a long file) and cost
	// nothing to take off first.
	pre, suf := Ends(a, b)
	ops := make([]Op, 0, pre+suf+8)
	for i := 0; i < pre; i++ {
		ops = append(ops, Op{Equal, i, i})
	}
	mid, ok := myers(intern(a[pre:len(a)-suf], b[pre:len(b)-suf]), maxEdits)
	if !ok {
		return nil, false
	}
	for _, o := range mid {
		o.Old, o.New = o.Old+pre, o.New+pre
		ops = append(ops, o)
	}
	for i := 0; i < suf; i++ {
		ops = append(ops, Op{Equal, len(a) - suf + i, len(b) - suf + i})
	}
	return ops, true
}

// Ends returns how many lines a and b share at the start, and then how
// many of the rest they share at the end.
func Ends(a, b []string) (pre, suf int) {
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	return pre, suf
}

type pair struct{ a, b []int32 }

// intern numbers distinct lines, so the search compares integers.
func intern(a, b []string) pair {
	ids := make(map[string]int32, len(a))
	conv := func(s []string) []int32 {
		out := make([]int32, len(s))
		for i, l := range s {
			id, ok := ids[l]
			if !ok {
				id = int32(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	return pair{conv(a), conv(b)}
}

// myers is the greedy forward search with the frontier of every step kept
// for the walk back; memory is O(D²) for D edits, which maxEdits bounds.
func myers(p pair, maxEdits int) ([]Op, bool) {
	a, b := p.a, p.b
	n, m := len(a), len(b)
	limit := min(maxEdits, n+m)
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
				return walkBack(trace, n, m), true
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
	}
	return nil, false
}

func walkBack(trace [][]int, n, m int) []Op {
	var rev []Op
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1] // index k+(d-1)
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		midX, midY := px+1, py // right: a deletion of a[px]
		if pk == k+1 {
			midX, midY = px, py+1 // down: an insertion of b[py]
		}
		for x > midX && y > midY {
			x, y = x-1, y-1
			rev = append(rev, Op{Equal, x, y})
		}
		if pk == k+1 {
			rev = append(rev, Op{Insert, px, py})
		} else {
			rev = append(rev, Op{Delete, px, py})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, Op{Equal, x, y})
	}
	ops := make([]Op, len(rev))
	for i, o := range rev {
		ops[len(rev)-1-i] = o
	}
	return ops
}

// Hunk is a run of changes with up to context equal lines around it.
// Starts are 1-based; an empty side's start is the line before it, as in
// diff -u.
type Hunk struct {
	OldStart, OldLen int
	NewStart, NewLen int
	Ops              []Op
}

// Hunks groups a script's changes into hunks with context lines of
// context on each side; changes closer than 2*context share a hunk.
func Hunks(ops []Op, context int) []Hunk {
	var hunks []Hunk
	for i := 0; i < len(ops); {
		if ops[i].Kind == Equal {
			i++
			continue
		}
		start := max(0, i-context)
		end := i // one past the last change taken in
		for j := i; j < len(ops); j++ {
			if ops[j].Kind != Equal {
				end = j + 1
				continue
			}
			if j-end >= 2*context {
				break
			}
		}
		stop := min(len(ops), end+context)
		hunks = append(hunks, newHunk(ops[start:stop]))
		i = stop
	}
	return hunks
}

func newHunk(ops []Op) Hunk {
	h := Hunk{Ops: ops, OldStart: -1, NewStart: -1}
	for _, o := range ops {
		if o.Kind != Insert {
			if h.OldStart < 0 {
				h.OldStart = o.Old + 1
			}
			h.OldLen++
		}
		if o.Kind != Delete {
			if h.NewStart < 0 {
				h.NewStart = o.New + 1
			}
			h.NewLen++
		}
	}
	// An empty side sits after the line before the hunk, which is the
	// number of lines before its first op.
	if h.OldStart < 0 {
		h.OldStart = ops[0].Old
	}
	if h.NewStart < 0 {
		h.NewStart = ops[0].New
	}
	return h
}

// Header is the hunk's "@@ -a,b +c,d @@" line, with ",1" left out as
// diff -u does.
func (h Hunk) Header() string {
	return "@@ -" + span(h.OldStart, h.OldLen) + " +" + span(h.NewStart, h.NewLen) + " @@"
}

func span(start, n int) string {
	if n == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(n)
}

// Write renders hunks as a unified diff body (no file headers): each
// line prefixed by ' ', '-' or '+'.
func Write(w *strings.Builder, hunks []Hunk, a, b []string) {
	for _, h := range hunks {
		w.WriteString(h.Header())
		w.WriteByte('\n')
		for _, o := range h.Ops {
			switch o.Kind {
			case Equal:
				w.WriteByte(' ')
				w.WriteString(a[o.Old])
			case Delete:
				w.WriteByte('-')
				w.WriteString(a[o.Old])
			case Insert:
				w.WriteByte('+')
				w.WriteString(b[o.New])
			}
			w.WriteByte('\n')
		}
	}
}
