// Package blobs owns the content fsguard keeps of what sessions were
// handed, so a changed file can be answered with a diff against the
// version the session holds: a content-addressed (sha256, the journal's
// contentId), flate-compressed store in its own SQLite file beside the
// journal, bounded by a byte cap with least-recently-used eviction.
//
// Losing a blob is always safe (the caller sends lines instead), so the
// store is not part of the journal's hash chain and commits without an
// fsync per write; what it returns is checked against its address, so a
// damaged blob is never taken for the content it names.
package blobs

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/fsguard/fsguard/internal/store/sqlitedb"
	"io"
	"os"
	"strings"
	"time"
)

// Store is an open blob store.
type Store struct {
	db  *sql.DB
	cap int64
}

// Evicted is a blob the cap pushed out, for the caller to record.
type Evicted struct {
	ID    string // contentId
	Path  string // the file it was last kept for
	Bytes int64  // its uncompressed size
}

// Beside returns the store's file for a journal at journalPath.
func Beside(journalPath string) string {
	return strings.TrimSuffix(journalPath, ".db") + ".held.db"
}

// Open opens (creating if need be) the store at path, holding at most
// capBytes of compressed content.
func Open(path string, capBytes int64) (*Store, error) {
	db, err := sqlitedb.Open(path, sqlitedb.Normal)
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS blobs (
		id     TEXT PRIMARY KEY,
		path   TEXT NOT NULL,
		size   INTEGER NOT NULL,
		packed INTEGER NOT NULL,
		used   INTEGER NOT NULL,
		data   BLOB NOT NULL
	);
	CREATE INDEX IF NOT EXISTS blobs_by_use ON blobs(used);
	CREATE TABLE IF NOT EXISTS owner (journal_id TEXT NOT NULL);`); err != nil {
		db.Close()
		return nil, fmt.Errorf("held content store %s: %w", path, err)
	}
	return &Store{db: db, cap: capBytes}, nil
}

// Belongs ties the store to the journal with id: a store made for another
// journal (the journal beside it was deleted, emptied or replaced since)
// is an error that says so, never taken over silently. A store of no
// journal yet takes this one's id.
func (s *Store) Belongs(journalPath, id string) error {
	if id == "" {
		return nil // a journal older than ids
	}
	var have string
	err := s.db.QueryRow(`SELECT journal_id FROM owner LIMIT 1`).Scan(&have)
	switch {
	case err == sql.ErrNoRows:
		_, err = s.db.Exec(`INSERT INTO owner VALUES (?)`, id)
		return err
	case err != nil:
		return err
	case have != id:
		return &ForeignJournal{Journal: journalPath, Want: have, Have: id}
	}
	return nil
}

// ForeignJournal: the journal beside a held-content store is not the one
// the store belongs to.
type ForeignJournal struct{ Journal, Want, Have string }

func (e *ForeignJournal) Error() string {
	return fmt.Sprintf("journal %s is not the journal its held-content store belongs to (journal %s; this one is %s): it was deleted, emptied or replaced since — restore it from a copy, or move %s aside to start anew", e.Journal, e.Want, e.Have, Beside(e.Journal))
}

// OpenBeside opens the store beside the journal at journalPath (whose id is
// journalID) and checks that it belongs to that journal (see Belongs).
func OpenBeside(journalPath, journalID string, capBytes int64) (*Store, error) {
	s, err := Open(Beside(journalPath), capBytes)
	if err != nil {
		return nil, err
	}
	if err := s.Belongs(journalPath, journalID); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// CheckBeside says whether the store beside the journal at journalPath, if
// there is one, belongs to the journal with id journalID (see Belongs),
// reading only: an audit command checks, and never makes or claims a
// store.
func CheckBeside(journalPath, journalID string) error {
	path := Beside(journalPath)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) || journalID == "" {
		return nil
	}
	db, err := sqlitedb.OpenReadOnly(path, false)
	if err != nil {
		return err
	}
	defer db.Close()
	var have string
	err = db.QueryRow(`SELECT journal_id FROM owner LIMIT 1`).Scan(&have)
	if err != nil && strings.Contains(err.Error(), "unable to open") {
		// A read-only copy whose directory this user may not write.
		idb, ierr := sqlitedb.OpenReadOnly(path, true)
		if ierr != nil {
			return ierr
		}
		defer idb.Close()
		err = idb.QueryRow(`SELECT journal_id FROM owner LIMIT 1`).Scan(&have)
	}
	switch {
	case err == sql.ErrNoRows || (err != nil && strings.Contains(err.Error(), "no such table")):
		return nil // a store of no journal yet
	case err != nil:
		return fmt.Errorf("held content store %s: %w", path, err)
	case have != journalID:
		return &ForeignJournal{Journal: journalPath, Want: have, Have: journalID}
	}
	return nil
}

// Bytes is how much compressed content the store holds (against its cap).
func (s *Store) Bytes() (int64, error) {
	var total int64
	err := s.db.QueryRow(`SELECT coalesce(sum(packed), 0) FROM blobs`).Scan(&total)
	return total, err
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// MaxFile is the largest content worth keeping: a quarter of the cap, so
// one file never empties the store, and at most 2 MiB, because keeping
// costs the first read of a file its compression, which grows with the
// file (docs/BENCHMARKS.md).
func (s *Store) MaxFile() int64 { return min(s.cap/4, 2<<20) }

// now orders uses; ties between processes are harmless.
func now() int64 { return time.Now().UnixNano() }

// Put keeps data under id (its sha256, hex), marks it used, and evicts the
// least recently used blobs until the store fits its cap again. A blob
// already kept is only marked used.
func (s *Store) Put(id, path string, data []byte) ([]Evicted, error) {
	if int64(len(data)) > s.MaxFile() {
		return nil, nil
	}
	if r, err := s.db.Exec(`UPDATE blobs SET used = ?, path = ? WHERE id = ?`, now(), path, id); err != nil {
		return nil, err
	} else if n, _ := r.RowsAffected(); n > 0 {
		return nil, nil
	}
	packed, err := pack(data)
	if err != nil {
		return nil, err
	}
	tx, err := s.db.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`INSERT OR REPLACE INTO blobs (id, path, size, packed, used, data) VALUES (?, ?, ?, ?, ?, ?)`,
		id, path, len(data), len(packed), now(), packed); err != nil {
		return nil, err
	}
	var total int64
	if err := tx.QueryRow(`SELECT coalesce(sum(packed), 0) FROM blobs`).Scan(&total); err != nil {
		return nil, err
	}
	var out []Evicted
	if total > s.cap {
		rows, err := tx.Query(`SELECT id, path, size, packed FROM blobs WHERE id != ? ORDER BY used`, id)
		if err != nil {
			return nil, err
		}
		for total > s.cap && rows.Next() {
			var e Evicted
			var p int64
			if err := rows.Scan(&e.ID, &e.Path, &e.Bytes, &p); err != nil {
				rows.Close()
				return nil, err
			}
			out, total = append(out, e), total-p
		}
		rows.Close()
		for _, e := range out {
			if _, err := tx.Exec(`DELETE FROM blobs WHERE id = ?`, e.ID); err != nil {
				return nil, err
			}
		}
	}
	return out, tx.Commit()
}

// Get returns the content kept under id and marks it used, or nil when it
// is not kept (never was, was evicted, or no longer matches its address).
func (s *Store) Get(id string) ([]byte, error) {
	var packed []byte
	err := s.db.QueryRow(`SELECT data FROM blobs WHERE id = ?`, id).Scan(&packed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := unpack(packed, s.MaxFile())
	if sum := sha256.Sum256(data); err != nil || hex.EncodeToString(sum[:]) != id {
		// Damaged: drop it, so the next delivery keeps a good copy.
		s.db.Exec(`DELETE FROM blobs WHERE id = ?`, id)
		return nil, nil
	}
	s.db.Exec(`UPDATE blobs SET used = ? WHERE id = ?`, now(), id)
	return data, nil
}

func pack(data []byte) ([]byte, error) {
	var b bytes.Buffer
	w, err := flate.NewWriter(&b, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// unpack inflates at most limit+1 bytes, so damage cannot balloon.
func unpack(packed []byte, limit int64) ([]byte, error) {
	return io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(packed)), limit+1))
}
