package agent

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"fsguard/journal"
	"fsguard/read"
	"fsguard/refusal"
	"fsguard/roots"
	"fsguard/window"

	"golang.org/x/sys/unix"
)

// Freshness is a check's positive answer.
type Freshness struct {
	Path    string
	NewFile bool // the file does not exist yet: creating it needs no read
}

func notObserved(path, why string) error {
	return refusal.New(refusal.NotObserved, path, "cannot modify %q: %s — read the file, then retry", path, why)
}

func stale(path string) error {
	return refusal.New(refusal.StaleVersion, path, "cannot modify %q: file changed since it was read — re-read the file, then retry", path)
}

// Check answers whether session may write the file now: it must have
// observed the current version. Identity (dev, inode, size, mtime, ctime)
// is the fast path; the content hash is the authority, so a file touched
// but not changed is still fresh. No wall-clock time is compared.
func (s *Service) Check(name, cwd, session string) (*Freshness, error) {
	f, err := s.check(name, cwd, session)
	if err != nil {
		return nil, s.View.rewrite(err)
	}
	f.Path = s.shown(f.Path)
	return f, nil
}

func (s *Service) check(name, cwd, session string) (*Freshness, error) {
	name, cwd, err := s.resolve(name, cwd)
	if err != nil {
		return nil, err
	}
	f, err := s.Guard.Open(name, cwd)
	if refusal.CodeOf(err) == refusal.NotFound {
		root, rel, display, lerr := s.Guard.Locate(name, cwd)
		if lerr != nil {
			return nil, lerr
		}
		d, _, perr := s.Guard.OpenParent(root, rel, display)
		if perr != nil {
			return nil, perr
		}
		d.Close()
		return &Freshness{Path: display, NewFile: true}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := s.checkFile(f, session); err != nil {
		return nil, err
	}
	return &Freshness{Path: f.Name}, nil
}

func (s *Service) checkFile(f *roots.File, session string) error {
	if s.Journal == nil {
		return refusal.New(refusal.IOError, f.Name, "cannot check %q: %s", f.Name, s.notRecorded())
	}
	last, err := s.Journal.LastObservation(session, f.Real)
	if err != nil {
		return err
	}
	if last == nil {
		return notObserved(f.Name, "file has not been read")
	}
	content := last.ContentID
	if last.Identity == nil || *last.Identity != f.Identity() {
		sum, err := contentID(f)
		if err != nil {
			return refusal.Cannot(refusal.IOError, f.Name, err.Error())
		}
		if last.ContentID == "" || sum != last.ContentID {
			return stale(f.Name)
		}
		content = sum
	}
	if s.RequireWholeView {
		held, err := s.Journal.Holds(session, f.Real, content, last.TotalLines)
		if err != nil {
			return err
		}
		if !held {
			return notObserved(f.Name, "only part of the file has been read, and the policy requires the whole")
		}
	}
	return nil
}

// contentID hashes a file's whole content with the same scanner a read
// uses, so the two can never disagree.
func contentID(f *roots.File) (string, error) {
	res, err := window.Scan(io.NewSectionReader(f, 0, 1<<62), window.Options{Offset: 1, Limit: 1, MaxLineChars: 16, MaxBytes: 1 << 16})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(res.Sum[:]), nil
}

// beforeRename lets a test change the target between the check and the
// rename, where only a re-check can catch it.
var beforeRename = func() {}

// WriteResult describes a completed write.
type WriteResult struct {
	Path       string
	Bytes      int64
	TotalLines int64
	ContentID  string
	Created    bool
}

// Write replaces (or creates) the file with content, atomically: a
// temporary file in the same directory, fsync, rename, fsync of the
// directory. An existing file must pass Check and keeps its mode; the
// target is re-checked just before the rename, and a new file is renamed
// with RENAME_NOREPLACE, so a file that changed or appeared meanwhile is
// never clobbered. Symlinks are resolved beneath the roots: the write goes
// to the real file, never out of the roots.
func (s *Service) Write(name, cwd, session string, content io.Reader) (*WriteResult, error) {
	res, err := s.write(name, cwd, session, content)
	if res != nil {
		res.Path = s.shown(res.Path)
	}
	return res, s.View.rewrite(err)
}

func (s *Service) write(name, cwd, session string, content io.Reader) (*WriteResult, error) {
	return s.replace(name, cwd, session, func(f *roots.File) (io.Reader, *edited, error) {
		if f == nil {
			return content, nil, nil // a new file needs no read
		}
		return content, nil, s.checkFile(f, session)
	})
}

// edited says what an edit changed, for its record: the lines of the new
// version the session holds afterwards, and the lines it was shown.
type edited struct {
	held       [][2]int64
	start, end int64
}

// produce gives the new content for the file f (nil: it does not exist
// yet), having checked that the session may replace it; a nil *edited
// means the session wrote the whole new content.
type produce func(f *roots.File) (io.Reader, *edited, error)

// replace is the one atomic write path, under Write and Edit.
func (s *Service) replace(name, cwd, session string, newContent produce) (*WriteResult, error) {
	name, cwd, err := s.resolve(name, cwd)
	if err != nil {
		return nil, err
	}
	var dir *roots.Dir
	var base, display string
	var checked *roots.Identity
	var content io.Reader
	var ed *edited
	mode := uint32(0o644)
	f, err := s.Guard.Open(name, cwd)
	switch {
	case err == nil:
		defer f.Close()
		if content, ed, err = newContent(f); err != nil {
			return nil, err
		}
		id := f.Identity()
		checked, mode, display = &id, f.Stat.Mode&0o7777, f.Name
		dir, base, err = s.Guard.OpenParent(f.Root, f.Rel, f.Name)
	case refusal.CodeOf(err) == refusal.NotFound:
		var root *roots.Root
		var rel string
		root, rel, display, err = s.Guard.Locate(name, cwd)
		if err == nil {
			content, ed, err = newContent(nil)
		}
		if err == nil {
			dir, base, err = s.Guard.OpenParent(root, rel, display)
		}
	}
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	if s.Journal == nil {
		return nil, refusal.New(refusal.IOError, display, "cannot write %q: %s", display, s.notRecorded())
	}
	dfd := int(dir.Fd())
	tmp := tempName(base)
	fd, err := unix.Openat(dfd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, mode)
	if err != nil {
		return nil, writeErr(display, err)
	}
	tf := os.NewFile(uintptr(fd), tmp)
	defer tf.Close()
	committed := false
	defer func() {
		if !committed {
			unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	n, err := io.Copy(tf, content)
	if err == nil {
		err = unix.Fchmod(fd, mode) // the umask must not change the mode
	}
	if err == nil {
		err = tf.Sync()
	}
	if err != nil {
		return nil, writeErr(display, err)
	}
	var src io.Reader = io.NewSectionReader(tf, 0, 1<<62)
	var kept *bytes.Buffer // what the session wrote is a version it holds
	if s.Held != nil && n <= s.Held.MaxFile() {
		kept = bytes.NewBuffer(make([]byte, 0, n))
		src = io.TeeReader(src, kept)
	}
	scan, err := window.Scan(src, window.Options{Offset: 1, Limit: 1, MaxLineChars: 16, MaxBytes: 1 << 16})
	if err != nil {
		return nil, writeErr(display, err)
	}
	beforeRename()
	var st unix.Stat_t
	serr := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if checked != nil {
		if serr != nil || roots.IdentityOf(&st) != *checked {
			return nil, stale(display)
		}
		err = unix.Renameat(dfd, tmp, dfd, base)
	} else {
		err = unix.Renameat2(dfd, tmp, dfd, base, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			return nil, refusal.New(refusal.StaleVersion, display, "cannot create %q: it was created meanwhile — read the file, then retry", display)
		}
	}
	if err != nil {
		return nil, writeErr(display, err)
	}
	committed = true
	real := filepath.Join(dir.Root.Real, dir.Rel, base)
	err = dir.Sync()
	if s.OnWrite != nil {
		s.OnWrite(real) // the rename stands even if the sync failed
	}
	if err != nil {
		return nil, writeErr(display, err)
	}
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		return nil, writeErr(display, err)
	}
	id := roots.IdentityOf(&now)
	res := &WriteResult{Path: display, Bytes: n, TotalLines: scan.TotalLines, ContentID: hex.EncodeToString(scan.Sum[:]), Created: checked == nil}
	rec := &journal.Record{
		Kind: journal.KindObservation, Origin: journal.OriginWrite, Session: session,
		Path: s.shown(display), RealPath: real, StatID: read.StatID(real, id), ContentID: res.ContentID,
		WholeFileVisible: true, Start: min(1, scan.TotalLines), End: scan.TotalLines, TotalLines: scan.TotalLines,
		Identity: &id, Pid: s.Pid, Uid: s.Uid, Process: s.Process,
	}
	if ed != nil {
		rec.Origin, rec.WholeFileVisible, rec.Held, rec.Start, rec.End = journal.OriginEdit, false, ed.held, ed.start, ed.end
	}
	if err := s.append(rec); err != nil {
		return res, fmt.Errorf("the file was written, but the journal could not record it (%v): the next write will need a re-read", err)
	}
	if kept != nil {
		s.keep(res.ContentID, real, kept.Bytes())
	}
	return res, nil
}

func tempName(base string) string {
	var b [6]byte
	rand.Read(b[:])
	return "." + base + ".fsguard-" + hex.EncodeToString(b[:])
}

func writeErr(display string, err error) error {
	code := refusal.IOError
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		code = refusal.PermissionDenied
	}
	return &refusal.Error{Code: code, Path: display, Err: err, Message: fmt.Sprintf("cannot write %q: %v", display, err)}
}
