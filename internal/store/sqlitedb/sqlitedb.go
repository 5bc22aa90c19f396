// Package sqlitedb opens fsguard's SQLite files (the journal, the
// held-content store) one way: the directory made private if missing, WAL,
// a 30 s busy timeout, and BEGIN IMMEDIATE, so any number of processes
// write without SQLITE_BUSY; durability is the caller's choice.
package sqlitedb

import (
	"database/sql"
	"os"
	"path/filepath"

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

// Open opens (creating if need be) the database at path.
func Open(path string, sync Sync) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	dsn := "file:" + path + "?_txlock=immediate" +
		"&_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(" + string(sync) + ")"
	return sql.Open("sqlite", dsn)
}
