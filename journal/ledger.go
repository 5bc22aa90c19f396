package journal

import "sort"

// Session is a session as the ledger and the write preconditions key it:
// the id the caller chose, and the identity that chose it. The same id from
// another owner holds nothing and passes no precondition.
type Session struct {
	ID    string
	Owner string
}

// Held is what a session holds of one version of a file: the lines it was
// handed in full, as sorted, disjoint, non-adjacent spans.
type Held struct {
	// Seen: some record of this version exists (an empty version is held
	// through its record alone).
	Seen  bool
	Spans [][2]int64
}

// Covers reports whether every line from..to is held.
func (h Held) Covers(from, to int64) bool {
	if from < 1 || from > to {
		return false
	}
	i := sort.Search(len(h.Spans), func(i int) bool { return h.Spans[i][1] >= from })
	return i < len(h.Spans) && h.Spans[i][0] <= from && h.Spans[i][1] >= to
}

// Window reports whether the window start..end of a version of
// totalLines lines is held: every line of it, or, for an empty version,
// its record.
func (h Held) Window(start, end, totalLines int64) bool {
	return h.Seen && (totalLines == 0 || h.Covers(start, end))
}

// Has reports whether line n is held.
func (h Held) Has(n int64) bool { return h.Covers(n, n) }

// add merges a span in.
func (h *Held) add(a, b int64) {
	if a < 1 || a > b {
		return
	}
	h.Spans = append(h.Spans, [2]int64{a, b})
	sort.Slice(h.Spans, func(i, j int) bool { return h.Spans[i][0] < h.Spans[j][0] })
	out := h.Spans[:1]
	for _, s := range h.Spans[1:] {
		last := &out[len(out)-1]
		if s[0] <= last[1]+1 {
			last[1] = max(last[1], s[1])
			continue
		}
		out = append(out, s)
	}
	h.Spans = out
}

// SpansOf builds a Held from line numbers that are true in has, 1..n.
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

// Holding returns what session holds of this content of this file: the
// union of the lines of its read observations of (realPath, contentID)
// that had no clamped line, the lines its diffs and edits left it
// holding, and every line of a version it wrote. It keys on what was
// delivered, never on path and hash alone: a line of another version, or
// one shown shortened, is not held. With anchored, only reads that showed
// each line's anchor count.
func (j *Journal) Holding(session Session, realPath, contentID string, totalLines int64, anchored bool) (Held, error) {
	var h Held
	if contentID == "" {
		return h, nil // a partial scan identifies no content
	}
	rows, err := j.db.Query(`SELECT body, prev_hash, hash FROM records
		WHERE owner = ? AND session = ? AND real_path = ? AND content_id = ? AND kind = 'observation' AND origin IN `+heldOrigins+`
		ORDER BY seq`, session.Owner, session.ID, realPath, contentID)
	if err != nil {
		return h, j.damage(err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := j.scanRecord(rows)
		if err != nil {
			return h, err
		}
		if anchored && !r.Anchors {
			continue
		}
		h.Seen = true
		switch {
		case r.Origin == OriginWrite:
			h.add(1, totalLines) // it wrote exactly this content
		case r.Held != nil:
			for _, s := range r.Held {
				h.add(s[0], min(s[1], totalLines))
			}
		case r.Clamped == 0:
			h.add(r.Start, min(r.End, totalLines))
		}
	}
	return h, j.damage0(rows.Err())
}

// heldOrigins are the observations that hand a session lines.
const heldOrigins = `('read', 'write', 'diff', 'edit')`

// Holds reports whether session was handed every line of this content of
// this file.
func (j *Journal) Holds(session Session, realPath, contentID string, totalLines int64) (bool, error) {
	return j.HoldsLines(session, realPath, contentID, 1, totalLines, totalLines)
}

// HoldsLines reports whether session was handed every line start..end of
// this content of this file (see Holding).
func (j *Journal) HoldsLines(session Session, realPath, contentID string, start, end, totalLines int64) (bool, error) {
	h, err := j.Holding(session, realPath, contentID, totalLines, false)
	return err == nil && h.Window(start, end, totalLines), err
}

// LastObservation returns the session's latest observation of realPath
// that handed it lines (read, write, diff or edit), or nil.
func (j *Journal) LastObservation(session Session, realPath string) (*Record, error) {
	rows, err := j.db.Query(`SELECT body, prev_hash, hash FROM records
		WHERE owner = ? AND session = ? AND real_path = ? AND kind = 'observation' AND origin IN `+heldOrigins+`
		ORDER BY seq DESC LIMIT 1`, session.Owner, session.ID, realPath)
	if err != nil {
		return nil, j.damage(err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, j.damage0(rows.Err())
	}
	return j.scanRecord(rows)
}
