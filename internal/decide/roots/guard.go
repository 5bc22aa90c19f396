// Package roots is the one place that decides whether a path may be read.
//
// A Guard holds an O_PATH descriptor for each allowed root and resolves
// every name beneath one of them with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_MAGICLINKS), so a symlink or ".." can never climb out, and a
// component swapped for a symlink mid-walk makes the open fail instead of
// escaping. Callers get an open handle and the identity of what was opened,
// never a yes/no they would have to act on later: there is no gap between
// the check and the use.
//
// Deny rules are checked on the path as the caller named it and on the real
// path of what was actually opened. A named denied path answers DENIED (the
// caller already knows the name, so echoing it leaks nothing); listings and
// suggestions never show a denied name at all.
package roots

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/sniff"

	"golang.org/x/sys/unix"
)

// Guard enforces one policy's roots and deny rules.
type Guard struct {
	pol   *policy.Policy
	roots []*Root
	// as, when set, performs every path-based system call (open, the
	// reopen of an O_PATH descriptor, a symlink walk) with a caller's
	// rights; nil is the process's own.
	as Access
	// denials is shared by the guards As makes.
	denials *denials
	// denyPaths is the policy's [deny] paths, folded when its rules fold;
	// foldedDenyPaths, folded always, for roots that fold when the policy
	// does not (see folds); absGlobs: some deny glob is absolute.
	denyPaths, foldedDenyPaths []string
	absGlobs                   bool
	// names finds credentials in names (credentialInName): nil when the
	// policy masks none.
	names *sniff.Detector
}

// Access runs file-system work with some identity's rights (a
// *caller.Caller does it with the caller's fsuid, fsgid and groups).
type Access interface {
	Do(func() error) error
}

// As returns a guard over the same roots whose every path-based system call
// is made with a's rights, so the kernel checks permissions for whoever a
// stands for. Descriptors already open are shared; only the original guard
// may be closed.
func (g *Guard) As(a Access) *Guard {
	cp := *g
	cp.as = a
	return &cp
}

// Do runs fn with the guard's access (the caller's rights, or the process's
// own): what a front end does on a descriptor the guard handed it, such as
// creating a temporary file in an opened directory, must run here.
func (g *Guard) Do(fn func() error) error {
	if g.as == nil {
		return fn()
	}
	return g.as.Do(fn)
}

// open resolves rel beneath root with the guard's access.
func (g *Guard) open(root *Root, rel string, flags uint64) (fd int, viaLink bool, err error) {
	return g.openOn(root, &root.rfd, rel, flags, true)
}

// openOn is open beneath on, the root's descriptor or its view (see
// Root.openOn for links).
func (g *Guard) openOn(root *Root, on *rootFD, rel string, flags uint64, links bool) (fd int, viaLink bool, err error) {
	derr := g.Do(func() error {
		fd, viaLink, err = root.openOn(on, rel, flags, links)
		return nil
	})
	if derr != nil {
		return -1, false, derr
	}
	return fd, viaLink, err
}

// Root is an allowed root with its open directory descriptor.
type Root struct {
	Name string // the root's name: its directory name in a multi-root mount
	Path string // absolute path as configured
	Real string // symlink-free path; what fd refers to
	Dev  uint64 // device of the root directory
	Ino  uint64 // its inode
	// crossMounts lets resolution enter mount points below the root; by
	// default a bind mount inside a root is a wall (RESOLVE_NO_XDEV), so
	// binding /etc under a root does not put /etc in the view.
	crossMounts bool
	rfd         rootFD
	// nodev: the root's mount has nodev, as its last listing found it
	// (see noteMount). Then no device can be opened through it, so a
	// listed file is opened at once, not first with O_PATH (see entry).
	nodev atomic.Bool
	// view, when not nil, is the root's private nodev view (view.go),
	// through which a file is opened at once on a mount without nodev;
	// beneath caches the mount points beneath the root it must not show.
	view    *rootFD
	beneath atomic.Pointer[beneath]
	// caseFolds: a directory beneath the root may fold case (see
	// mayFoldCase), so its names are compared folded whatever the policy.
	caseFolds bool
	// walked is what the last walk for repositories found (hookscan.go).
	walked repoCache
}

// noteMount records whether the mount of fd, a directory beneath the
// root reached without crossing a mount point, has nodev. Each listing
// asks again, so after a remount that drops nodev the next listing's
// files are opened through the root's view instead (or with O_PATH first
// where it has none).
func (r *Root) noteMount(fd int) {
	var sfs unix.Statfs_t
	r.nodev.Store(!r.crossMounts && unix.Fstatfs(fd, &sfs) == nil && sfs.Flags&unix.ST_NODEV != 0)
}

// CrossMounts reports whether resolution beneath the root enters mount
// points below it.
func (r *Root) CrossMounts() bool { return r.crossMounts }

// ReadOnly reports whether the root's file system is mounted read-only
// now, so every write and edit beneath it would fail with EROFS: a
// project bound read-only into the daemon's container, where only the
// agent's view was meant to be.
func (r *Root) ReadOnly() bool {
	fd, err := r.rfd.hold()
	if err != nil {
		return false
	}
	defer r.rfd.drop()
	var sfs unix.Statfs_t
	return unix.Fstatfs(fd, &sfs) == nil && sfs.Flags&unix.ST_RDONLY != 0
}

// New opens every root of the policy.
func New(p *policy.Policy) (*Guard, error) {
	g := &Guard{pol: p, denials: &denials{}}
	if p.Secrets.Masks() {
		d, err := sniff.NewDetector(p.Secrets)
		if err != nil {
			return nil, err
		}
		g.names = d
	}
	for _, d := range p.Deny.Paths {
		folded := "/" + strings.Join(policy.SplitName(d, true), "/")
		g.foldedDenyPaths = append(g.foldedDenyPaths, folded)
		if p.Folds() {
			d = folded
		}
		g.denyPaths = append(g.denyPaths, d)
	}
	for _, gl := range p.Deny.Globs {
		g.absGlobs = g.absGlobs || gl.Absolute()
	}
	for _, pr := range p.Roots {
		fd, err := unix.Open(pr.Real, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("root %s: %w", pr.Path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			g.Close()
			return nil, fmt.Errorf("root %s: %w", pr.Path, err)
		}
		r := &Root{Name: pr.Name, Path: pr.Path, Real: pr.Real, Dev: st.Dev, Ino: st.Ino, crossMounts: pr.CrossMounts, rfd: rootFD{fd: fd}}
		r.noteMount(fd)
		r.caseFolds = mayFoldCase(fd, r.crossMounts)
		if !r.crossMounts {
			if vfd, err := openView(fd); err == nil {
				r.view = &rootFD{fd: vfd}
			}
		}
		g.roots = append(g.roots, r)
	}
	return g, nil
}

// Close releases the root descriptors, each once the calls in flight on
// it are done (see rootFD); calls after Close fail.
func (g *Guard) Close() error {
	for _, r := range g.roots {
		r.rfd.close()
		if r.view != nil {
			r.view.close()
		}
	}
	return nil
}

// Policy returns the policy the guard enforces.
func (g *Guard) Policy() *policy.Policy { return g.pol }

// Roots returns the allowed roots in policy order.
func (g *Guard) Roots() []*Root { return g.roots }

// Denied reports whether the entry rel beneath root is matched by a deny
// rule, on its root-relative path or its absolute path. rel is clean and
// relative ("." for the root itself).
func (g *Guard) Denied(root *Root, rel string) bool {
	k := deniedKey{root, rel}
	if denied, ok := g.denials.get(k); ok {
		return denied
	}
	// The one name decision: deny rules, fsguard's temporary files, and a
	// name holding a credential.
	denied := g.credentialInName(rel) || g.deniedAbs(root, rel, filepath.Join(root.Real, rel)) ||
		(root.Path != root.Real && g.deniedAbs(root, rel, filepath.Join(root.Path, rel)))
	g.denials.put(k, denied)
	return denied
}

func (g *Guard) deniedAbs(root *Root, rel, abs string) bool {
	if IsTemp(filepath.Base(rel)) {
		return true // a write in progress, or one a kill left behind
	}
	fold := g.folds(root)
	if len(g.denyPaths) > 0 {
		cmp, paths := abs, g.denyPaths
		if fold {
			cmp, paths = "/"+strings.Join(policy.SplitName(abs, true), "/"), g.foldedDenyPaths
		}
		for _, d := range paths {
			if cmp == d || strings.HasPrefix(cmp, d+"/") || d == "/" {
				return true
			}
		}
	}
	return policy.MatchGlobs(g.pol.Deny.Globs, rel, abs, fold) >= 0
}

// TempMark is in the name of every temporary file fsguard's writes make
// ("." + base + TempMark + 12 hex digits).
const TempMark = ".fsguard-"

// IsTemp reports whether name is one of fsguard's temporary files: never
// shown, through the mount or to read — its content is not a version of
// anything yet.
func IsTemp(name string) bool {
	i := strings.LastIndex(name, TempMark)
	if i < 1 || name[0] != '.' || len(name)-i-len(TempMark) != 12 {
		return false
	}
	for _, c := range name[i+len(TempMark):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// WriteDenied refuses a write to p when a [write] deny rule matches it, by
// its configured or its real path. The refusal names the rule, so the
// agent knows it is policy and not a transient failure.
func (g *Guard) WriteDenied(p Path) error {
	for _, base := range []string{p.Root.Real, p.Root.Path} {
		if i := policy.MatchGlobs(g.pol.Write.DenyGlobs, p.Rel, filepath.Join(base, p.Rel), g.folds(p.Root)); i >= 0 {
			rule := g.pol.Write.DenyGlobs[i].String()
			return refusal.Of(refusal.WriteDeniedRule, refusal.OpWrite, p.Shown, refusal.Facts{Rule: rule})
		}
	}
	return nil
}

// Locate resolves a name lexically: cleaned and made absolute against cwd,
// then placed in the root that contains it. It touches no file. The
// returned path is shown as the absolute path in the caller's own view;
// a refusal of a name that was valid still returns it, with no root.
func (g *Guard) Locate(name, cwd string) (Path, error) {
	if err := ValidateName(name); err != nil {
		return Path{}, err
	}
	abs := name
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(cwd, abs)
	}
	abs = filepath.Clean(abs)
	if policy.Dangerous(abs) {
		return Path{Shown: abs}, refusal.Of(refusal.DangerousName, refusal.OpRead, abs, refusal.Facts{})
	}
	root, rel := g.rootOf(abs)
	if root == nil {
		return Path{Shown: abs}, g.outside(abs)
	}
	return Path{Root: root, Rel: rel, Shown: abs}, nil
}

// rootOf finds the innermost root containing abs, by configured or real path.
func (g *Guard) rootOf(abs string) (*Root, string) {
	var best *Root
	bestRel, bestLen := "", -1
	for _, r := range g.roots {
		for _, base := range []string{r.Path, r.Real} {
			if rel, ok := Within(base, abs); ok && len(base) > bestLen {
				best, bestRel, bestLen = r, rel, len(base)
			}
		}
	}
	return best, bestRel
}

// Within returns abs relative to base ("." for base itself), and whether
// abs is base or beneath it. Both are clean absolute paths.
func Within(base, abs string) (string, bool) {
	if abs == base {
		return ".", true
	}
	if base == "/" {
		return abs[1:], true
	}
	if strings.HasPrefix(abs, base+"/") {
		return abs[len(base)+1:], true
	}
	return "", false
}

func (g *Guard) outside(shown string) error {
	var names []string
	for _, r := range g.roots {
		names = append(names, r.Path)
	}
	return refusal.Of(refusal.OutsideRoots, refusal.OpRead, shown, refusal.Facts{Roots: names})
}

// ValidateName refuses names no file can have or no agent should send.
func ValidateName(name string) error {
	const maxName = 4096
	switch {
	case strings.TrimSpace(name) == "":
		return refusal.Of(refusal.EmptyPath, refusal.OpRead, name, refusal.Facts{})
	case strings.ContainsRune(name, 0):
		return refusal.Of(refusal.NULInPath, refusal.OpRead, strings.ReplaceAll(name, "\x00", `\0`), refusal.Facts{})
	case !validUTF8(name):
		return refusal.Of(refusal.BadUTF8Path, refusal.OpRead, strings.ToValidUTF8(name, "\uFFFD"), refusal.Facts{})
	case len(name) > maxName:
		return refusal.Of(refusal.LongPath, refusal.OpRead, name[:64]+"...", refusal.Facts{Limit: maxName})
	}
	return nil
}

// Open resolves name against cwd and opens it for reading if, and only if,
// the policy admits it. The result is a regular file.
func (g *Guard) Open(name, cwd string) (*File, error) {
	p, err := g.Locate(name, cwd)
	if err != nil {
		return nil, err
	}
	return g.OpenIn(p)
}

// openOn resolves rel beneath on, the root's descriptor or its view. It
// first forbids symlinks altogether: in the common case (no link on the
// path) the real path is then known without asking the kernel for it.
// With links, a path that meets a symbolic link is resolved again
// following it, within the root, and viaLink says so; without, it fails
// with ELOOP.
func (r *Root) openOn(on *rootFD, rel string, flags uint64, links bool) (fd int, viaLink bool, err error) {
	dirfd, err := on.hold()
	if err != nil {
		return -1, false, err
	}
	defer on.drop()
	var xdev uint64 = unix.RESOLVE_NO_XDEV
	if r.crossMounts {
		xdev = 0
	}
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | xdev}
	fd, err = openat2(dirfd, rel, &how)
	if err != unix.ELOOP || !links {
		return fd, false, err
	}
	how.Resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS | xdev
	fd, err = openat2(dirfd, rel, &how)
	return fd, true, err
}

// openat2 retries a resolution the kernel asks to have retried (EAGAIN:
// a rename elsewhere raced it; EINTR) a bounded number of times. EAGAIN is
// also the answer to an O_NONBLOCK open while a lease on the file is being
// broken, for up to lease-break-time (45 s): a file whose owner holds a
// write lease must be refused, not spun on. A full descriptor table is
// relieved and retried (retryOpen).
func openat2(dirfd int, rel string, how *unix.OpenHow) (fd int, err error) {
	for range 16 {
		fd, err = retryOpen(func() (int, error) { return unix.Openat2(dirfd, rel, how) })
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
	return -1, err
}

// landed is the one check after a resolution crossed a symbolic link: where
// the open descriptor fd, opened for p, really is — in which root (p's
// own when within, else any), at which path — and that no deny rule
// matches it there. The answer is that place, still shown as p. A
// descriptor beneath a root's descriptor but not under its path (a bind
// mount, a root moved under us) is refused rather than guessed at.
func (g *Guard) landed(fd int, p Path, within bool) (Path, error) {
	real, err := realPath(fd)
	if err != nil {
		return Path{}, ioErr(p.Shown, err)
	}
	r, rel := g.rootOf(real)
	if r == nil || (within && r != p.Root) {
		return Path{}, g.outside(p.Shown)
	}
	if g.Denied(r, rel) {
		return Path{}, g.deniedErr(p.Shown)
	}
	return p.In(r, rel), nil
}

// realPath asks the kernel where an open descriptor really is.
func realPath(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd), buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// OpenIn opens p for reading; p.Shown names it in messages.
func (g *Guard) OpenIn(p Path) (*File, error) {
	return g.openIn(p, 0)
}

func (g *Guard) openIn(p Path, hops int) (*File, error) {
	if g.Denied(p.Root, p.Rel) {
		return nil, g.deniedErr(p.Shown)
	}
	var st unix.Stat_t
	if fd, ok := g.openNodev(p.Root, p.Rel, 0, &st); ok {
		return opened(fd, p, &st), nil
	}
	// O_PATH first: opening a FIFO or a device for reading can block or have
	// side effects; an O_PATH descriptor can be fstat'ed and does neither.
	pfd, viaLink, err := g.open(p.Root, p.Rel, unix.O_PATH)
	if err == unix.EXDEV {
		return g.openAcross(p, hops)
	}
	if err != nil {
		return nil, g.openErr(err, p)
	}
	defer unix.Close(pfd)
	if viaLink {
		if p, err = g.landed(pfd, p, false); err != nil {
			return nil, err
		}
	}
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, ioErr(p.Shown, err)
	}
	if kind := KindOf(st.Mode); kind != "regular file" {
		return nil, notAFile(p.Shown, kind)
	}
	return g.reopen(pfd, p, &st)
}

// reopen opens for reading the regular file the O_PATH descriptor pfd
// holds, whose stat is st, at p. /proc/self/fd/N of an O_PATH descriptor
// is a magic link to that open file, not a path that could have changed,
// so st describes what is opened here and needs no second fstat (this
// runs on every read through the mount). With a caller's access, this
// open is where the kernel checks the file's mode bits and ACL against
// the caller.
func (g *Guard) reopen(pfd int, p Path, st *unix.Stat_t) (*File, error) {
	fd := -1
	err := g.Do(func() (err error) {
		fd, err = Reopen(pfd, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK)
		return err
	})
	if err != nil {
		return nil, g.openErr(err, p)
	}
	return opened(fd, p, st), nil
}

// opened is the File for fd, a regular file opened for reading at p whose
// stat is st: every way of opening one ends here.
func opened(fd int, p Path, st *unix.Stat_t) *File {
	return newFile(fd, File{Shown: p.Shown, Root: p.Root, Rel: p.Rel, Real: p.Real(), Stat: *st})
}

// openAcross handles a path that RESOLVE_BENEATH refused: an absolute
// symlink, or one that leaves the root. It is admitted only when the target
// lies inside an allowed root (this one or another); the final open is
// again beneath that root, so a race can only make it fail, never widen it.
func (g *Guard) openAcross(p Path, hops int) (*File, error) {
	var target string
	err := g.Do(func() (err error) {
		target, err = filepath.EvalSymlinks(p.Real())
		return err
	})
	if err != nil {
		switch e := unwrap(err); e {
		case unix.ENOENT, unix.ENOTDIR, unix.ELOOP, unix.EACCES:
			return nil, g.openErr(e, p)
		}
		// EINVAL and the like: a link became something else mid-walk.
		return nil, refusal.Of(refusal.ChangedResolving, refusal.OpRead, p.Shown, refusal.Facts{})
	}
	if policy.Dangerous(target) {
		return nil, refusal.Of(refusal.LeadsDangerous, refusal.OpRead, p.Shown, refusal.Facts{})
	}
	r2, rel2 := g.rootOf(target)
	if r2 == nil || hops > 0 {
		return nil, refusal.Of(refusal.LeadsOutside, refusal.OpRead, p.Shown, refusal.Facts{})
	}
	return g.openIn(p.In(r2, rel2), hops+1)
}

// openErr is the refusal of p for err, an error of resolving or opening it.
func (g *Guard) openErr(err error, p Path) error {
	if err == errClosed {
		return refusal.Of(refusal.PolicyReloaded, refusal.OpRead, p.Shown, refusal.Facts{})
	}
	switch err {
	case unix.ENOENT, unix.ENOTDIR:
		return notFound(p)
	case unix.ELOOP:
		return refusal.Of(refusal.LinkLoop, refusal.OpRead, p.Shown, refusal.Facts{})
	case unix.EACCES, unix.EPERM:
		return refusal.Of(refusal.NoPermission, refusal.OpRead, p.Shown, refusal.Facts{})
	case unix.ENAMETOOLONG:
		return refusal.Of(refusal.NameTooLong, refusal.OpRead, p.Shown, refusal.Facts{})
	case unix.ENXIO, unix.ENODEV, unix.EOPNOTSUPP:
		return notAFile(p.Shown, "special file")
	}
	return ioErr(p.Shown, err)
}

func unwrap(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	if le, ok := err.(*os.LinkError); ok {
		return le.Err
	}
	return err
}

// deniedErr is the refusal of a denied path: a name holding a credential
// says so, any other is a deny rule's.
func (g *Guard) deniedErr(shown string) error {
	reason := refusal.DeniedName
	if g.credentialInName(shown) {
		reason = refusal.CredentialInName
	}
	return refusal.Of(reason, refusal.OpRead, shown, refusal.Facts{})
}

// minCredentialName is the shortest name looked into for a credential:
// no family's token is shorter.
const minCredentialName = 16

// credentialInName reports whether a name on path (any of its components)
// holds a credential, as the policy's [secrets] finds them in text: such
// a name is denied like a deny rule's, since the name is what shows it and
// a name cannot be masked without breaking every path through it.
func (g *Guard) credentialInName(path string) bool {
	if g.names == nil || len(path) < minCredentialName {
		return false
	}
	for name := range strings.SplitSeq(path, "/") {
		if len(name) >= minCredentialName && len(g.names.Find([]byte(name))) > 0 {
			return true
		}
	}
	return false
}

// ErrDirectory is the cause of a NOT_A_FILE refusal of a directory: a
// front end that lists directories (fsguard read DIR) asks errors.Is.
var ErrDirectory = errors.New("a directory")

func notAFile(shown, kind string) error {
	if kind == "directory" {
		return refusal.Of(refusal.Directory, refusal.OpRead, shown, refusal.Facts{}).Because(ErrDirectory)
	}
	return refusal.Of(refusal.SpecialFile, refusal.OpRead, shown, refusal.Facts{Kind: kind})
}

func ioErr(shown string, err error) error {
	return refusal.Of(refusal.IOFailed, refusal.OpRead, shown, refusal.Facts{Detail: unwrap(err).Error()}).Because(err)
}

// KindOf names a file type for messages.
func KindOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "regular file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symbolic link"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	}
	return "unknown file type"
}
