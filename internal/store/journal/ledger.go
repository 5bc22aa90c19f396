package journal

import (
	"fmt"

	"github.com/fsguard/fsguard/internal/concept/held"
)

// Session is a session as the ledger and the write preconditions key it:
// the id the caller chose, and the identity that chose it. The same id from
// another owner holds nothing and passes no precondition.
type Session struct {
	ID    string
	Owner string
	// Since: only records after this sequence number count — what this
	// session was shown since a client connected or forgot (an MCP
	// connection bound to a session starts holding nothing). It only ever
	// asks for more: a read sends lines, a write needs a re-read.
	Since int64
}

// Held is what a session holds of one version of a file (see held.Lines).
type Held = held.Lines

// SpansOf builds the spans of the line numbers that are true in has, 1..n.
func SpansOf(n int64, has func(int64) bool) [][2]int64 { return held.SpansOf(n, has) }

// Holding returns what session holds of this content of this file: the
// union of the lines of its read observations of (realPath, contentID)
// that had no clamped line, the lines its diffs and edits left it
// holding, and every line of a version it wrote. It keys on what was
// delivered, never on path and hash alone: a line of another version, or
// one shown shortened, is not held. With anchored, only reads that showed
// each line's anchor count.
func (j *Journal) Holding(session Session, realPath, contentID string, totalLines int64, anchored bool) (Held, error) {
	if contentID == "" {
		return Held{}, nil // a partial scan identifies no content
	}
	// What was already folded in is remembered with the last sequence
	// number it covers: records are append-only, so a read costs the
	// records added since, not the session's whole history.
	k := heldKey{session, realPath, contentID, totalLines, anchored}
	j.heldMu.Lock()
	e := j.held[k]
	var h Held
	after := session.Since
	if e != nil {
		h = Held{Seen: e.h.Seen, Spans: append([][2]int64(nil), e.h.Spans...)}
		after = e.seq
	}
	j.heldMu.Unlock()
	rows, err := j.db.Query(`SELECT seq, body, prev_hash, hash FROM records
		WHERE owner = ? AND session = ? AND real_path = ? AND seq > ? AND content_id = ? AND kind = 'observation' AND origin IN `+heldOrigins+`
		ORDER BY seq`, session.Owner, session.ID, realPath, after, contentID)
	if err != nil {
		return h, j.damage(err)
	}
	defer rows.Close()
	last := after
	for rows.Next() {
		var seq int64
		r, err := j.scanRecord(rows, &seq)
		if err != nil {
			return h, err
		}
		last = seq
		if (anchored && !r.Anchors) || r.Media {
			continue
		}
		h.Seen = true
		switch {
		case r.Origin == OriginWrite:
			h.Add(1, totalLines) // it wrote exactly this content
		case r.Held != nil:
			for _, s := range r.Held {
				h.Add(s[0], min(s[1], totalLines))
			}
		case r.Clamped == 0:
			h.Add(r.Start, min(r.End, totalLines))
		}
	}
	if err := rows.Err(); err != nil {
		return h, j.damage(err)
	}
	j.heldMu.Lock()
	if j.held == nil || len(j.held) >= maxHeldCache {
		j.held = map[heldKey]*heldEntry{}
	}
	j.held[k] = &heldEntry{h: Held{Seen: h.Seen, Spans: append([][2]int64(nil), h.Spans...)}, seq: last}
	j.heldMu.Unlock()
	return h, nil
}

// heldKey names one Holding question; heldEntry is its answer as of seq.
type heldKey struct {
	session    Session
	realPath   string
	contentID  string
	totalLines int64
	anchored   bool
}

type heldEntry struct {
	h   Held
	seq int64
}

// maxHeldCache bounds the remembered answers; past it they are dropped
// whole and rebuilt from the records on demand.
const maxHeldCache = 4096

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
	r, err := j.lastObservation(session, realPath, "")
	if err != nil || r != nil {
		return r, err
	}
	// "Never observed" refuses a write, so it is not taken from the index
	// alone: a damaged index would make a read vanish. The table is asked
	// again without it; a record found only there is damage, said so.
	r, err = j.lastObservation(session, realPath, "NOT INDEXED")
	if err != nil {
		return nil, err
	}
	if r != nil {
		return nil, &DamageError{Path: j.path, Why: "an index lost a record the table holds (seq " + fmt.Sprint(r.Seq) + "); run 'fsguard journal verify'"}
	}
	return nil, nil
}

func (j *Journal) lastObservation(session Session, realPath, hint string) (*Record, error) {
	rows, err := j.db.Query(`SELECT body, prev_hash, hash FROM records `+hint+`
		WHERE owner = ? AND session = ? AND real_path = ? AND seq > ? AND kind = 'observation' AND origin IN `+heldOrigins+`
		ORDER BY seq DESC LIMIT 1`, session.Owner, session.ID, realPath, session.Since)
	if err != nil {
		return nil, j.damage(err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, j.damage0(rows.Err())
	}
	return j.scanRecord(rows)
}

// LastListing returns the session's latest listing of the directory
// realPath that began at entry start (a page of it), or nil.
func (j *Journal) LastListing(session Session, realPath string, start int64) (*Record, error) {
	rows, err := j.db.Query(`SELECT body, prev_hash, hash FROM records
		WHERE owner = ? AND session = ? AND real_path = ? AND seq > ? AND kind = 'listing'
		ORDER BY seq DESC LIMIT 64`, session.Owner, session.ID, realPath, session.Since)
	if err != nil {
		return nil, j.damage(err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := j.scanRecord(rows)
		if err != nil {
			return nil, err
		}
		if r.Start == start {
			return r, nil
		}
	}
	return nil, j.damage0(rows.Err())
}
