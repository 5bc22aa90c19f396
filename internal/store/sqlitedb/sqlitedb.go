// Package sqlitedb opens fsguard's SQLite files (the journal, the
// held-content store) one way: in a private directory, the files the
// daemon's user's alone (0600) whatever the umask, WAL, a 30 s busy
// timeout, and BEGIN IMMEDIATE, so any number of processes write without
// SQLITE_BUSY; durability is the caller's choice.
package sqlitedb

import (
	"database/sql"
	"strings"

	_ "modernc.org/sqlite" // the pure-Go driver: static builds, no cgo
)

// Sync is how hard a commit waits for the disk.
type Sync string

const (
	// Full: a committed transaction survives power loss (the journal).
	Full Sync = "FULL"
	// Normal: it survives a crash of the process, not of the machine
	// (the held-content store, a cache that is never the only copy).
	Normal Sync = "NORMAL"
)

// Open opens (creating if need be) the database at path. Its directory
// must be private (see PrivateDir); the database file is made 0600 before
// SQLite opens it, because SQLite gives the WAL and shared-memory files it
// creates the database file's mode, and creates a missing database file
// 0644 less the umask.
func Open(path string, sync Sync) (*sql.DB, error) {
	if _, err := PrivateDir(path); err != nil {
		return nil, err
	}
	if err := Private(path, true); err != nil {
		return nil, err
	}
	for _, side := range []string{"-wal", "-shm"} {
		if err := Private(path+side, false); err != nil {
			return nil, err
		}
	}
	dsn := "file:" + path + "?_txlock=immediate" +
		"&_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(" + string(sync) + ")"
	return sql.Open("sqlite", dsn)
}

// OpenReadOnly opens the existing database at path for reading only: it
// creates nothing (no directory, no database, no pragma that writes), so
// a missing database is the caller's to report, and a read-only copy can
// be read. Immutable opens it as a file nothing will change (SQLite's
// immutable=1: no locks, no WAL, no shared memory), for a copy whose
// directory this user may not write and whose WAL holds no frames; SQLite
// reads a WAL file, when one is there, only without it.
func OpenReadOnly(path string, immutable bool) (*sql.DB, error) {
	q := "?mode=ro&_pragma=busy_timeout(30000)"
	if immutable {
		q = "?immutable=1"
	}
	db, err := sql.Open("sqlite", "file:"+uriPath(path)+q)
	if err != nil {
		return nil, err
	}
	return db, nil
}

// uriPath escapes the characters a file: URI gives meaning to, so that a
// path holding them names the file and not a query.
func uriPath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}
