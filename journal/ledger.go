package journal

// Holds reports whether session was handed every line of this content of
// this file: the union of the line ranges of its read observations of
// (realPath, contentID) that had no clamped line, and of its writes of that
// content, covers lines 1..totalLines. It keys on what was delivered, never
// on path and hash alone.
func (j *Journal) Holds(session, realPath, contentID string, totalLines int64) (bool, error) {
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
	return totalLines > 0 && covers(spans, totalLines), nil
}

// covers reports whether the spans cover 1..total.
func covers(spans [][2]int64, total int64) bool {
	next := int64(1)
	for changed := true; changed && next <= total; {
		changed = false
		for _, s := range spans {
			if s[0] <= next && s[1] >= next {
				next = s[1] + 1
				changed = true
			}
		}
	}
	return next > total
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
