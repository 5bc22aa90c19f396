package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ReplacedError says the journal at Path is not the one last opened there:
// its id differs from the one remembered beside it (IDFile). A journal
// deleted, emptied or replaced is reported, never taken for a new one.
type ReplacedError struct{ Path, Want, Have string }

func (e *ReplacedError) Error() string {
	return fmt.Sprintf("journal %s is not the journal last opened there (journal %s; this one is %s): it was deleted, emptied or replaced since — restore it from a copy, or remove %s to start anew", e.Path, e.Want, e.Have, IDFile(e.Path))
}

// IDFile is where the id of the journal at path is remembered: beside it,
// so it outlives the journal's own files, held-content store or not.
func IDFile(path string) string { return path + ".id" }

// remember checks the journal's id against the one remembered beside it,
// or remembers it. A process that may not write there (a user reading
// root's journal) only checks.
func (j *Journal) remember() error {
	id := j.ID()
	if id == "" {
		return nil // a journal older than ids
	}
	b, err := os.ReadFile(IDFile(j.path))
	switch {
	case err == nil:
		if want := strings.TrimSpace(string(b)); want != id {
			return &ReplacedError{Path: j.path, Want: want, Have: id}
		}
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return nil // unreadable: nothing to compare with
	}
	// A new file of its own (0600 whatever the umask, never an existing
	// one or a symlink's target), renamed into place.
	f, err := os.CreateTemp(filepath.Dir(j.path), filepath.Base(IDFile(j.path))+".tmp-*")
	if err != nil {
		return nil
	}
	defer os.Remove(f.Name()) // after the rename: nothing
	_, werr := f.WriteString(id + "\n")
	if serr := f.Sync(); werr == nil {
		werr = serr
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		os.Rename(f.Name(), IDFile(j.path))
	}
	return nil
}
