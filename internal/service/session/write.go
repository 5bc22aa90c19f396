package session

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/fsguard/fsguard/internal/concept/charset"
	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/store/journal"

	"golang.org/x/sys/unix"
)

// Freshness is a check's positive answer.
type Freshness struct {
	Path    string
	NewFile bool // the file does not exist yet: creating it needs no read
}

func stale(path string) error {
	return refusal.Of(refusal.ChangedSinceRead, refusal.OpModify, path, refusal.Facts{})
}

// Check answers whether session may write the file now: it must have
// observed the current version. Identity (dev, inode, size, mtime, ctime)
// is the fast path; the content hash is the authority, so a file touched
// but not changed is still fresh. No wall-clock time is compared.
func (s *Service) Check(name, cwd, session string) (*Freshness, error) {
	f, err := s.check(name, cwd, session)
	if err != nil {
		return nil, s.shownErr(err)
	}
	f.Path = s.shown(f.Path)
	return f, nil
}

func (s *Service) check(name, cwd, session string) (*Freshness, error) {
	name, cwd, err := s.resolve(name, cwd)
	if err != nil {
		return nil, err
	}
	if err := s.writeDeniedAsNamed(name, cwd); err != nil {
		return nil, err
	}
	f, err := s.Guard.Open(name, cwd)
	if refusal.CodeOf(err) == refusal.NotFound {
		p, lerr := s.Guard.Locate(name, cwd)
		if lerr != nil {
			return nil, lerr
		}
		d, base, perr := s.Guard.OpenParent(p)
		if perr != nil {
			return nil, perr
		}
		defer d.Close()
		if err := s.Guard.WriteDenied(p.In(d.Root, filepath.Join(d.Rel, base))); err != nil {
			return nil, err
		}
		return &Freshness{Path: p.Shown, NewFile: true}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := s.Guard.WriteDenied(f.Path()); err != nil {
		return nil, err
	}
	// The directory a write would land in answers as a write's would.
	d, _, err := s.Guard.OpenParent(f.Path())
	if err != nil {
		return nil, err
	}
	d.Close()
	if err := s.Guard.Do(func() error { return writable(f) }); err != nil {
		return nil, writeErr(f.Shown, err)
	}
	if err := s.checkFile(f, session); err != nil {
		return nil, err
	}
	return &Freshness{Path: f.Shown}, nil
}

// writeDeniedAsNamed applies the write deny rules to the path as the caller
// named it, before anything is opened; the real path is checked again once
// it is known (a link may lead from an allowed name to a denied file).
func (s *Service) writeDeniedAsNamed(name, cwd string) error {
	p, err := s.Guard.Locate(name, cwd)
	if err != nil {
		return err
	}
	return s.Guard.WriteDenied(p)
}

func (s *Service) checkFile(f *roots.File, session string) error {
	if s.Journal == nil {
		return s.notRecorded(refusal.OpCheck, f.Shown)
	}
	last, err := s.Journal.LastObservation(s.sess(session), f.Real)
	if err != nil {
		return err
	}
	if last == nil {
		return refusal.Of(refusal.NotRead, refusal.OpModify, f.Shown, refusal.Facts{})
	}
	content := last.ContentID
	if last.Identity == nil || *last.Identity != f.Identity() {
		sum, err := contentID(f)
		if err != nil {
			return refusal.Of(refusal.IOFailedRaw, refusal.OpRead, f.Shown, refusal.Facts{Detail: err.Error()})
		}
		if last.ContentID == "" || sum != last.ContentID {
			return stale(f.Shown)
		}
		content = sum
	}
	if s.RequireWholeView {
		held, err := s.Journal.Holds(s.sess(session), f.Real, content, last.TotalLines)
		if err != nil {
			return err
		}
		if !held {
			return refusal.Of(refusal.PartRead, refusal.OpModify, f.Shown, refusal.Facts{})
		}
	}
	return nil
}

// contentID hashes a file's whole content with the same scanner a read
// uses, so the two can never disagree.
func contentID(f *roots.File) (string, error) {
	res, err := lines.Scan(io.NewSectionReader(f, 0, 1<<62), lines.Options{Offset: 1, Limit: 1, MaxLineChars: 16, MaxBytes: 1 << 16, SizeHint: f.Stat.Size})
	if err != nil {
		return "", err
	}
	return fileid.ContentID(res.Sum), nil
}

// Recover resolves the intents whose writer is gone (killed between the
// rename and the record of its outcome): the file says which happened. If
// it holds the intended content the write happened, and its observation is
// recorded (the session holds the version it wrote); otherwise it did not,
// and a NOT_WRITTEN outcome is recorded. Either way the temporary name the
// intent recorded, if the kill left it, is removed (removeTemp). Intents of
// live writers are left: they may be under way. A writer is the process
// its intent names by pid and start time (writerLives); atStart says that
// this process has made no write yet, so an intent naming its pid without
// a start time (an older version's) is a predecessor's. It returns how
// many it resolved.
func (s *Service) Recover(atStart bool) (int, error) {
	if s.Journal == nil {
		return 0, nil
	}
	open, err := s.Journal.Dangling()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, in := range open {
		if writerLives(in, atStart) {
			continue // the write may be under way
		}
		out := &journal.Record{Kind: journal.KindOutcome, Intent: in.Seq, Session: in.Session, Owner: in.Owner, Path: in.Path, RealPath: in.RealPath, Code: "NOT_WRITTEN", Detail: "resolved at start: the file does not hold the intended content"}
		if sum, total, id, ok := fileFacts(in.RealPath); ok && sum == in.ContentID {
			out = &journal.Record{Kind: journal.KindObservation, Origin: journal.OriginWrite, Intent: in.Seq, Session: in.Session, Owner: in.Owner,
				Path: in.Path, RealPath: in.RealPath, StatID: fileid.StatID(in.RealPath, id), ContentID: in.ContentID, Identity: &id,
				WholeFileVisible: true, Start: min(1, total), End: total, TotalLines: total, Detail: "resolved at start: the file holds the intended content"}
		}
		removeTemp(in)
		if err := s.Journal.Append(out); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// writerLives reports whether the process that made intent in may still be
// making its write: a process with its pid lives and, where the intent
// recorded the writer's start time, started then (a pid reused by another
// process is not the writer). Without a start time (an older version's
// intent) a live pid is taken for the writer, unless it is this process's
// own and atStart.
func writerLives(in *journal.Record, atStart bool) bool {
	if in.Writer == 0 || unix.Kill(int(in.Writer), 0) != nil {
		return false
	}
	if in.WriterStart != 0 {
		start, err := processStart(int(in.Writer))
		return err != nil || start == in.WriterStart // unreadable: taken as alive
	}
	return !(atStart && int(in.Writer) == os.Getpid())
}

// selfStart is this process's start time (processStart), for its intents.
var selfStart = sync.OnceValue(func() uint64 {
	start, _ := processStart(os.Getpid())
	return start
})

// processStart is when process pid started: field 22 of /proc/PID/stat,
// in clock ticks since boot.
func processStart(pid int) (uint64, error) {
	stat := fmt.Sprintf("/proc/%d/stat", pid)
	if pid == os.Getpid() {
		stat = "/proc/self/stat" // this process, whatever pid namespace /proc shows
	}
	b, err := os.ReadFile(stat)
	if err != nil {
		return 0, err
	}
	// The name (field 2) is in parentheses and may hold anything: the
	// fields are counted from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22: the third is f[0]
}

// fileFacts hashes the file at path as a write does (the hash of its
// bytes, the lines of its text), streamed: its length costs no memory. ok
// is false when it is not a regular file or cannot be read.
func fileFacts(path string) (sum string, total int64, id fileid.Identity, ok bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", 0, id, false
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", 0, id, false
	}
	var head [4]byte
	hn, _ := f.ReadAt(head[:], 0)
	text := charset.NewReader(io.NewSectionReader(f, 0, 1<<62), charset.Detect(head[:hn]))
	scan, err := lines.Scan(text, lines.Options{Offset: 1, Limit: 1, MaxLineChars: 16, MaxBytes: 1 << 16, SizeHint: st.Size})
	if err != nil {
		return "", 0, id, false
	}
	text.Settle(&scan.Sum, &scan.Bytes)
	return fileid.ContentID(scan.Sum), scan.TotalLines, fileid.Of(&st), true
}

// removeTemp removes the temporary name an intent's write left when its
// writer was killed before the rename. What is there is removed only when
// it is that write's file: the name the intent recorded (fsguard's temp
// form, random, in the target's directory, reached without following a
// symlink at its last step), a regular file with that one link, holding
// exactly the intended content. Anything else under that name, a user's
// file that merely looks like one, is left as it is.
func removeTemp(in *journal.Record) {
	if in.Temp == "" {
		removeOldTemps(in)
		return
	}
	if filepath.Base(in.Temp) != in.Temp || !roots.IsTemp(in.Temp) {
		return
	}
	dfd, err := unix.Open(filepath.Dir(in.RealPath), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, in.Temp, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), in.Temp)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return
	}
	// A name recorded before its content (no O_TMPFILE) is the file
	// made O_EXCL under it, whatever it holds; any other holds exactly
	// the intended content.
	if in.ContentID != "" || in.Detail != "temp" {
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil || fileid.ContentID([32]byte(h.Sum(nil))) != in.ContentID {
			return
		}
	}
	// The name still names the file checked: unlinked only then.
	var now unix.Stat_t
	if unix.Fstatat(dfd, in.Temp, &now, unix.AT_SYMLINK_NOFOLLOW) == nil && now.Dev == st.Dev && now.Ino == st.Ino {
		unix.Unlinkat(dfd, in.Temp, 0)
	}
}

// removeOldTemps removes what an older version's write left, whose intent
// recorded no temporary name: in the target's directory, the names of
// fsguard's temp form for the target's base (at most maxOldTemps looked
// at) that are regular files with one link holding exactly the intended
// content.
func removeOldTemps(in *journal.Record) {
	if in.ContentID == "" || in.RealPath == "" {
		return
	}
	dir, base := filepath.Dir(in.RealPath), filepath.Base(in.RealPath)
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(maxOldTemps)
	d.Close()
	for _, name := range names {
		if roots.IsTemp(name) && strings.HasPrefix(name, "."+base+roots.TempMark) {
			removeTemp(&journal.Record{RealPath: in.RealPath, ContentID: in.ContentID, Temp: name})
		}
	}
}

// maxOldTemps bounds the names removeOldTemps reads in one directory.
const maxOldTemps = 1 << 16

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
	// Unconfirmed, when set, says why the write, made (renamed into
	// place), is not known to be durable: the directory's sync failed.
	Unconfirmed string
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
	return res, s.shownErr(err)
}

func (s *Service) write(name, cwd, session string, content io.Reader) (*WriteResult, error) {
	return s.replace(name, cwd, session, func(f *roots.File) (io.Reader, *edited, error) {
		if f == nil {
			return unmasked(name, content), nil, nil // a new file needs no read
		}
		if err := s.checkFile(f, session); err != nil {
			return nil, nil, err
		}
		if v, err := s.admit().Decide(s.Guard, f); err == nil && len(v.Masks) > 0 {
			return s.restoreWrite(f, v.Masks, content)
		}
		return keepEncoding(f, unmasked(f.Shown, content))
	})
}

// keepEncoding writes UTF-8 content sent for a UTF-16 or UTF-32 file in
// that file's encoding, with its BOM: the agent was shown the text
// decoded, and sends text back. Content that already announces an
// encoding is written as sent. The content is encoded as it streams, so
// a write costs the same memory whatever its length; content that is not
// UTF-8 text is refused, the file untouched.
func keepEncoding(f *roots.File, content io.Reader) (io.Reader, *edited, error) {
	var head [4]byte
	n, _ := f.ReadAt(head[:], 0)
	enc := charset.Detect(head[:n])
	if enc == charset.UTF8 {
		return content, nil, nil
	}
	br := bufio.NewReader(content)
	sent, _ := br.Peek(4)
	if charset.Detect(sent) != charset.UTF8 {
		return br, nil, nil
	}
	if bytes.HasPrefix(sent, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
	}
	return &encodeErr{r: charset.NewEncoder(br, enc), shown: f.Shown, enc: enc}, nil, nil
}

// encodeErr turns an encoder's complaint about the text into the
// refusal of the write.
type encodeErr struct {
	r     io.Reader
	shown string
	enc   charset.Encoding
}

func (e *encodeErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	var bad *charset.Error
	if errors.As(err, &bad) {
		err = refusal.Of(refusal.EncodingFailed, refusal.OpWrite, e.shown, refusal.Facts{Detail: fmt.Sprintf("the file is %s and the content is not UTF-8 text (byte %d): send UTF-8 text, or the file's own encoding with its byte order mark", e.enc, bad.Offset)})
	}
	return n, err
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
	var base string
	var p roots.Path // the file written, shown as the caller named it
	var checked *fileid.Identity
	var content io.Reader
	var ed *edited
	mode := uint32(0o644)
	if err := s.writeDeniedAsNamed(name, cwd); err != nil {
		return nil, err
	}
	// The directory is opened, and judged (OpenParent), before the
	// content is made: a write the policy refuses outright is refused
	// before any precondition of the session's.
	f, err := s.Guard.Open(name, cwd)
	switch {
	case err == nil:
		defer f.Close()
		id := f.Identity()
		checked, mode, p = &id, f.Stat.Mode&0o777, f.Path()
		if dir, base, err = s.Guard.OpenParent(p); err == nil {
			content, ed, err = newContent(f)
		}
	case refusal.CodeOf(err) == refusal.NotFound:
		p, err = s.Guard.Locate(name, cwd)
		if err == nil {
			content, ed, err = newContent(nil) // no I/O: an edit's "no such file"
		}
		if err == nil {
			dir, base, err = s.Guard.OpenParent(p)
		}
	}
	if dir != nil {
		defer dir.Close()
	}
	if err != nil {
		return nil, err
	}
	if s.Journal == nil {
		return nil, s.notRecorded(refusal.OpWrite, p.Shown)
	}
	if err := s.Guard.WriteDenied(p.In(dir.Root, filepath.Join(dir.Rel, base))); err != nil {
		return nil, err
	}
	if f != nil {
		// Replacing means writing: the caller must be able to open the
		// file for writing itself, whatever the directory allows.
		if err := s.Guard.Do(func() error { return writable(f) }); err != nil {
			return nil, writeErr(p.Shown, err)
		}
	}
	dfd := int(dir.Fd())
	real := filepath.Join(dir.Root.Real, dir.Rel, base)
	// Where the new version must be named from the start (no O_TMPFILE),
	// the name is recorded before the file is made: an intent of its own
	// (no content yet), resolved once the write's intent follows, or by
	// the next start, which removes the name (removeTemp).
	var named *journal.Record
	namedOutcome := "NOT_WRITTEN"
	defer func() {
		if named != nil {
			s.append(&journal.Record{Kind: journal.KindOutcome, Intent: named.Seq, Session: session, Owner: s.who.Owner(), Path: named.Path, RealPath: real, Code: namedOutcome})
		}
	}()
	tmp, err := newTemp(s.Guard, dfd, base, s.noTmpfile, func(name string) error {
		rec := &journal.Record{Kind: journal.KindIntent, Detail: "temp", Session: session, Owner: s.who.Owner(), Writer: uint32(os.Getpid()), WriterStart: selfStart(),
			Path: s.shown(p.Shown), RealPath: real, Pid: s.who.Pid, Uid: s.who.Uid, Process: s.who.Process, Temp: name}
		if err := s.append(rec); err != nil {
			return refusal.Of(refusal.JournalFailed, refusal.OpWrite, p.Shown, refusal.Facts{Detail: err.Error()}).Because(err)
		}
		named = rec
		return nil
	})
	if refused, ok := errors.AsType[*refusal.Error](err); ok {
		return nil, refused
	}
	if err != nil {
		return nil, writeErr(p.Shown, err)
	}
	defer tmp.Close()
	committed := false
	defer func() {
		if !committed && tmp.named {
			s.Guard.Do(func() error { return unix.Unlinkat(dfd, tmp.name, 0) })
		}
	}()
	n, err := io.Copy(tmp, content)
	if err == nil {
		err = tmp.Sync()
	}
	var refused *refusal.Error
	if errors.As(err, &refused) {
		return nil, refused // the content itself was refused (a mask in it)
	}
	if err != nil {
		return nil, writeErr(p.Shown, err)
	}
	var src io.Reader = io.NewSectionReader(tmp, 0, 1<<62)
	var kept *bytes.Buffer // what the session wrote is a version it holds
	if s.Held != nil && n <= s.Held.MaxFile() {
		kept = bytes.NewBuffer(make([]byte, 0, n))
		src = io.TeeReader(src, kept)
	}
	var head [4]byte
	hn, _ := tmp.ReadAt(head[:], 0)
	text := charset.NewReader(src, charset.Detect(head[:hn]))
	scan, err := lines.Scan(text, lines.Options{Offset: 1, Limit: 1, MaxLineChars: 16, MaxBytes: 1 << 16, SizeHint: n})
	if err != nil {
		return nil, writeErr(p.Shown, err)
	}
	text.Settle(&scan.Sum, &scan.Bytes) // lines of the text, the hash of the bytes
	// Record first: the intent, before anything is named or replaced. A
	// write the journal cannot record does not happen. The intent names
	// the temporary name too, so one left by a writer killed before the
	// rename is found and removed at the next start (Recover).
	intent := &journal.Record{Kind: journal.KindIntent, Detail: journal.OriginWrite, Session: session, Owner: s.who.Owner(), Writer: uint32(os.Getpid()), WriterStart: selfStart(),
		Path: s.shown(p.Shown), RealPath: real, ContentID: fileid.ContentID(scan.Sum), Pid: s.who.Pid, Uid: s.who.Uid, Process: s.who.Process, Request: s.request,
		Temp: tmp.name}
	if ed != nil {
		intent.Detail = journal.OriginEdit
	}
	if err := s.append(intent); err != nil {
		return nil, refusal.Of(refusal.JournalFailed, refusal.OpWrite, p.Shown, refusal.Facts{Detail: err.Error()}).Because(err)
	}
	namedOutcome = "SUPERSEDED" // the intent names the temporary file now
	notWritten := func(why string) {
		s.append(&journal.Record{Kind: journal.KindOutcome, Intent: intent.Seq, Session: session, Owner: s.who.Owner(), Path: intent.Path, RealPath: real, Code: why})
	}
	// The new version gets a name only now, complete, and with no more
	// rights than the result: owner kept, set-ID bits never.
	if err := tmp.finish(s.Guard, dfd, f, mode); err != nil {
		err = writeErr(p.Shown, err)
		notWritten(string(refusal.CodeOf(err)))
		return nil, err
	}
	beforeRename()
	err = s.Guard.Do(func() error {
		var st unix.Stat_t
		serr := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
		if checked != nil {
			if serr != nil || fileid.Of(&st) != *checked {
				return stale(p.Shown)
			}
			return unix.Renameat(dfd, tmp.name, dfd, base)
		}
		err := unix.Renameat2(dfd, tmp.name, dfd, base, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			return refusal.Of(refusal.CreatedMeanwhile, refusal.OpCreate, p.Shown, refusal.Facts{})
		}
		return err
	})
	if refusal.CodeOf(err) == refusal.StaleVersion {
		notWritten(string(refusal.StaleVersion))
		return nil, err
	}
	if err != nil {
		notWritten(string(refusal.CodeOf(writeErr(p.Shown, err))))
		return nil, writeErr(p.Shown, err)
	}
	committed = true
	// The rename stands whatever follows: from here the write happened,
	// and is reported and recorded as written. A directory that could not
	// be synced makes it not durable yet, not undone.
	unconfirmed := ""
	if err := dir.Sync(); err != nil {
		unconfirmed = "syncing the directory: " + err.Error()
	}
	if s.OnWrite != nil {
		s.OnWrite(real)
	}
	var now unix.Stat_t
	if err := unix.Fstat(int(tmp.Fd()), &now); err != nil {
		return nil, writeErr(p.Shown, err)
	}
	id := fileid.Of(&now)
	res := &WriteResult{Path: p.Shown, Bytes: n, TotalLines: scan.TotalLines, ContentID: fileid.ContentID(scan.Sum), Created: checked == nil, Unconfirmed: unconfirmed}
	rec := &journal.Record{
		Kind: journal.KindObservation, Origin: journal.OriginWrite, Session: session,
		Path: s.shown(p.Shown), RealPath: real, StatID: fileid.StatID(real, id), ContentID: res.ContentID,
		WholeFileVisible: true, Start: min(1, scan.TotalLines), End: scan.TotalLines, TotalLines: scan.TotalLines,
		Identity: &id, Pid: s.who.Pid, Uid: s.who.Uid, Process: s.who.Process, Owner: s.who.Owner(),
		Intent: intent.Seq,
	}
	if unconfirmed != "" {
		rec.Detail = "written; durability not confirmed (" + unconfirmed + ")"
	}
	if ed != nil {
		rec.Origin, rec.WholeFileVisible, rec.Held, rec.Start, rec.End = journal.OriginEdit, false, ed.held, ed.start, ed.end
	}
	if err := s.append(rec); err != nil {
		return res, fmt.Errorf("the file was written, but the journal could not record its outcome (%v): the intent recorded before it names the content; 'fsguard journal verify' reports it until resolved, and the next write will need a re-read", err)
	}
	if kept != nil {
		// What the session holds is what it would be shown: masked.
		if shown, ok := s.admit().ShownBytes(s.Guard.Policy(), kept.Bytes()); ok {
			s.keep(res.ContentID, real, shown)
		}
	}
	return res, nil
}

func writeErr(shown string, err error) error {
	reason := refusal.WriteFailed
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		reason = refusal.WriteNoAccess
	}
	return refusal.Of(reason, refusal.OpWrite, shown, refusal.Facts{Detail: err.Error()}).Because(err)
}
