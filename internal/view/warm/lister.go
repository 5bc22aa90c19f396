package warm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The warm walk lists the mount through the kernel, as an agent's walker
// would. No thread of the daemon may do that itself: a request to its own
// mount that the daemon has already read, when the daemon is killed
// (SIGKILL), is waited out by the kernel uninterruptibly; its reply never
// comes, the dying thread keeps /dev/fuse open, so the connection is
// never aborted and the daemon never goes (the walk's thread, in getdents
// on its own mount, would be such a request). So the listings are made
// by a child process, this binary again in lister mode,
// which the kernel kills when the walk's thread goes (Pdeathsig); a child
// caught in such a request is freed when the daemon's end of the
// connection closes.
//
// The child is root, and the paths it is given are the daemon's names of
// directories the kernel holds; the backing tree may have made any of
// them a link (to /dev, to /) since. So it resolves each beneath the
// mount point with no link followed and no other filesystem entered
// (openat2): whatever it opens is a file of the mount, which shows no
// device and opens nothing for it. The mount point itself is opened for
// each request and must be the mount (its device, from mountinfo): a
// directory above it may have been moved and a link put in its place.
// It is not held between requests, which would keep the mount busy.

// listerEnv, set to the mount point, makes this binary a lister of that
// mount (see runLister); listerDevEnv is the mount's device.
const (
	listerEnv    = "FSGUARD_INTERNAL_LISTER"
	listerDevEnv = "FSGUARD_INTERNAL_LISTER_DEV"
)

// ListerMain runs this process as a lister child when it was started as
// one (see StartLister), and returns the status to exit with; ok is false
// for any other process, which goes on as it would. A program that mounts
// (cmd/fsguard, and the test binaries that mount in process) calls it
// first thing in main: the child is the program itself again.
func ListerMain() (status int, ok bool) {
	mp := os.Getenv(listerEnv)
	if mp == "" {
		return 0, false
	}
	closeFuse()
	return runLister(mp, os.Getenv(listerDevEnv), os.Stdin, os.Stdout), true
}

// openTop opens the mount point mp for a request, if it is the mount
// whose device is dev ("major:minor").
func openTop(mp, dev string) (int, error) {
	fd, err := unix.Open(mp, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)) != dev {
		unix.Close(fd)
		return -1, fmt.Errorf("%s is not the mount (device %s)", mp, dev)
	}
	return fd, nil
}

// inMount opens p, a path beneath the mount point top (open on topFD),
// with flags, following no link and staying on the mount.
func inMount(topFD int, top, p string, flags uint64) (int, error) {
	rel, ok := strings.CutPrefix(p, top)
	if !ok || rel != "" && rel[0] != '/' {
		return -1, fmt.Errorf("%s: not beneath %s", p, top)
	}
	rel = strings.TrimPrefix(rel, "/")
	if rel == "" {
		rel = "."
	}
	return unix.Openat2(topFD, rel, &unix.OpenHow{
		Flags:   flags | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// runLister answers requests: it writes the id of the thread that
// answers (its FUSE requests carry it), then answers each request read.
// A listing is 'l', a directory path, NUL; its answer is one record per
// entry — 'd' or 'f', the name, NUL — and 'z', NUL at the end ('e', the
// error, NUL, when it cannot list). A count is 'c', a directory path,
// NUL, then names, each ended by NUL, and an empty one; its answer is,
// per name, the number of pages of that file the kernel's page cache
// holds (see cachedPages), in decimal, each ended by NUL.
func runLister(mp, dev string, in io.Reader, out io.Writer) int {
	runtime.LockOSThread() // every request from this thread
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "%d\n", unix.Gettid())
	w.Flush()
	r := bufio.NewReader(in)
	for {
		req, err := r.ReadString(0)
		if err != nil || req == "\x00" {
			return 0 // the daemon closed: done
		}
		dir := strings.TrimSuffix(req[1:], "\x00")
		top, terr := openTop(mp, dev)
		switch req[0] {
		case 'l':
			listIn(w, top, terr, mp, dir)
		case 'c':
			var names []string
			for {
				name, err := r.ReadString(0)
				if err != nil {
					return 0
				}
				if name == "\x00" {
					break
				}
				names = append(names, strings.TrimSuffix(name, "\x00"))
			}
			var counts []uint64
			if terr == nil {
				counts = cachedPages(top, mp, dir, names)
			} else {
				counts = make([]uint64, len(names))
			}
			for _, n := range counts {
				fmt.Fprintf(w, "%d\x00", n)
			}
		default:
			return 1
		}
		if terr == nil {
			unix.Close(top)
		}
		if w.Flush() != nil {
			return 1
		}
	}
}

// listIn writes the answer to a listing of dir, beneath the mount point
// mp (open on top, unless terr says why not).
func listIn(w *bufio.Writer, top int, terr error, mp, dir string) {
	var ents []os.DirEntry
	fd, err := -1, terr
	if err == nil {
		fd, err = inMount(top, mp, dir, unix.O_RDONLY|unix.O_DIRECTORY)
	}
	if err == nil {
		f := os.NewFile(uintptr(fd), dir)
		ents, err = f.ReadDir(-1)
		f.Close()
	}
	if err != nil {
		fmt.Fprintf(w, "e%s\x00", strings.ReplaceAll(err.Error(), "\x00", ""))
		ents = nil
	}
	for _, e := range ents {
		kind := byte('f')
		if e.IsDir() {
			kind = 'd'
		}
		w.WriteByte(kind)
		w.WriteString(e.Name())
		w.WriteByte(0)
	}
	w.WriteString("z\x00")
}

// cachedPages counts, for each name in dir (a directory of the mount at
// mp, open on top), the pages of it the kernel's page cache holds
// (cachestat, Linux 6.5: it reads nothing and faults nothing in); 0 for
// one it cannot open or count.
// In kernel open mode an open asks the daemon nothing, so this costs the
// daemon no request but the LOOKUP of a name the kernel has let go.
func cachedPages(top int, mp, dir string, names []string) []uint64 {
	out := make([]uint64, len(names))
	dfd, err := inMount(top, mp, dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return out
	}
	defer unix.Close(dfd)
	for i, name := range names {
		if strings.Contains(name, "/") {
			continue
		}
		fd, err := inMount(dfd, "", "/"+name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY) // one name beneath dir
		if err != nil {
			continue
		}
		var cs unix.Cachestat_t
		if unix.Cachestat(uint(fd), &unix.CachestatRange{}, &cs, 0) == nil {
			out[i] = cs.Cache
		}
		unix.Close(fd)
	}
	return out
}

// Lister is the daemon's end of a lister child.
type Lister struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	tid uint32 // the child's listing thread
}

// StartLister starts a lister child of the mount at mp, whose device is
// dev ("major:minor", from mountinfo). Call it from a thread locked for
// the child's life: the child is killed when that thread ends.
func StartLister(mp, dev string) (*Lister, error) {
	fuseCloseOnExec()
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{listerEnv + "=" + mp, listerDevEnv + "=" + dev}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	l := &Lister{cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := l.out.ReadString('\n')
	tid, perr := strconv.ParseUint(strings.TrimSpace(line), 10, 32)
	if err != nil || perr != nil {
		l.Close()
		return nil, fmt.Errorf("lister child: no thread id (%v)", errors.Join(err, perr))
	}
	l.tid = uint32(tid)
	return l, nil
}

// Entry is one name a listing gave.
type Entry struct {
	Name string
	Dir  bool
}

// Tid is the child's listing thread: the FUSE requests it makes name it.
func (l *Lister) Tid() uint32 { return l.tid }

// Pid is the child process (the opens audit names processes).
func (l *Lister) Pid() uint32 { return uint32(l.cmd.Process.Pid) }

// List lists dir (a path through the mount) in the child.
func (l *Lister) List(dir string) ([]Entry, error) {
	if _, err := io.WriteString(l.in, "l"+dir+"\x00"); err != nil {
		return nil, err
	}
	var ents []Entry
	for {
		rec, err := l.out.ReadString(0)
		if err != nil {
			return nil, fmt.Errorf("lister child: %w", err)
		}
		rec = strings.TrimSuffix(rec, "\x00")
		switch {
		case rec == "":
			return nil, errors.New("lister child: an empty record")
		case rec == "z":
			return ents, nil
		case rec[0] == 'e':
			// No entries follow an error; the listing ends at 'z'.
			if end, err := l.out.ReadString(0); err != nil || end != "z\x00" {
				return nil, fmt.Errorf("lister child: %q after an error", end)
			}
			return nil, errors.New(rec[1:])
		default:
			ents = append(ents, Entry{Name: rec[1:], Dir: rec[0] == 'd'})
		}
	}
}

// Cached counts, for each name in dir (a path through the mount), the
// pages of it the kernel's page cache holds, in the child.
func (l *Lister) Cached(dir string, names []string) ([]uint64, error) {
	var b strings.Builder
	b.WriteString("c" + dir + "\x00")
	for _, n := range names {
		b.WriteString(n + "\x00")
	}
	b.WriteByte(0)
	if _, err := io.WriteString(l.in, b.String()); err != nil {
		return nil, err
	}
	out := make([]uint64, len(names))
	for i := range out {
		rec, err := l.out.ReadString(0)
		if err != nil {
			return nil, fmt.Errorf("lister child: %w", err)
		}
		if out[i], err = strconv.ParseUint(strings.TrimSuffix(rec, "\x00"), 10, 64); err != nil {
			return nil, fmt.Errorf("lister child: %q for a count", rec)
		}
	}
	return out, nil
}

// Close ends the child.
func (l *Lister) Close() {
	l.in.Close()
	l.cmd.Process.Kill() // it may be in a listing; the mount answers it
	l.cmd.Wait()
}

// A lister must never hold the daemon's /dev/fuse: a child caught in a
// request to the mount when the daemon is killed is freed only when the
// connection's last descriptor closes, and a descriptor the child held
// itself would keep the connection, the request and the child alive for
// ever (and every later access to the mount point would hang with them).
// go-fuse opens /dev/fuse (or receives it from fusermount) without
// O_CLOEXEC, so the daemon marks it before each start, and the child
// closes any it got anyway before it touches the mount.

// fuseFds calls fn with each descriptor of this process open on /dev/fuse.
func fuseFds(fn func(fd int)) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "/dev/fuse" {
			fn(fd)
		}
	}
}

// fuseCloseOnExec marks the daemon's /dev/fuse descriptors close-on-exec.
func fuseCloseOnExec() { fuseFds(unix.CloseOnExec) }

// closeFuse closes any /dev/fuse descriptor a lister child inherited.
func closeFuse() { fuseFds(func(fd int) { unix.Close(fd) }) }
