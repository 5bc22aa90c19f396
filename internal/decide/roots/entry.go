package roots

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/refusal"

	"golang.org/x/sys/unix"
)

// Entry is the guard's verdict on one directory entry, as a listing or the
// mount presents it.
type Entry struct {
	Name string // base name
	Rel  string // path relative to the root
	// Stat is the entry itself (lstat); for a link, the link. Its
	// permission bits are lowered where the entry's POSIX access ACL
	// allows less than they do (see clampToACL): no caller they let in
	// is shut out by the ACL.
	Stat unix.Stat_t
	// Link is the target text of an admitted symbolic link: relative, and
	// resolving beneath the root to an admitted regular file or directory.
	Link string
}

// Visible reports whether the entry may be shown: a regular file, a
// directory, or an admitted symbolic link. FIFOs, sockets and devices are
// never shown.
func (e Entry) Visible() bool {
	switch e.Stat.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFDIR:
		return true
	case unix.S_IFLNK:
		return e.Link != ""
	}
	return false
}

// IsDir reports whether the entry is a directory (not a link to one).
func (e Entry) IsDir() bool { return e.Stat.Mode&unix.S_IFMT == unix.S_IFDIR }

// Entry decides on rel beneath root without following a final symlink. A
// symbolic link is admitted only when its text is relative and it resolves,
// beneath the same root, to a regular file or directory that no deny rule
// matches: then a reader that follows it (the kernel, through the mount)
// comes back through the guard and lands on an admitted entry. Absolute
// links are refused even when they point inside the root, because inside a
// container they name a different file.
func (g *Guard) Entry(root *Root, rel string) (Entry, error) {
	e, _, err := g.entry(Path{Root: root, Rel: rel}, nil)
	return e, err
}

// EntryFile is Entry for p, and for a regular file for whose stat want
// says yes, the file opened as OpenIn opens it (p.Shown names it): from
// the very inode Entry checked, with one resolution of the path for both.
// A listing's admission wants the stat of each file, and its content when
// its verdict is not known yet. The file is nil when not wanted, and when
// the path met a symbolic link (a race: then OpenIn decides afresh).
func (g *Guard) EntryFile(p Path, want func(*unix.Stat_t) bool) (Entry, *File, error) {
	return g.entry(p, want)
}

// entry decides on p; its refusals name the entry at its root's
// configured path, and only an opened file is shown as p.
func (g *Guard) entry(p Path, want func(*unix.Stat_t) bool) (Entry, *File, error) {
	at := p.Root.At(p.Rel)
	e := Entry{Name: p.Base(), Rel: p.Rel}
	if g.Denied(p.Root, p.Rel) {
		return e, nil, g.deniedErr(at.Shown)
	}
	if want != nil {
		if f, ok := g.openListed(p, &e, want); ok {
			return e, f, nil
		}
	}
	pfd, viaLink, err := g.open(p.Root, p.Rel, unix.O_PATH|unix.O_NOFOLLOW)
	if err == unix.EXDEV {
		return e, nil, refusal.Of(refusal.LinkOnPathOutside, refusal.OpRead, at.Shown, refusal.Facts{})
	}
	if err != nil {
		return e, nil, g.openErr(err, at)
	}
	defer unix.Close(pfd)
	if viaLink {
		// Only a race can put a link in the middle of a path the mount
		// walked component by component; answer for the real place.
		if _, err := g.landed(pfd, at, true); err != nil {
			return e, nil, err
		}
	}
	if err := unix.Fstat(pfd, &e.Stat); err != nil {
		return e, nil, ioErr(at.Shown, err)
	}
	if e.Stat.Mode&unix.S_IFMT != unix.S_IFLNK {
		if !e.Visible() {
			return e, nil, notAFile(at.Shown, KindOf(e.Stat.Mode))
		}
		if want == nil || viaLink || e.Stat.Mode&unix.S_IFMT != unix.S_IFREG || !want(&e.Stat) {
			clampToACL(pfd, true, &e.Stat)
			return e, nil, nil
		}
		f, err := g.reopen(pfd, p, &e.Stat)
		clampToACL(pfd, true, &e.Stat)
		return e, f, err
	}
	e.Link, err = g.linkEntry(pfd, at)
	return e, nil, err
}

// openListed is entry's way for a listed regular file that can be opened
// at once (see openNodev). A file whose verdict turns out to be known
// (want says no) has then been opened and closed unread, where the O_PATH
// way did not open it: what other watchers of the backing tree see is an
// open for reading, as of any reader (the watch's own marks take no
// opens). ok is false when this way does not answer: entry's usual way
// then decides, and reports, as if this had not been tried.
func (g *Guard) openListed(p Path, e *Entry, want func(*unix.Stat_t) bool) (*File, bool) {
	fd, ok := g.openNodev(p.Root, p.Rel, unix.O_NOFOLLOW, &e.Stat)
	if !ok {
		e.Stat = unix.Stat_t{}
		return nil, false
	}
	if !want(&e.Stat) {
		clampToACL(fd, false, &e.Stat)
		unix.Close(fd)
		return nil, true
	}
	f := opened(fd, p, &e.Stat)
	clampToACL(fd, false, &e.Stat)
	return f, true
}

// openNodev opens rel beneath root for reading at once, where no device
// can be opened: the root's own mount when it has nodev, else the root's
// view (view.go). That is instead of resolving it with O_PATH, fstat'ing
// that and reopening it through /proc/self/fd: a cold listing decides
// every file it shows, so those two extra calls per file would weigh on
// every first walk of a tree. O_PATH is there so that a device or a FIFO
// is never opened; here a device cannot be (the kernel refuses any device
// open on a nodev mount, before its driver sees it; RESOLVE_NO_XDEV keeps
// the open on the one mount), and O_NONBLOCK keeps a FIFO from blocking (it is
// opened and closed at once). It returns the descriptor and its stat
// (into st) only for a regular file reached without a symbolic link;
// otherwise ok is false, nothing is left open, and the caller's O_PATH way
// decides and reports as before. flags adds O_NOFOLLOW for a caller that
// must not follow a final link.
func (g *Guard) openNodev(root *Root, rel string, flags uint64, st *unix.Stat_t) (fd int, ok bool) {
	on := root.oneOpen(rel)
	if on == nil {
		return -1, false
	}
	fd, _, err := g.openOn(root, on, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|flags, false)
	if err != nil {
		return -1, false
	}
	if unix.Fstat(fd, st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, false
	}
	return fd, true
}

// linkEntry checks the symbolic link pfd, at p, and returns its text when
// it is admitted (see Entry).
func (g *Guard) linkEntry(pfd int, p Path) (string, error) {
	// The text read from this very link is what the kernel will follow,
	// from the link's directory in the view: that text, and only it, is
	// resolved and checked. Resolving the link's path a second time could
	// meet another link swapped in meanwhile, whose verdict would then be
	// served with this one's text.
	link, err := readlinkAt(pfd)
	if err != nil {
		return "", ioErr(p.Shown, err)
	}
	if g.credentialInName(link) {
		// The link's text is shown (readlink) as it is, not cleaned:
		// "d/ghp_…/../x" names x but shows the token.
		return "", refusal.Of(refusal.CredentialInName, refusal.OpRead, p.Shown, refusal.Facts{})
	}
	if filepath.IsAbs(link) {
		return "", refusal.Of(refusal.AbsoluteLink, refusal.OpRead, p.Shown, refusal.Facts{})
	}
	target := p.In(p.Root, filepath.Join(filepath.Dir(p.Rel), link))
	if target.Rel == ".." || strings.HasPrefix(target.Rel, "../") {
		return "", refusal.Of(refusal.LinkLeadsOutside, refusal.OpRead, p.Shown, refusal.Facts{})
	}
	if g.Denied(p.Root, target.Rel) {
		return "", g.deniedErr(p.Shown)
	}
	tfd, _, err := g.open(p.Root, target.Rel, unix.O_PATH)
	if err == unix.EXDEV {
		return "", refusal.Of(refusal.LinkLeadsOutside, refusal.OpRead, p.Shown, refusal.Facts{})
	}
	if err != nil {
		return "", g.openErr(err, target)
	}
	defer unix.Close(tfd)
	if _, err := g.landed(tfd, p, true); err != nil {
		return "", err
	}
	var tst unix.Stat_t
	if err := unix.Fstat(tfd, &tst); err != nil {
		return "", ioErr(p.Shown, err)
	}
	if k := tst.Mode & unix.S_IFMT; k != unix.S_IFREG && k != unix.S_IFDIR {
		return "", notAFile(p.Shown, KindOf(tst.Mode))
	}
	return link, nil
}

func readlinkAt(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// DirEntry is one visible name in a directory listing.
type DirEntry struct {
	Name string
	Ino  uint64
	Mode uint32 // file type bits only (S_IFREG, S_IFDIR, S_IFLNK)
	// Stat, when set, is the entry's own stat as Entry returned it: the
	// admission of a listing's files (admit.Shown) decides each on it,
	// and the mount hands the same to the kernel rather than resolving
	// the name again a moment later.
	Stat *unix.Stat_t
}

// List returns the visible entries of the directory rel beneath root, in
// directory order. Hidden entries are simply absent. The file type comes
// from getdents, so plain files and directories cost no stat; only
// symbolic links (and entries of unknown type) get the full Entry check.
func (g *Guard) List(root *Root, rel string) ([]DirEntry, error) {
	return g.listAtMost(root, rel, 0)
}

// ErrTooManyEntries is a listing stopped at its bound: the directory holds
// more entries than one answer may.
var ErrTooManyEntries = errors.New("more entries than one listing takes")

// listAtMost is List, stopped with ErrTooManyEntries past max listed
// entries (0: no bound), so a directory of any size costs a bounded read.
func (g *Guard) listAtMost(root *Root, rel string, max int) ([]DirEntry, error) {
	at := root.At(rel)
	if rel != "." && g.Denied(root, rel) {
		return nil, g.deniedErr(at.Shown)
	}
	fd, viaLink, err := g.open(root, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		if err == unix.EXDEV {
			return nil, refusal.Of(refusal.LinkOnPathOutside, refusal.OpRead, at.Shown, refusal.Facts{})
		}
		return nil, g.openErr(err, at)
	}
	defer unix.Close(fd)
	if viaLink {
		// Listed where it really is: a link on the way is judged there.
		real, err := g.landed(fd, at, true)
		if err != nil {
			return nil, err
		}
		root, rel = real.Root, real.Rel
	} else {
		root.noteMount(fd)
	}
	rules, ok := g.entryRules(root, rel)
	if !ok {
		return nil, nil // the root itself is denied (below it, Denied refused above): so is every entry
	}
	var out []DirEntry
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, ioErr(at.Shown, err)
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) > 0; {
			ino, typ, name, reclen := parseDirent(b)
			b = b[reclen:]
			if name == "." || name == ".." {
				continue
			}
			child := name
			if rel != "." {
				child = rel + "/" + name
			}
			if g.deniedIn(root, rules, name, child) {
				continue
			}
			mode := uint32(0)
			switch typ {
			case unix.DT_REG:
				mode = unix.S_IFREG
			case unix.DT_DIR:
				mode = unix.S_IFDIR
			case unix.DT_LNK, unix.DT_UNKNOWN:
				e, err := g.Entry(root, child)
				if err != nil || !e.Visible() {
					continue
				}
				mode = e.Stat.Mode & unix.S_IFMT
			default:
				continue // FIFOs, sockets, devices are never listed
			}
			if max > 0 && len(out) >= max {
				return nil, ErrTooManyEntries
			}
			out = append(out, DirEntry{Name: name, Ino: ino, Mode: mode})
		}
	}
}

// parseDirent decodes one linux_dirent64 record.
func parseDirent(b []byte) (ino uint64, typ uint8, name string, reclen int) {
	ino = binary.NativeEndian.Uint64(b[0:8])
	reclen = int(binary.NativeEndian.Uint16(b[16:18]))
	typ = b[18]
	nameb := b[19:reclen]
	if i := bytes.IndexByte(nameb, 0); i >= 0 {
		nameb = nameb[:i]
	}
	return ino, typ, string(nameb), reclen
}

// Listing is a directory a caller named, resolved and listed.
type Listing struct {
	Root    *Root
	Rel     string // real path relative to Root
	Real    string // real absolute path
	Shown   string // the path in the caller's view
	Entries []DirEntry
}

// Path is the directory listed: where it really is, shown as named.
func (l *Listing) Path() Path { return Path{Root: l.Root, Rel: l.Rel, Shown: l.Shown} }

// ListDir resolves name against cwd as Open does and lists the directory
// it names: a symbolic link on the way is followed beneath the root and
// judged where it lands (deny rules there, the same root). A link that
// leaves the root is refused, as for a file.
func (g *Guard) ListDir(name, cwd string, max int) (*Listing, error) {
	p, err := g.Locate(name, cwd)
	if err != nil {
		return nil, err
	}
	if p.Rel != "." && g.Denied(p.Root, p.Rel) {
		return nil, g.deniedErr(p.Shown)
	}
	pfd, viaLink, err := g.open(p.Root, p.Rel, unix.O_PATH|unix.O_DIRECTORY)
	switch {
	case err == unix.EXDEV:
		return nil, refusal.Of(refusal.DirLeadsOutside, refusal.OpRead, p.Shown, refusal.Facts{})
	case err == unix.ENOTDIR:
		return nil, refusal.Of(refusal.NotDirectory, refusal.OpRead, p.Shown, refusal.Facts{})
	case err != nil:
		return nil, g.openErr(err, p)
	}
	defer unix.Close(pfd)
	if viaLink {
		if p, err = g.landed(pfd, p, true); err != nil {
			return nil, err
		}
	}
	ents, err := g.listAtMost(p.Root, p.Rel, max)
	if err == ErrTooManyEntries {
		return nil, refusal.Of(refusal.DirTooLarge, refusal.OpRead, p.Shown, refusal.Facts{Limit: int64(max)})
	}
	if err != nil {
		return nil, err
	}
	return &Listing{Root: p.Root, Rel: p.Rel, Real: p.Real(), Shown: p.Shown, Entries: ents}, nil
}
