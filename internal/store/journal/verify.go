package journal

import (
	"encoding/json"
	"fmt"
)

// Dangling returns the intents that have no outcome yet, oldest first: a
// write under way, or one whose writer was killed between the rename and
// its record (Resolve says which).
func (j *Journal) Dangling() ([]*Record, error) {
	var intents []*Record
	done := map[int64]bool{}
	// Through the writes' index (records_writes): a daemon's start asks
	// this, and reading every record made the start as slow as the
	// journal is long.
	rows, err := j.db.Query(`SELECT body, prev_hash, hash FROM records INDEXED BY records_writes WHERE ` + writesWhere + ` ORDER BY seq`)
	if err != nil {
		return nil, j.damage(err)
	}
	for rows.Next() {
		r, err := j.scanRecord(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		switch {
		case r.Kind == KindIntent:
			intents = append(intents, r)
		case r.Intent > 0:
			done[r.Intent] = true
		}
	}
	rows.Close()
	err = j.damage0(rows.Err())
	out := intents[:0]
	for _, r := range intents {
		if !done[r.Seq] {
			out = append(out, r)
		}
	}
	return out, err
}

// Request finds the intent that owner recorded under the request id, the
// most recent first, among the last searchBack records (a caller asks
// right after it lost its connection), and what resolved it: the write's
// observation, a NOT_WRITTEN outcome, or nil while none is recorded.
// A nil intent means none was recorded: since a write records its intent
// before it replaces anything, nothing was written.
func (j *Journal) Request(owner, id string) (intent, resolution *Record, err error) {
	if id == "" {
		return nil, nil, nil
	}
	rows, err := j.db.Query(`SELECT body, prev_hash, hash FROM records WHERE kind = 'intent' AND owner = ? AND seq > (SELECT max(seq) FROM records) - ?
		AND json_extract(body, '$.request') = ? ORDER BY seq DESC LIMIT 1`, owner, searchBack, id)
	if err != nil {
		return nil, nil, j.damage(err)
	}
	for rows.Next() {
		if intent, err = j.scanRecord(rows); err != nil {
			rows.Close()
			return nil, nil, err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || intent == nil {
		return nil, nil, j.damage0(err)
	}
	rows, err = j.db.Query(`SELECT body, prev_hash, hash FROM records WHERE seq > ? AND json_extract(body, '$.intent') = ? ORDER BY seq LIMIT 1`, intent.Seq, intent.Seq)
	if err != nil {
		return nil, nil, j.damage(err)
	}
	defer rows.Close()
	for rows.Next() {
		if resolution, err = j.scanRecord(rows); err != nil {
			return nil, nil, err
		}
	}
	return intent, resolution, j.damage0(rows.Err())
}

// searchBack bounds how far back Request looks for an intent.
const searchBack = 1_000_000

// Bad names the first record that breaks the chain.
type Bad struct {
	Seq int64
	Why string
}

func (b *Bad) Error() string { return fmt.Sprintf("record %d: %s", b.Seq, b.Why) }

// Verify walks the whole chain in order: every record's hash must be the
// hash of its predecessor's and its own body, sequence numbers must have no
// gap, the indexed columns must agree with the body, and the head must name
// the last record. progress, if set, is called with records done and total.
// It returns the number of records checked and the first bad one.
func (j *Journal) Verify(progress func(done, total int64)) (int64, error) {
	// The head is read first; records appended while the walk runs lie
	// beyond it and are left for the next verify.
	total, head, err := j.head(j.db)
	if err != nil {
		return 0, j.damage(err)
	}
	rows, err := j.db.Query(`SELECT seq, kind, session, owner, path, real_path, content_id, origin, code, body, prev_hash, hash FROM records WHERE seq <= ? ORDER BY seq`, total)
	if err != nil {
		return 0, j.damage(err)
	}
	defer rows.Close()
	prev, want := Genesis, int64(1)
	var n int64
	open := map[int64]string{} // intents without an outcome yet: seq -> path
	for rows.Next() {
		var seq int64
		var kind, session, owner, path, real, content, origin, code, body, prevHash, hash string
		if err := rows.Scan(&seq, &kind, &session, &owner, &path, &real, &content, &origin, &code, &body, &prevHash, &hash); err != nil {
			return n, j.damage(err)
		}
		if seq != want {
			return n, &Bad{Seq: want, Why: fmt.Sprintf("missing (the next record is %d): records were deleted", seq)}
		}
		if prevHash != prev {
			return n, &Bad{Seq: seq, Why: "its prev_hash does not match the record before it"}
		}
		if chainHash(prevHash, body) != hash {
			return n, &Bad{Seq: seq, Why: "its hash does not match its content: the record was altered"}
		}
		var r Record
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			return n, &Bad{Seq: seq, Why: "its body is not valid JSON: " + err.Error()}
		}
		if r.Seq != seq || r.Kind != kind || r.Session != session || r.Owner != owner || r.Path != path || r.RealPath != real ||
			r.ContentID != content || r.Origin != origin || r.Code != code {
			return n, &Bad{Seq: seq, Why: "its indexed columns disagree with its body: the record was altered"}
		}
		if r.Kind == KindLoss {
			return n, &Bad{Seq: seq, Why: "a gap: " + r.Detail}
		}
		switch {
		case r.Kind == KindIntent:
			open[seq] = r.RealPath
		case r.Intent > 0:
			delete(open, r.Intent)
		}
		prev, want = hash, want+1
		n++
		if progress != nil && (n%10000 == 0 || n == total) {
			progress(n, total)
		}
	}
	if err := rows.Err(); err != nil {
		return n, j.damage(err)
	}
	if total != n || (n > 0 && head != prev) {
		return n, &Bad{Seq: total, Why: fmt.Sprintf("the head names record %d but the chain ends at %d: records were deleted from the end", total, n)}
	}
	// Records acknowledged beyond the head are gone with a WAL, though
	// the chain that is left is whole.
	if err := j.lostSince(total); err != nil {
		return n, &Bad{Seq: total + 1, Why: err.Error()}
	}
	// The indexes, against the table: SQLite's own check. A damaged index
	// answers "not there" for what is there, which no chain walk sees.
	var verdict string
	if err := j.db.QueryRow(`PRAGMA integrity_check(1)`).Scan(&verdict); err != nil {
		return n, j.damage(err)
	}
	if verdict != "ok" {
		return n, &DamageError{Path: j.path, Why: "SQLite's integrity check: " + verdict}
	}
	for seq, path := range open {
		return n, &Bad{Seq: seq, Why: fmt.Sprintf("a write of %s was recorded as intended but its outcome never was (the writer was killed, or the disk filled, between the rename and the record): look at the file to see which content it has", path)}
	}
	return n, nil
}
