package sqlitedb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrivateDir: a journal's own directory open to others is made
// private; a shared one others may write is refused; a shared one others
// may only read is left, its files private.
func TestPrivateDir(t *testing.T) {
	t.Parallel()
	mk := func(mode os.FileMode, others ...string) string {
		d := t.TempDir()
		for _, n := range others {
			if err := os.WriteFile(filepath.Join(d, n), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	mode := func(p string) os.FileMode {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	own := mk(0o755, "journal.db", "journal.db.id", "journal.held.db")
	if did, err := PrivateDir(filepath.Join(own, "journal.db")); err != nil || did == "" || mode(own) != 0o700 {
		t.Errorf("the journal's own 0755 directory: %q %v, now %04o", did, err, mode(own))
	}
	shared := mk(0o777, "journal.db", "notes.txt")
	if _, err := PrivateDir(filepath.Join(shared, "journal.db")); err == nil || !strings.Contains(err.Error(), "writable by other users") {
		t.Errorf("a shared directory others may write: %v", err)
	}
	if mode(shared) != 0o777 {
		t.Errorf("a shared directory's mode was changed to %04o", mode(shared))
	}
	readable := mk(0o755, "mnt")
	if did, err := PrivateDir(filepath.Join(readable, "journal.db")); err != nil || did != "" || mode(readable) != 0o755 {
		t.Errorf("a shared directory others may read: %q %v, now %04o", did, err, mode(readable))
	}
	db, err := Open(filepath.Join(readable, "journal.db"), Normal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"journal.db", "journal.db-wal", "journal.db-shm"} {
		if m := mode(filepath.Join(readable, n)); m&0o077 != 0 {
			t.Errorf("%s is mode %04o", n, m)
		}
	}
}
