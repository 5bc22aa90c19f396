package mount

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/mountinfo"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/fsguard/fsguard/internal/view/warm"
	"github.com/fsguard/fsguard/internal/view/watch"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Config is what a mount needs.
type Config struct {
	Policy     *policy.Policy
	MountPoint string
	// AllowOther lets other users (the container's) use the mount. The
	// kernel then checks each caller's uid/gid against the backing modes
	// (default_permissions), so nobody reads through the mount what their
	// own uid could not read on the host.
	AllowOther bool
	Audit      Auditor
	// Admit decides whether a file version may be shown, and with which
	// masks; the daemon shares its admit.Decider with the control socket,
	// so both give one verdict. Nil: the mount's own.
	Admit Admitter
	Debug bool
	// Latency, when set, is told how long each served operation took.
	Latency func(op string, d time.Duration)
	// Log receives the mount's own notices (which watch is in use, or
	// that none could be set). Nil: discarded.
	Log *slog.Logger
	// Event, when set, is told of the mount's own events by name
	// ("root_missing", "root_reopened"), for metrics.
	Event func(name string)
	// Prefetched, when set, is told of each push of a small file into the
	// page cache after a listing named it: "pushed", "dropped" (the queue
	// was full), "unknown" (the kernel did not know the inode in time),
	// "changed" (the file moved while pushed: invalidated) or "held" (a
	// refill found the kernel still held it whole: not pushed again).
	Prefetched func(result string)
	// ListedAhead, when set, is told of the end of each directory listed
	// ahead of the walker (see warm's ahead): "used", "stale" (something
	// changed: listed afresh) or "unused".
	ListedAhead func(result string)
	// Unrecordable, when set, is asked before a file's bytes are served
	// (an open in daemon mode, a READ, a push into the page cache): a
	// refusal while what is served cannot be recorded and the policy
	// requires it ([journal] required), nil otherwise. The daemon's is
	// the one rule its socket applies too.
	Unrecordable func(path string) error
	// RefillAfter and RoundGap, when set, replace the warming engine's
	// own (see warm.Config).
	RefillAfter, RoundGap func() time.Duration
}

// Admitter is the admission the mount asks of every name and version it
// shows (admit.Decider's methods of those names).
type Admitter interface {
	Decide(g *roots.Guard, f *roots.File) (sniff.Result, error)
	Visible(g *roots.Guard, p roots.Path, st *unix.Stat_t) error
	Shown(g *roots.Guard, dir roots.Path, ents []roots.DirEntry, skip func(rel string) bool, keep *admit.Keep) []roots.DirEntry
	ShownEntry(g *roots.Guard, p roots.Path) (roots.Entry, error)
	// VisibleByName, EntryByName and Undecided: a name is listed and
	// looked up by its name and place, its content decided when read
	// (see lazy.go).
	VisibleByName(g *roots.Guard, p roots.Path, st *unix.Stat_t) error
	EntryByName(g *roots.Guard, p roots.Path) (roots.Entry, error)
	Undecided(g *roots.Guard, st *unix.Stat_t) bool
	// Check and Forget: the bytes a READ serves are checked as admission
	// checks a file (see admit.Check).
	Check(g *roots.Guard, f *roots.File, id fileid.Identity, masks []sniff.Mask, w admit.Window) bool
	Forget(g *roots.Guard, id fileid.Identity)
}

// Server is a live mount.
type Server struct {
	srv  *fuse.Server
	v    *view
	mp   string
	root fs.InodeEmbedder
	log  *slog.Logger

	onEvent   func(string)
	relieve   func() // unregisters the descriptor-pressure reliever
	blind     atomic.Pointer[Blind]
	sighted   atomic.Pointer[Sighted]
	stopRoots chan struct{}
	stopOnce  sync.Once
	closeOnce sync.Once // the guard, once unmounted

	// reloadMu makes reloads (a signal, a root that moved) one at a time.
	reloadMu sync.Mutex

	watchMu sync.Mutex
	watcher *watch.Watcher // nil: no watch; the short timeouts stand in
	// live is set once the kernel answers the mount: before that there is
	// nothing cached to invalidate, and the tree is still being set up.
	live atomic.Bool
}

// fallbackTimeout bounds the kernel's caching of names and attributes
// when no watch of the backing tree could be set: a change then shows
// within this long instead of within the configured timeouts.
const fallbackTimeout = time.Second

// maxRead is the largest READ the kernel sends (max_pages follows it).
// Large READs make a first read of a big file a fraction of the round
// trips, and guarded opens, of the 128 KiB default. It stays under 1 MiB
// because go-fuse splices a reply through a pipe sized reply + header +
// one page, and a pipe's largest size (fs.pipe-max-size) is 1 MiB by
// default; a reply that does not fit is copied instead, and logged.
const maxRead = 1<<20 - 8<<10

// overlayfsMagic is statfs's f_type for overlayfs.
const overlayfsMagic = 0x794c7630

// Mount mounts the view and returns once the mount answers.
func Mount(cfg Config) (*Server, error) {
	mp, err := filepath.Abs(cfg.MountPoint)
	if err != nil {
		return nil, err
	}
	if err := ClearStale(mp); err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(mp); err == nil {
		mp = real
	}
	g, err := roots.New(cfg.Policy)
	if err != nil {
		return nil, err
	}
	if cfg.Admit == nil {
		cfg.Admit = admit.New(1 << 16)
	}
	v := &view{audit: cfg.Audit, admit: cfg.Admit, mountPoint: mp, devs: map[uint64]uint64{}, odd: map[idKey]uint64{}, nodes: map[uint64]*node{}, graves: map[uint64]grave{},
		kernelOpen: cfg.Policy.Mount.Open == "kernel", latency: cfg.Latency, unrecordable: cfg.Unrecordable, work: newWorkers(mp),
		lazy: make(chan lazyJob, maxUndecided)}
	if v.audit == nil {
		v.audit = LogLines{Log: slog.New(slog.NewJSONHandler(os.Stderr, nil))}
	}
	v.guard.Store(g)
	s := &Server{v: v, mp: mp, log: cfg.Log, onEvent: cfg.Event}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}

	if rs := g.Roots(); len(rs) == 1 {
		s.root = newBase(v, rs[0].Name, "/")
	} else {
		s.root = &top{v: v}
	}
	v.warm = warm.New(target{v, s}, warm.Config{
		MountPoint: mp, Budget: cfg.Policy.Mount.WarmMaxBytes,
		Prefetched: cfg.Prefetched, ListedAhead: cfg.ListedAhead, Event: s.event, Log: s.log,
		Done: v.work.ctx.Done(), RefillAfter: cfg.RefillAfter, RoundGap: cfg.RoundGap,
	})
	pol := cfg.Policy
	entry, attr := pol.Mount.EntryTimeout.Duration, pol.Mount.AttrTimeout.Duration
	// The watch is in place before the mount exists, so no change made
	// after the kernel first caches something can be missed.
	if err := s.startWatch(g); err != nil {
		entry, attr = min(entry, fallbackTimeout), min(attr, fallbackTimeout)
		s.log.Warn("no watch of the backing tree; the kernel caches names and attributes briefly instead, so changes show within the timeout",
			"err", err.Error(), "entry_timeout", entry.String(), "attr_timeout", attr.String())
	}
	opts := &fs.Options{
		NegativeTimeout: &entry,
		MountOptions: fuse.MountOptions{
			FsName:               "fsguard",
			Name:                 "fsguard",
			AllowOther:           cfg.AllowOther,
			Options:              []string{"default_permissions", "ro"},
			DirectMount:          os.Geteuid() == 0,
			DirectMountFlags:     syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV,
			EnableSymlinkCaching: true,
			MaxBackground:        64,
			MaxWrite:             maxRead,
			// No POSIX ACLs: the kernel would ask for each inode's ACL, a
			// round trip per file for every caller but its owner. The mode
			// bits shown stand for the backing ACL, never more permissive
			// (see roots.Entry.Stat).
			MaxStackDepth: stackDepth(g),
			Debug:         cfg.Debug,
		},
	}
	srv, err := serve(mp, s.root, opts, &v.replies)
	if err != nil {
		v.work.stop()
		s.stopWatch()
		g.Close()
		return nil, fmt.Errorf("mount %s: %w", mp, err)
	}
	s.srv = srv
	s.live.Store(true)
	// A full descriptor table closes the kept descriptors no READ uses,
	// so the open that met it can be retried.
	s.relieve = roots.OnDescriptorPressure(func() int {
		if c := s.v.open.Load(); c != nil {
			return c.evictIdle()
		}
		return 0
	})
	s.raiseReadahead()
	s.stopRoots = make(chan struct{})
	v.work.Go(s.watchRoots)
	v.work.Go(v.decideLazily)
	return s, nil
}

// serve mounts root on mp, as fs.Mount does, with the node bridge behind
// openless (see there).
func serve(mp string, root fs.InodeEmbedder, opts *fs.Options, r *replies) (*fuse.Server, error) {
	srv, err := fuse.NewServer(newOpenless(replying{fs.NewNodeFS(root, opts), r}), mp, &opts.MountOptions)
	if err != nil {
		return nil, err
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		return nil, err // the serve loop ends with the failed mount
	}
	return srv, nil
}

// raiseReadahead lets the kernel read ahead as far as one READ reaches.
// The kernel offers a new FUSE mount only its 128 KiB default at INIT, so
// it is raised afterwards through the mount's backing device (root only;
// without it reads are merely smaller).
func (s *Server) raiseReadahead() {
	dev, err := s.Dev()
	if err == nil {
		err = os.WriteFile("/sys/class/bdi/"+dev+"/read_ahead_kb", []byte(strconv.Itoa(maxRead>>10)), 0)
	}
	if err != nil {
		s.log.Info("readahead left at the kernel's default", "err", err.Error())
	}
}

// stackDepth is 2 when a root lives on overlayfs (a container's own
// filesystem): FUSE passthrough refuses a backing file deeper than the
// mount's declared stack depth, and one refusal turns passthrough off for
// the whole mount.
func stackDepth(g *roots.Guard) int {
	for _, r := range g.Roots() {
		var st unix.Statfs_t
		if r.Use(func(fd int) error { return unix.Fstatfs(fd, &st) }) == nil && st.Type == overlayfsMagic {
			return 2
		}
	}
	return 1
}

// Guard returns the guard in force now (it changes on Reload).
func (s *Server) Guard() *roots.Guard { return s.v.guard.Load() }

// Dev returns the mount's device number ("major:minor") from mountinfo,
// without touching the mount itself.
func (s *Server) Dev() (string, error) { return mountDev(s.mp) }

// mountDev is the device of the FUSE mount at mp, from mountinfo.
func mountDev(mp string) (string, error) {
	ents, err := mountinfo.Read(0)
	if err != nil {
		return "", err
	}
	dev := ""
	for _, e := range ents {
		if e.MountPoint == mp && strings.HasPrefix(e.FSType, "fuse") {
			dev = e.Dev
		}
	}
	if dev == "" {
		return "", fmt.Errorf("%s is not in mountinfo", mp)
	}
	return dev, nil
}

// startLister starts a lister child of the mount at mp (see
// warm.StartLister): call it from a thread locked for the child's life.
func startLister(mp string) (*warm.Lister, error) {
	dev, err := mountDev(mp)
	if err != nil {
		return nil, err
	}
	return warm.StartLister(mp, dev)
}

// MountPoint returns the absolute mount point.
func (s *Server) MountPoint() string { return s.mp }

// Wait blocks until the mount is gone.
func (s *Server) Wait() { s.srv.Wait() }

// Unmount unmounts; if the mount is busy it is detached (MNT_DETACH) and
// its connection aborted, so that a signal always ends the mount, and
// the daemon with it. The mount's own goroutines end first (it waits for
// them: see workers), and the roots it opened are closed once the mount
// is gone.
//
// A detached mount lives on for as long as anything holds it (a shell's
// working directory in it, a file open, in a container or not), and its
// connection with it: Wait would wait for as long. Aborted, the
// connection ends at once, and each later request of those holders fails
// (ENOTCONN), as it would once the daemon is gone.
func (s *Server) Unmount() error {
	s.stopRootWatch()
	s.v.work.stop()
	s.stopWatch()
	if s.relieve != nil {
		s.relieve()
	}
	if err := s.srv.Unmount(); err != nil {
		dev, _ := s.Dev() // before the detach takes the mount out of mountinfo
		if derr := unix.Unmount(s.mp, unix.MNT_DETACH); derr != nil {
			return fmt.Errorf("unmount %s: %v (detach: %v)", s.mp, err, derr)
		}
		_, minor, _ := strings.Cut(dev, ":")
		if aerr := abortConn(minor); aerr != nil {
			s.log.Warn("the mount was busy and is detached, but its connection could not be aborted: the daemon exits once nothing holds the mount", "mountpoint", s.mp, "err", aerr.Error())
		}
	}
	s.closeOnce.Do(func() { s.v.guard.Load().Close() })
	return nil
}

func (s *Server) event(name string) {
	if s.onEvent != nil {
		s.onEvent(name)
	}
}

func (s *Server) stopRootWatch() {
	s.stopOnce.Do(func() {
		if s.stopRoots != nil {
			close(s.stopRoots)
		}
	})
}

// Reload swaps in a new policy. The new guard is built first, so a policy
// whose roots cannot be opened leaves the old one in force. Names and
// attributes the kernel cached under the old policy are invalidated.
func (s *Server) Reload(p *policy.Policy) error {
	g, err := roots.New(p)
	if err != nil {
		return err
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	old := s.v.guard.Swap(g)
	s.stopWatch()
	if err := s.startWatch(g); err != nil {
		s.log.Warn("no watch of the backing tree after the reload; changes show only as the kernel's caches expire", "err", err.Error())
	}
	// Calls in flight on the old roots hold their descriptors; each is
	// closed when its last call is done (roots.rootFD).
	old.Close()
	// A listing made under the old guard is old: its READDIRPLUS hands
	// over names without entries from now on (see listing.Lookup).
	s.v.changes.Add(1)
	// A LOOKUP or listing that took the old guard may not have filed its
	// node in the tree yet: the walk would miss it, and what the old
	// policy decided would stand for the hour.
	if !s.v.replies.settle(settleBound) {
		s.log.Warn("a reload did not wait for every reply begun under the old policy; names it decided may show until they are looked up again", "waited", settleBound.String())
	}
	s.invalidate()
	return nil
}

// settleBound is how long a reload waits for the replies begun under the
// old policy (see replies.settle).
const settleBound = 10 * time.Second

// Invalidate tells the kernel to forget every name, attribute and page it
// holds of the mount: what it would serve from its caches is asked for
// again (the daemon calls it when the journal stops recording and the
// policy requires every read recorded).
func (s *Server) Invalidate() {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.invalidate()
}

// invalidate tells the kernel to forget every name, attribute and cached
// page it holds, so the next lookup or read of each asks the new policy.
func (s *Server) invalidate() {
	var walk func(n *fs.Inode, depth int)
	walk = func(n *fs.Inode, depth int) {
		if depth > 256 {
			return
		}
		for name, c := range n.Children() {
			walk(c, depth+1)
			c.NotifyContent(0, 0) // offset 0, length 0: the whole file
			n.NotifyEntry(name)
		}
	}
	walk(s.root.EmbeddedInode(), 0)
	s.v.absent.flush()
	if c := s.v.open.Load(); c != nil {
		c.clear()
	}
	s.root.EmbeddedInode().NotifyContent(0, 0) // the top's listing and times
}

// hidesMountPoint reports whether rel beneath r is the mount point itself:
// the daemon must never resolve a path into its own mount.
func (v *view) hidesMountPoint(r *roots.Root, rel string) bool {
	return filepath.Join(r.Real, rel) == v.mountPoint
}

// ClearStale detects a mount left behind by a killed daemon ("transport
// endpoint is not connected") and detaches it. A live mount at mp is an
// error: two daemons must not stack on one mount point.
func ClearStale(mp string) error {
	mounted, fstype := mountedAt(mp)
	var st unix.Stat_t
	err := unix.Stat(mp, &st)
	if err == nil && mounted {
		// stat may be answered from the kernel's attribute cache; statfs
		// always asks the daemon, so it tells a dead one.
		var sfs unix.Statfs_t
		err = unix.Statfs(mp, &sfs)
	}
	switch {
	case err == unix.ENOTCONN:
		abortDead(mp)
		if derr := unix.Unmount(mp, unix.MNT_DETACH); derr != nil {
			return fmt.Errorf("%s is a stale FUSE mount and detaching it failed: %v", mp, derr)
		}
		return nil
	case err != nil:
		return fmt.Errorf("mount point %s: %w", mp, err)
	case mounted && strings.HasPrefix(fstype, "fuse"):
		return fmt.Errorf("%s is already a live FUSE mount (%s); run 'fsguard unmount %s' first", mp, fstype, mp)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("mount point %s is not a directory", mp)
	}
	return nil
}

// abortDead makes a dead daemon's mount stop serving the past. The kernel
// keeps serving pages and names it cached from a killed daemon — to a
// container that still has the old mount bound, or a process whose
// current directory is in it — long after the daemon is gone, for as
// long as the kernel keeps them. Detaching the mount does not touch them,
// and neither does aborting the connection alone (checked: a cached file
// still reads).
// Aborting the connection (/sys/fs/fuse/connections/N/abort, so nothing
// new is answered) and then dropping the clean page, dentry and inode
// caches does: every access to the old mount then fails with ENOTCONN.
// Dropping caches is global; it happens only here, when a daemon is
// restarted after a crash.
func abortDead(mp string) {
	// The connection is named by the mount's device minor, read from
	// mountinfo: a stat could meet the dead connection itself.
	minor := ""
	ents, _ := mountinfo.Read(0)
	for _, e := range ents {
		if e.MountPoint == mp {
			_, minor, _ = strings.Cut(e.Dev, ":")
		}
	}
	if abortConn(minor) != nil {
		return
	}
	unix.Sync()
	os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0)
}

// abortConn aborts the FUSE connection whose device minor is minor
// (/sys/fs/fuse/connections/N/abort): nothing more is answered on it, and
// the daemon's reads of it end.
func abortConn(minor string) error {
	if minor == "" {
		return errors.New("the mount's device is not known")
	}
	conn := filepath.Join("/sys/fs/fuse/connections", minor)
	if _, err := os.Stat("/sys/fs/fuse/connections"); err == nil {
		if _, err := os.Stat(conn); err != nil {
			unix.Mount("none", "/sys/fs/fuse/connections", "fusectl", 0, "") // fusectl is not always mounted
		}
	}
	return os.WriteFile(filepath.Join(conn, "abort"), []byte("1"), 0)
}

// mountedAt reports whether something is mounted at mp, and its type.
func mountedAt(mp string) (bool, string) {
	ents, _ := mountinfo.Read(0)
	found, fstype := false, ""
	for _, e := range ents {
		if e.MountPoint == mp {
			found, fstype = true, e.FSType // the last mount on top wins
		}
	}
	return found, fstype
}

// busyFor is how long Unmount tries again a mount that is busy.
const busyFor = 2 * time.Second

// Unmount unmounts mp; lazy detaches a busy mount. A stale mount (daemon
// gone) is always detached.
func Unmount(mp string, lazy bool) error {
	mp, _ = filepath.Abs(mp)
	var sfs unix.Statfs_t
	if err := unix.Statfs(mp, &sfs); err == unix.ENOTCONN {
		lazy = true
	}
	flags := 0
	if lazy {
		flags = unix.MNT_DETACH
	}
	err := unix.Unmount(mp, flags)
	// A mount can be busy for a moment by the daemon's own doing: right
	// after it starts, its warm walk's lister has a directory open while
	// it lists it (the likely holder when TestUnmountCommand, under load,
	// got EBUSY right after the mount was ready). Tried again for a while
	// before busy is reported.
	for deadline := time.Now().Add(busyFor); errors.Is(err, unix.EBUSY) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		err = unix.Unmount(mp, flags)
	}
	if errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("%s is busy (a process has a file or directory open in it); close it, or use --lazy to detach now", mp)
	}
	if errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%s is not a mount point", mp)
	}
	if err != nil {
		return fmt.Errorf("unmount %s: %w", mp, err)
	}
	return nil
}
