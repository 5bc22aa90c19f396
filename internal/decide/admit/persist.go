package admit

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/sniff"

	"golang.org/x/sys/unix"
)

// A daemon that starts again (a new container, a restart) would otherwise
// read and scan every file of the tree again before its first listing
// shows it. Save and Load keep the classes across runs, in a file only the
// daemon's user can write, for the same binary, boot and policy.
//
// Why a saved class can be trusted for a version: a version is (device,
// inode, size, mtime, ctime), and every change of content sets ctime to
// the time of the change, which no unprivileged user can set back. A
// class is saved only when its content was read at least settle after
// the version's ctime, so a later change, even within the file system's
// timestamp granularity, has a later ctime: another version. A new file
// that takes a freed inode number gets its own, later, ctime. The boot ID
// binds the file to this boot's clock and devices; the build ID to this
// detector; the policy's fingerprint to the sample size and to whether
// keys past the sample were searched for.

// settle is how long after a version's last change its content must have
// been read for its class to be saved.
const settle = time.Second

// maxSaved bounds the file Load reads (a full cache is ~6 MiB).
const maxSaved = 64 << 20

// saved is one version's class in the file: Res indexes the file's
// Results.
type saved struct {
	ID  fileid.Identity
	Res int
	At  int64
}

// savedFile is the file: a stamp, each distinct class once (a tree has a
// few), then the versions; a SHA-256 of the gob encoding follows it. A
// class written out per version would make the save's encoding mostly
// strings, and mostly garbage, in the first pause after the warm walk,
// which is often the agent's first command.
type savedFile struct {
	Stamp   string
	Results []sniff.Result
	Classes []saved
}

// Save writes the classes known under pol that a later daemon may trust
// to path (atomically: a temporary file, fsync, rename). The directory
// must be the daemon's user's and writable by no one else. It returns how
// many classes it wrote.
func (d *Decider) Save(path string, pol *policy.Policy) (int, error) {
	st, err := stamp(pol)
	if err != nil {
		return 0, err
	}
	if err := trusted(filepath.Dir(path)); err != nil {
		return 0, err
	}
	out := savedFile{Stamp: st}
	// A class without masks is a comparable value; a version with masks,
	// or a packed one with a finding inside, is not saved: those are its
	// own, and a rescan finds them again.
	type class struct {
		Class   sniff.Class
		MIME    string
		BOM     int
		Charset string
		BadByte int
	}
	index := map[class]int{}
	d.mu.Lock()
	out.Classes = make([]saved, 0, len(d.cache))
	for k, c := range d.cache {
		if k.pol == pol && c.at-k.id.CtimeNs >= int64(d.settle) && len(c.res.Masks) == 0 && c.res.Inside == nil {
			ck := class{c.res.Class, c.res.MIME, c.res.BOM, string(c.res.Charset), c.res.BadByte}
			i, ok := index[ck]
			if !ok {
				i = len(out.Results)
				index[ck] = i
				out.Results = append(out.Results, c.res)
			}
			out.Classes = append(out.Classes, saved{k.id, i, c.at})
		}
	}
	d.mu.Unlock()
	var b bytes.Buffer
	b.Grow(64 + 64*len(out.Classes)) // about what gob makes of a version
	if err := gob.NewEncoder(&b).Encode(&out); err != nil {
		return 0, err
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	tmp, err := os.CreateTemp(filepath.Dir(path), ".verdicts-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	return len(out.Classes), os.Rename(tmp.Name(), path)
}

// Load adds the classes a previous daemon saved to path, when the file is
// the daemon's user's, writable by no one else, intact, and was saved by
// this binary in this boot under a policy the same as pol. It returns how
// many it added; a missing file is 0 and no error.
func (d *Decider) Load(path string, pol *policy.Policy) (int, error) {
	want, err := stamp(pol)
	if err != nil {
		return 0, err
	}
	if err := trusted(filepath.Dir(path)); err != nil {
		return 0, err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	if err := owned(path, &st, false); err != nil {
		return 0, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSaved+1))
	if err != nil {
		return 0, err
	}
	if len(data) < sha256.Size || len(data) > maxSaved {
		return 0, fmt.Errorf("%s: not a verdicts file (%d bytes)", path, len(data))
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return 0, fmt.Errorf("%s: damaged (checksum mismatch)", path)
	}
	var in savedFile
	if err := gob.NewDecoder(bytes.NewReader(body)).Decode(&in); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if in.Stamp != want {
		return 0, nil // another binary, boot or policy: nothing to trust
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range in.Classes {
		if len(d.cache) >= d.max {
			break
		}
		if c.At-c.ID.CtimeNs < int64(d.settle) || c.Res < 0 || c.Res >= len(in.Results) {
			continue // never saved so; a file made by hand
		}
		d.cache[key{c.ID, pol}] = remembered{res: in.Results[c.Res], at: c.At, loaded: true}
		n++
	}
	return n, nil
}

// trusted checks that dir is a directory of the daemon's user (or root's)
// that no one else can write to.
func trusted(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return owned(dir, &st, true)
}

// owned checks that st (of path) is the daemon's user's (or, for a
// directory, root's) and writable by no one else; a file must be regular.
func owned(path string, st *unix.Stat_t, dir bool) error {
	if !dir && st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if euid := uint32(os.Geteuid()); st.Uid != euid && !(dir && st.Uid == 0) {
		return fmt.Errorf("%s is owned by uid %d, not by the daemon's user (uid %d)", path, st.Uid, euid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("%s is writable by group or others (mode %04o)", path, st.Mode&0o7777)
	}
	return nil
}

// stamp names what saved classes are valid for: this binary, this boot,
// this policy.
func stamp(pol *policy.Policy) (string, error) {
	build, err := buildID()
	if err != nil {
		return "", err
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("boot id: %w", err)
	}
	sum := sha256.Sum256([]byte(pol.Summary()))
	return fmt.Sprintf("fsguard verdicts 2\nbuild %s\nboot %s\npolicy %s\n", build, strings.TrimSpace(string(boot)), hex.EncodeToString(sum[:])), nil
}

var buildOnce = sync.OnceValues(func() (string, error) {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		return "", fmt.Errorf("build id: %w", err)
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return "", fmt.Errorf("build id: the binary has no Go build ID")
	}
	data, err := s.Data()
	if err != nil || len(data) == 0 {
		return "", fmt.Errorf("build id: %v", err)
	}
	sum := sha256.Sum256(data) // the note: the build ID and its framing
	return hex.EncodeToString(sum[:16]), nil
})

// buildID identifies the running binary (Go's build ID changes with any
// change to the code that made it).
func buildID() (string, error) { return buildOnce() }
