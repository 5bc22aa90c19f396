package journal

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/store/sqlitedb"
)

// OpenReadOnly opens the existing journal at path for reading, as the
// audit commands do (query, tail, stats, verify, export): it never makes a
// journal, a directory or an id file, so a missing journal is reported
// (NO_JOURNAL), never taken for a new, empty one; and a read-only copy (a
// 0444 file in a 0555 directory, a read-only mount, chattr +i) can be
// read and verified. SQLite reads it in its read-only mode where it can;
// where that needs a file it may not make (the WAL's shared memory), the
// journal is read as immutable, which is exact only while its WAL holds
// no frames, and so is done only then. A journal of an older schema is
// migrated as Open does: it exists, so nothing is made.
func OpenReadOnly(path string) (*Journal, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, missing(path, "")
	case err != nil:
		return nil, fmt.Errorf("journal %s: %w", path, err)
	case fi.IsDir():
		return nil, fmt.Errorf("journal %s is a directory: name a file (journal.path or FSGUARD_JOURNAL)", path)
	case fi.Size() == 0:
		return nil, missing(path, "the file there is empty")
	}
	j, v, err := openRO(path)
	if err != nil {
		return nil, err
	}
	switch {
	case v > SchemaVersion:
		j.db.Close()
		return nil, j.damage(fmt.Errorf("schema version %d is newer than this fsguard (%d): upgrade fsguard", v, SchemaVersion))
	case v < SchemaVersion:
		j.db.Close()
		return Open(path)
	}
	if err := j.checkHead(); err != nil {
		j.db.Close()
		return nil, err
	}
	if err := j.sameID(); err != nil {
		j.db.Close()
		return nil, err
	}
	return j, nil
}

// openRO opens the journal read-only (see OpenReadOnly) and returns its
// schema version.
func openRO(path string) (*Journal, int, error) {
	var first error
	for _, immutable := range []bool{false, true} {
		if immutable && walFrames(path) {
			break // an immutable read would not see the WAL's records
		}
		db, err := sqlitedb.OpenReadOnly(path, immutable)
		if err != nil {
			return nil, 0, fmt.Errorf("journal %s: %w", path, err)
		}
		j := &Journal{db: db, path: path}
		var v string
		err = db.QueryRow(`SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&v)
		if err == nil {
			n, perr := strconv.Atoi(v)
			if perr != nil {
				db.Close()
				return nil, 0, &DamageError{Path: path, Why: "its schema version is unreadable: " + v}
			}
			return j, n, nil
		}
		db.Close()
		if strings.Contains(err.Error(), "no such table") {
			return nil, 0, missing(path, "the file there holds no journal")
		}
		if first == nil {
			first = j.damage(err)
		}
	}
	if walFrames(path) {
		return nil, 0, fmt.Errorf("%w; its WAL (%s-wal) holds records that SQLite reads only with its shared-memory file (%s-shm) beside it or a directory it may write: copy both with the journal, or read it where the directory is writable", first, path, path)
	}
	return nil, 0, first
}

// walFrames reports whether the journal's WAL file holds any frame (more
// than its 32-byte header).
func walFrames(path string) bool {
	fi, err := os.Stat(path + "-wal")
	return err == nil && fi.Size() > 32
}

// sameID checks the journal's id against the one remembered beside it,
// writing nothing (see remember).
func (j *Journal) sameID() error {
	id := j.ID()
	b, err := os.ReadFile(IDFile(j.path))
	if id == "" || err != nil {
		return nil
	}
	if want := strings.TrimSpace(string(b)); want != id {
		return &ReplacedError{Path: j.path, Want: want, Have: id}
	}
	return nil
}

// missing is the refusal for no journal at path: what is there (why), and
// the journal that was, if its id is remembered beside it.
func missing(path, why string) error {
	detail := "nothing has journaled there yet (the daemon, or a direct read or write, makes it; a command that reads the journal never does) — name the journal with FSGUARD_JOURNAL or the policy's [journal] path"
	if b, err := os.ReadFile(IDFile(path)); err == nil {
		detail = fmt.Sprintf("journal %s was there (%s remembers it): it was deleted, emptied or replaced since — restore it from a copy, or remove %s to start anew", strings.TrimSpace(string(b)), IDFile(path), IDFile(path))
	}
	if why != "" {
		detail = why + "; " + detail
	}
	return refusal.Of(refusal.JournalMissing, refusal.OpRead, path, refusal.Facts{Detail: detail})
}
