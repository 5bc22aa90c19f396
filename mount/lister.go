package mount

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
// never aborted and the daemon never goes (TestDeadMountServesNoPast hung
// so under load, the walk's thread in getdents on its own mount). So the
// listings are made by a child process, this binary again in lister mode,
// which the kernel kills when the walk's thread goes (Pdeathsig); a child
// caught in such a request is freed when the daemon's end of the
// connection closes.

// listerEnv, set to "1", makes this binary a lister (see runLister).
const listerEnv = "FSGUARD_INTERNAL_LISTER"

func init() {
	if os.Getenv(listerEnv) == "1" {
		os.Exit(runLister(os.Stdin, os.Stdout))
	}
}

// runLister answers listings: it writes the id of the thread that lists
// (its FUSE requests carry it), then, for each NUL-terminated directory
// path read, one record per entry — 'd' or 'f', the name, NUL — and 'z',
// NUL at the end ('e', the error, NUL, when it cannot list).
func runLister(in io.Reader, out io.Writer) int {
	runtime.LockOSThread() // every listing from this thread
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "%d\n", unix.Gettid())
	w.Flush()
	r := bufio.NewReader(in)
	for {
		dir, err := r.ReadString(0)
		if err != nil {
			return 0 // the daemon closed: done
		}
		ents, err := os.ReadDir(strings.TrimSuffix(dir, "\x00"))
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
		if w.Flush() != nil {
			return 1
		}
	}
}

// lister is the daemon's end of a lister child.
type lister struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	tid uint32 // the child's listing thread
}

// startLister starts a lister child. Call it from a thread locked for the
// child's life: the child is killed when that thread ends.
func startLister() (*lister, error) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{listerEnv + "=1"}
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
	l := &lister{cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := l.out.ReadString('\n')
	tid, perr := strconv.ParseUint(strings.TrimSpace(line), 10, 32)
	if err != nil || perr != nil {
		l.close()
		return nil, fmt.Errorf("lister child: no thread id (%v)", errors.Join(err, perr))
	}
	l.tid = uint32(tid)
	return l, nil
}

// entry is one name a listing gave.
type entry struct {
	name string
	dir  bool
}

// list lists dir (a path through the mount) in the child.
func (l *lister) list(dir string) ([]entry, error) {
	if _, err := io.WriteString(l.in, dir+"\x00"); err != nil {
		return nil, err
	}
	var ents []entry
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
			ents = append(ents, entry{name: rec[1:], dir: rec[0] == 'd'})
		}
	}
}

// close ends the child.
func (l *lister) close() {
	l.in.Close()
	l.cmd.Process.Kill() // it may be in a listing; the mount answers it
	l.cmd.Wait()
}
