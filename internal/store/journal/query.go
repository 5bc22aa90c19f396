package journal

import (
	"database/sql"
	"encoding/json"
	"strings"
	"time"
)

// Filter selects records. Zero fields select everything.
type Filter struct {
	Session string
	// PathMatch, when set, keeps only records whose path (as named) it
	// accepts (the CLI's --path, with the policy's glob syntax).
	PathMatch func(path string) bool
	Since     time.Time
	Until     time.Time
	Kind      string
	// Process keeps only records of processes of this name (access and
	// denial records name the process).
	Process  string
	AfterSeq int64
	Limit    int
}

// Query returns the records matching f in sequence order.
func (j *Journal) Query(f Filter) ([]*Record, error) {
	var out []*Record
	err := j.Each(f, func(r *Record) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// Each calls fn with each record matching f, in sequence order, one at a
// time: a query or export of a million records holds one in memory, not a
// million. An error from fn stops the walk and is returned.
func (j *Journal) Each(f Filter, fn func(*Record) error) error {
	var where []string
	var args []any
	if f.Session != "" {
		where, args = append(where, "session = ?"), append(args, f.Session)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "time_ns >= ?"), append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		where, args = append(where, "time_ns < ?"), append(args, f.Until.UnixNano())
	}
	if f.Kind != "" {
		where, args = append(where, "kind = ?"), append(args, f.Kind)
	}
	if f.Process != "" {
		where, args = append(where, "json_extract(body, '$.process') = ?"), append(args, f.Process)
	}
	if f.AfterSeq > 0 {
		where, args = append(where, "seq > ?"), append(args, f.AfterSeq)
	}
	q := "SELECT body, prev_hash, hash FROM records"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY seq"
	rows, err := j.db.Query(q, args...)
	if err != nil {
		return j.damage(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		r, err := j.scanRecord(rows)
		if err != nil {
			return err
		}
		if f.PathMatch != nil && !f.PathMatch(r.Path) {
			continue
		}
		if err := fn(r); err != nil {
			return err
		}
		if n++; f.Limit > 0 && n >= f.Limit {
			break
		}
	}
	return j.damage0(rows.Err())
}

// scanRecord decodes one record and checks it against its own hash, so a
// record altered in place is reported the moment anything reads it (a
// check, the ledger, a query), not only by a full verify.
// lead, if given, receive the columns selected before body, prev_hash
// and hash.
func (j *Journal) scanRecord(rows *sql.Rows, lead ...any) (*Record, error) {
	var body, prev, hash string
	if err := rows.Scan(append(lead, &body, &prev, &hash)...); err != nil {
		return nil, j.damage(err)
	}
	if chainHash(prev, body) != hash {
		return nil, &DamageError{Path: j.path, Why: "a record does not match its hash: it was altered"}
	}
	r := &Record{}
	if err := json.Unmarshal([]byte(body), r); err != nil {
		return nil, &DamageError{Path: j.path, Why: "a record is not valid JSON: " + err.Error()}
	}
	r.PrevHash, r.Hash, r.body, r.journal = prev, hash, body, j.streamID()
	return r, nil
}

// Stats summarises the journal.
type Stats struct {
	Records        int64            `json:"records"`
	Reads          int64            `json:"reads"`
	Writes         int64            `json:"writes"`
	LedgerNotices  int64            `json:"ledgerNotices"`
	Diffs          int64            `json:"diffs"`
	Edits          int64            `json:"edits"`
	Evictions      int64            `json:"evictions"`
	Denials        int64            `json:"denials"` // denials, not records (a record's count)
	DenialsByCode  map[string]int64 `json:"denialsByCode"`
	BytesDelivered int64            `json:"bytesDelivered"`
	BytesSaved     int64            `json:"bytesSaved"`
	Sessions       int64            `json:"sessions"`
	// Accesses summarises the access records per process name ("" for
	// processes that exited before they could be named).
	Accesses map[string]*ProcessAccess `json:"accesses"`
	// AccessLost counts the records saying opens were lost.
	AccessLost int64 `json:"accessLost"`
}

// ProcessAccess is what the processes of one name opened through the mount.
type ProcessAccess struct {
	Records  int64 `json:"records"`
	Opens    int64 `json:"opens"`
	Files    int64 `json:"files"`    // distinct paths
	Versions int64 `json:"versions"` // distinct file versions (statIds)
	Pids     int64 `json:"pids"`
}

// Stats computes the summary.
func (j *Journal) Stats() (*Stats, error) {
	s := &Stats{DenialsByCode: map[string]int64{}, Accesses: map[string]*ProcessAccess{}}
	// A denial record may stand for many denials (Count); the others are
	// one each.
	rows, err := j.db.Query(`SELECT kind, origin, code, count(*),
		coalesce(sum(json_extract(body, '$.delivered')), 0), coalesce(sum(json_extract(body, '$.saved')), 0),
		sum(CASE WHEN kind = 'denial' THEN coalesce(json_extract(body, '$.count'), 1) ELSE 1 END)
		FROM records GROUP BY kind, origin, code`)
	if err != nil {
		return nil, j.damage(err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind, origin, code string
		var n, delivered, saved, events int64
		if err := rows.Scan(&kind, &origin, &code, &n, &delivered, &saved, &events); err != nil {
			return nil, j.damage(err)
		}
		s.Records += n
		s.BytesDelivered += delivered
		s.BytesSaved += saved
		switch {
		case kind == KindDenial:
			s.Denials += events
			s.DenialsByCode[code] += events
		case origin == OriginRead:
			s.Reads += n
		case origin == OriginWrite:
			s.Writes += n
		case origin == OriginLedger:
			s.LedgerNotices += n
		case origin == OriginDiff:
			s.Diffs += n
		case origin == OriginEdit:
			s.Edits += n
		case kind == KindEviction:
			s.Evictions += n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, j.damage(err)
	}
	if err := j.accessStats(s); err != nil {
		return nil, err
	}
	err = j.db.QueryRow(`SELECT count(DISTINCT session) FROM records`).Scan(&s.Sessions)
	return s, j.damage0(err)
}

// accessStats fills in the per-process summary of access records.
func (j *Journal) accessStats(s *Stats) error {
	rows, err := j.db.Query(`SELECT coalesce(json_extract(body, '$.process'), ''), count(*),
		coalesce(sum(json_extract(body, '$.opens')), 0), count(DISTINCT path),
		count(DISTINCT json_extract(body, '$.statId')), count(DISTINCT json_extract(body, '$.pid'))
		FROM records WHERE kind = 'access' AND code = '' GROUP BY 1`)
	if err != nil {
		return j.damage(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		p := &ProcessAccess{}
		if err := rows.Scan(&name, &p.Records, &p.Opens, &p.Files, &p.Versions, &p.Pids); err != nil {
			return j.damage(err)
		}
		s.Accesses[name] = p
	}
	if err := rows.Err(); err != nil {
		return j.damage(err)
	}
	return j.damage0(j.db.QueryRow(`SELECT count(*) FROM records WHERE kind = 'access' AND code != ''`).Scan(&s.AccessLost))
}

// LastSeq returns the sequence number of the last record.
func (j *Journal) LastSeq() (int64, error) {
	seq, _, err := j.head(j.db)
	return seq, j.damage0(err)
}
