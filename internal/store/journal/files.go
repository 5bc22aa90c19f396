package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// LostFilesError says the journal's database or WAL file was deleted or
// replaced while this process had it open. SQLite would go on writing
// into the orphaned file, so acknowledged records would vanish with this
// process; instead they are rescued (see HoldFiles) and no record is
// appended until the journal is opened anew.
type LostFilesError struct {
	Path    string
	What    string // "WAL" or "database"
	Rescued string // where the records were saved, when not the journal itself
}

func (e *LostFilesError) Error() string {
	saved := "its records were checkpointed into " + e.Path
	if e.Rescued != "" {
		saved = "its records were saved to " + e.Rescued
	}
	return fmt.Sprintf("journal %s: its %s file was deleted or replaced while open; %s, and nothing more is recorded until fsguard opens the journal again (the daemon does so by itself, and logs when it records again)", e.Path, e.What, saved)
}

// ownFiles are descriptors on the journal's own files, to notice their
// loss, and a connection kept open, so that SQLite never takes this
// process's last connection closing for the end of the journal's use
// and deletes the WAL itself.
type ownFiles struct {
	mu      sync.Mutex
	db, wal *os.File
	conn    *sql.Conn
	lost    error
	onLost  func(error)

	// The acknowledged mark (acked.go): its file, the journal's id it
	// names, and the last sequence number written to it.
	ackMu    sync.Mutex
	acked    *os.File
	id       string
	ackedSeq int64
	// lostErr is the gap startMark found (and recorded), if any.
	lostErr *LostError
}

// HoldFiles makes a long-lived process (the daemon) notice when the
// journal's files are deleted or replaced under it: before each append,
// and from Watch. Its records are then rescued while it still can — a
// deleted WAL is checkpointed into the database through the connection
// that still has it open; a deleted database is copied (VACUUM INTO) beside
// its path — and every later append fails with LostFilesError. onLost,
// when set, is told once.
func (j *Journal) HoldFiles(onLost func(error)) error {
	// Every connection is opened now, while the WAL is the one at the
	// path, and kept: a connection opened after the WAL was deleted
	// would make a new one at the path, and commit there records that no
	// checkpoint of the orphaned WAL can rescue.
	j.db.SetMaxOpenConns(poolConns)
	j.db.SetMaxIdleConns(poolConns)
	j.db.SetConnMaxLifetime(0)
	j.db.SetConnMaxIdleTime(0)
	var pool []*sql.Conn
	for range poolConns - 1 {
		c, err := j.db.Conn(context.Background())
		if err == nil {
			var n int
			err = c.QueryRowContext(context.Background(), `SELECT count(*) FROM meta`).Scan(&n)
		}
		if c != nil {
			pool = append(pool, c)
		}
		if err != nil {
			for _, c := range pool {
				c.Close()
			}
			return j.damage(err)
		}
	}
	conn, err := j.db.Conn(context.Background())
	for _, c := range pool {
		c.Close() // back to the pool, idle, and kept there
	}
	if err != nil {
		return j.damage(err)
	}
	// A read makes the connection open the WAL (creating it if need be).
	var n int
	if err := conn.QueryRowContext(context.Background(), `SELECT count(*) FROM meta`).Scan(&n); err != nil {
		conn.Close()
		return j.damage(err)
	}
	db, err := os.Open(j.path)
	if err != nil {
		conn.Close()
		return err
	}
	wal, err := os.Open(j.path + "-wal")
	if err != nil {
		conn.Close()
		db.Close()
		return fmt.Errorf("journal %s: its WAL: %w", j.path, err)
	}
	h := &ownFiles{db: db, wal: wal, conn: conn, onLost: onLost}
	j.files = h
	if err := j.startMark(h); err != nil {
		j.releaseFiles()
		j.files = nil
		return err
	}
	return nil
}

// Lost is the gap HoldFiles found between the acknowledged mark and the
// journal, and recorded (a KindLoss record): nil when none.
func (j *Journal) Lost() *LostError {
	if j.files == nil {
		return nil
	}
	return j.files.lostErr
}

// poolConns is how many connections a long-lived writer keeps open (see
// HoldFiles): its appends take one at a time, its queries share the rest.
const poolConns = 8

// CheckFiles looks at the held files now (see HoldFiles); it returns the
// LostFilesError once they were lost.
func (j *Journal) CheckFiles() error {
	h := j.files
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return h.lost
	}
	what := ""
	switch {
	case gone(h.db, j.path):
		what = "database"
	case gone(h.wal, j.path+"-wal"):
		what = "WAL"
	default:
		return nil
	}
	e := &LostFilesError{Path: j.path, What: what}
	if what == "WAL" {
		// Every connection of this process still has the orphaned WAL
		// open: a checkpoint copies its frames into the database file.
		e.Rescued = h.checkpoint()
	} else {
		dst := fmt.Sprintf("%s.rescued-%s", j.path, time.Now().UTC().Format("20060102T150405Z"))
		if _, err := h.conn.ExecContext(context.Background(), `VACUUM INTO ?`, dst); err != nil {
			e.Rescued = "nowhere (copying failed: " + err.Error() + ")"
		} else {
			e.Rescued = dst
		}
	}
	h.lost = e
	if h.onLost != nil {
		go h.onLost(e)
	}
	return e
}

// checkpoint copies every frame of the WAL the held connection has open
// (orphaned or not) into the database: "" when it did, else what it says
// instead of the place the records were saved to. h.mu is held.
func (h *ownFiles) checkpoint() string {
	// The checkpoint answers busy (1) rather than failing when a reader
	// kept it from copying every frame: then not all of them are in the
	// database.
	var busy, frames, copied int
	err := h.conn.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &copied)
	switch {
	case err != nil:
		return "nowhere (the checkpoint failed: " + err.Error() + ")"
	case busy != 0:
		return "nowhere (the checkpoint could not copy every record: a reader held it back)"
	}
	return ""
}

// afterCommit looks at the files after a commit. A commit made while the
// WAL was lost went into the orphaned file, even after an earlier rescue
// (an append that had passed its check before the loss), so it is
// acknowledged only once a checkpoint copied it into the database.
func (j *Journal) afterCommit() error {
	err := j.CheckFiles()
	var lost *LostFilesError
	if err == nil || !errors.As(err, &lost) || lost.What != "WAL" {
		return err
	}
	h := j.files
	h.mu.Lock()
	defer h.mu.Unlock()
	if why := h.checkpoint(); why != "" {
		return &LostFilesError{Path: lost.Path, What: lost.What, Rescued: why}
	}
	return nil
}

// gone reports whether the file f was opened as is no longer at path.
func gone(f *os.File, path string) bool {
	var held, now unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || held.Nlink == 0 {
		return true
	}
	if err := unix.Stat(path, &now); err != nil {
		return errors.Is(err, unix.ENOENT)
	}
	return now.Ino != held.Ino || now.Dev != held.Dev
}

// releaseFiles closes the held descriptors.
func (j *Journal) releaseFiles() {
	if h := j.files; h != nil {
		h.conn.Close()
		h.db.Close()
		h.wal.Close()
		if h.acked != nil {
			h.acked.Close()
		}
	}
}
