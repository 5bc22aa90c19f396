package sqlitedb

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Private makes the file at path this process's user's alone: created
// 0600 when create is set and it is missing (O_EXCL, never through a
// symlink), its group and other bits cleared (fchmod) when it exists with
// them and is this user's. A file of another user is left as it is: a
// process reading another user's journal only reads. A missing file
// without create is no error.
func Private(path string, create bool) error {
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK
	fd, err := unix.Open(path, flags, 0)
	if errors.Is(err, unix.ENOENT) {
		if !create {
			return nil
		}
		fd, err = unix.Open(path, flags|unix.O_CREAT|unix.O_EXCL, 0o600)
		if errors.Is(err, unix.EEXIST) {
			return Private(path, false) // made meanwhile by another process
		}
	}
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EROFS) {
		return nil // not this user's to make or read: SQLite says what it can do
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if st.Uid == uint32(os.Geteuid()) && st.Mode&0o077 != 0 {
		if err := unix.Fchmod(fd, st.Mode&0o700); err != nil {
			return fmt.Errorf("%s: making it private: %w", path, err)
		}
	}
	return nil
}

// maxEntries bounds the listing by which a directory is told to be the
// journal's own.
const maxEntries = 64

// PrivateDir makes sure the directory of the file at path (a journal, or
// a store beside it) keeps the files fsguard writes there from other
// users, and returns, when it changed the directory, what it did, for the
// log:
//
//   - missing: made 0700;
//   - owned by a user other than this process's and root: refused, since
//     that user could replace the files;
//   - open to group or others and holding nothing but this journal's files
//     (names beginning with the file's stem, "journal" for journal.db),
//     all this user's: made 0700 (a state directory made 0755 by whoever
//     created it, such as a hostPath volume);
//   - writable by group or others, and holding other things: refused,
//     since another user could plant or replace the journal's files, and
//     changing a shared directory's mode is not fsguard's to do;
//   - readable by others only, and holding other things: left as it is;
//     every file fsguard makes in it is 0600, so only names show.
func PrivateDir(path string) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	euid := uint32(os.Geteuid())
	if st.Uid != euid && st.Uid != 0 {
		return "", fmt.Errorf("the journal's directory %s belongs to uid %d, who could replace the journal's files: keep the journal in a directory of uid %d's or root's", dir, st.Uid, euid)
	}
	mode := st.Mode & 0o7777
	if mode&0o077 == 0 {
		return "", nil
	}
	if st.Uid == euid && ownDir(dir, path, euid) {
		if err := unix.Chmod(dir, mode&^0o077); err != nil {
			return "", fmt.Errorf("making the journal's directory %s private: %w", dir, err)
		}
		return fmt.Sprintf("mode %04o, now %04o", mode, mode&^0o077), nil
	}
	if mode&0o022 != 0 {
		return "", fmt.Errorf("the journal's directory %s (mode %04o) is writable by other users, who could plant or replace the journal's files: give the journal a directory of its own (mode 0700), or chmod go-w %s", dir, mode, dir)
	}
	return "", nil
}

// ownDir reports whether dir holds nothing but the files of the journal at
// path, all of them uid's.
func ownDir(dir, path string, uid uint32) bool {
	stem, _, _ := strings.Cut(filepath.Base(path), ".")
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(maxEntries + 1)
	if (err != nil && err != io.EOF) || len(names) > maxEntries {
		return false
	}
	for _, n := range names {
		if n != stem && !strings.HasPrefix(n, stem+".") && !strings.HasPrefix(n, stem+"-") && !strings.HasPrefix(n, ".verdicts-") {
			return false
		}
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(dir, n), &st) != nil || st.Uid != uid {
			return false
		}
	}
	return true
}
