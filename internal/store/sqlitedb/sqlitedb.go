// Package sqlitedb opens fsguard's SQLite files (the journal, the
// held-content store) one way: in a private directory, the files the
// daemon's user's alone (0600) whatever the umask, WAL, a 30 s busy
// timeout, and BEGIN IMMEDIATE, so any number of processes write without
// SQLITE_BUSY; durability is the caller's choice.
package sqlitedb

import (
	"database/sql"

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
