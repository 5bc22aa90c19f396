package journal

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// A mask record names a credential by a keyed hash of its value, so an
// operator can see the same secret in two files while neither the journal
// nor an export of it holds the value or a hash a dictionary could reverse
// (a URL's password is often a word). The key lives beside the journal in
// a file of its own, the daemon's user's alone: exports leave the host,
// the key does not.

// maskKeySize is the key's length in bytes.
const maskKeySize = 32

// MaskKey returns the journal's mask key, made (0600, never replaced) the
// first time it is asked for.
func (j *Journal) MaskKey() ([]byte, error) {
	j.keyOnce.Do(func() { j.key, j.keyErr = maskKey(j.path + ".maskkey") })
	return j.key, j.keyErr
}

func maskKey(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil {
		if len(b) != maskKeySize {
			return nil, fmt.Errorf("mask key %s: %d bytes, want %d", path, len(b), maskKeySize)
		}
		return b, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	key := make([]byte, maskKeySize)
	rand.Read(key)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return maskKey(path) // made meanwhile by another process
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return key, f.Close()
}
