package journal

// Holds reports whether session was handed every line of this content of
// this file (HoldsLines over 1..totalLines).
func (j *Journal) Holds(session, realPath, contentID string, totalLines int64) (bool, error) {
	return j.HoldsLines(session, realPath, contentID, 1, totalLines, totalLines)
}

// HoldsLines reports whether session was handed every line start..end of
// this content of this file: the union of the line ranges of its read
// observations of (realPath, contentID) that had no clamped line, and of
// its writes of that content, covers start..end. It keys on what was
// delivered, never on path and hash alone: a line of another version, or
// one shown shortened, is not held.
func (j *Journal) HoldsLines(session, realPath, contentID string, start, end, totalLines int64) (bool, error) {
	if contentID == "" {
		return false, nil // a partial scan identifies no content
	}
	rows, err := j.db.Query(`SELECT body, prev_hash, hash FROM records
		WHERE session = ? AND real_path = ? AND content_id = ? AND kind = 'observation' AND origin IN ('read', 'write')
		ORDER BY seq`, session, realPath, contentID)
	if err != nil {
		return false, j.damage(err)
	}
	defer rows.Close()
	var spans [][2]int64
	for rows.Next() {
		r, err := j.scanRecord(rows)
		if err != nil {
			return false, err
		}
		if r.Origin == OriginWrite || totalLines == 0 {
			return true, nil // it wrote exactly this content, or read it empty
		}
		if r.Clamped > 0 || r.Start == 0 {
			continue
		}
		spans = append(spans, [2]int64{r.Start, r.End})
	}
	if err := rows.Err(); err != nil {
		return false, j.damage(err)
	}
	// An empty version is held only through a record of it (found above).
	return totalLines > 0 && start >= 1 && start <= end && covers(spans, start, end), nil
}

// covers reports whether the spans cover from..to.
func covers(spans [][2]int64, from, to int64) bool {
	next := from
	for changed := true; changed && next <= to; {
		changed = false
		for _, s := range spans {
			if s[0] <= next && s[1] >= next {
				next = s[1] + 1
				changed = true
			}
		}
	}
	return next > to
}

// LastObservation returns the session's latest read or write observation
// of realPath, or nil.
func (j *Journal) LastObservation(session, realPath string) (*Record, error) {
	rows, err := j.db.Query(`SELECT body, prev_hash, hash FROM records
		WHERE session = ? AND real_path = ? AND kind = 'observation' AND origin IN ('read', 'write')
		ORDER BY seq DESC LIMIT 1`, session, realPath)
	if err != nil {
		return nil, j.damage(err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, j.damage0(rows.Err())
	}
	return j.scanRecord(rows)
}
