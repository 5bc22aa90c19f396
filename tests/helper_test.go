package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/testenv"
)

// helperRole, set in a helper's environment, makes the test binary play an
// attacker's process instead of running tests (see TestMain): a program
// that a second uid runs against the control socket, as that uid's own
// tools would, with no fsguard code in the loop.
const helperRole = "FSGUARD_TEST_HELPER"

// runHelper plays role against the socket in FSGUARD_HELPER_SOCK until its
// stdin closes, and returns the exit status.
//
//	flood  connects in a loop from 4 goroutines, each keeping its last 200
//	       connections open and silent; prints the count made
//	hold   opens FSGUARD_HELPER_N connections, each sending a request's
//	       headers with a large Content-Length and then nothing (with
//	       FSGUARD_HELPER_LINE, a write's request line and no content);
//	       prints "held" once all are sent
//	lines  opens FSGUARD_HELPER_N connections, each sending a request's
//	       headers and FSGUARD_HELPER_BYTES of a request line that never
//	       ends, for as long as the daemon reads it (a write that
//	       blocks 2 s gives up on that connection); prints "sent"
//	probe  connects, sends nothing, and prints the milliseconds until the
//	       daemon's answer began and until it closed, then the answer
func runHelper(role string) int {
	sock := os.Getenv("FSGUARD_HELPER_SOCK")
	stop := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stop) }()
	switch role {
	case "flood":
		var lim syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
			lim.Cur = lim.Max
			syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		}
		var n atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each goroutine keeps its last 200 connections open and
				// silent, closing the oldest for each new one.
				var ring [200]net.Conn
				defer func() {
					for _, c := range ring {
						if c != nil {
							c.Close()
						}
					}
				}()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					c, err := net.Dial("unix", sock)
					if err != nil {
						time.Sleep(time.Millisecond) // backlog full: the attacker's own pause
						continue
					}
					n.Add(1)
					if old := ring[i%len(ring)]; old != nil {
						old.Close()
					}
					ring[i%len(ring)] = c
				}
			}()
		}
		wg.Wait()
		fmt.Println(n.Load())
	case "hold":
		count, _ := strconv.Atoi(os.Getenv("FSGUARD_HELPER_N"))
		var held []net.Conn
		for range count {
			c, err := net.Dial("unix", sock)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Fprint(c, "POST /v1/op HTTP/1.1\r\nHost: fsguard\r\nContent-Length: 1000000\r\n\r\n")
			if os.Getenv("FSGUARD_HELPER_LINE") != "" {
				fmt.Fprint(c, `{"op":"write","path":"agent/held.txt","session":"hold"}`+"\n")
			}
			held = append(held, c)
		}
		fmt.Println("held")
		<-stop
		for _, c := range held {
			c.Close()
		}
	case "lines":
		count, _ := strconv.Atoi(os.Getenv("FSGUARD_HELPER_N"))
		size, _ := strconv.Atoi(os.Getenv("FSGUARD_HELPER_BYTES"))
		chunk := []byte(`{"op":"read","session":"lines","path":"` + strings.Repeat("a", 1<<20))
		var held []net.Conn
		var wg sync.WaitGroup
		for range count {
			c, err := net.Dial("unix", sock)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			held = append(held, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				fmt.Fprintf(c, "POST /v1/op HTTP/1.1\r\nHost: fsguard\r\nContent-Length: %d\r\n\r\n", size+1)
				for sent := 0; sent < size; sent += len(chunk) {
					c.SetWriteDeadline(time.Now().Add(2 * time.Second))
					if _, err := c.Write(chunk[:min(len(chunk), size-sent)]); err != nil {
						return // the daemon does not read on: held
					}
				}
			}()
		}
		wg.Wait()
		fmt.Println("sent")
		<-stop
		for _, c := range held {
			c.Close()
		}
	case "probe":
		start := time.Now()
		c, err := net.Dial("unix", sock)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		first := make([]byte, 1)
		if _, err := io.ReadFull(c, first); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		answered := time.Since(start)
		rest, err := io.ReadAll(c)
		fmt.Printf("%d %d\n%s%s", answered.Milliseconds(), time.Since(start).Milliseconds(), first, rest)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown helper role", role)
		return 2
	}
	return 0
}

var helperOnce = sync.OnceValues(func() (string, error) {
	// The test binary's own directory is its builder's alone: a copy
	// beside fsguard's binary (0755) is one a second uid may run.
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(self)
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(binary), "helper")
	return p, os.WriteFile(p, b, 0o755)
})

// helper is a running helper process (see runHelper).
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	errs  *logBuffer
}

// startHelper runs the test binary as a helper playing role against sock,
// as uid (and gid = uid), with extra environment; it ends when the test
// does, or at stop.
func startHelper(t *testing.T, role, sock string, uid uint32, env ...string) *helper {
	t.Helper()
	p, err := helperOnce()
	testenv.Must(t, err)
	cmd := exec.Command(p)
	cmd.Env = append(append(os.Environ(), helperRole+"="+role, "FSGUARD_HELPER_SOCK="+sock), env...)
	testenv.As(cmd, uid, uid)
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	h := &helper{cmd: cmd, errs: newLogBuffer()}
	h.stdin, err = cmd.StdinPipe()
	testenv.Must(t, err)
	out, err := cmd.StdoutPipe()
	testenv.Must(t, err)
	h.out = bufio.NewReader(out)
	cmd.Stderr = h.errs
	testenv.Must(t, cmd.Start())
	t.Cleanup(func() { h.stop() })
	return h
}

// line reads the helper's next line of output.
func (h *helper) line(t *testing.T) string {
	t.Helper()
	s, err := h.out.ReadString('\n')
	if err != nil {
		t.Fatalf("helper %v: %v (stderr: %s)", h.cmd.Args, err, h.errs.String())
	}
	return s[:len(s)-1]
}

// stop closes the helper's stdin, which ends its role, and waits for it;
// it returns what it printed last.
func (h *helper) stop() string {
	if h.stdin == nil {
		return ""
	}
	h.stdin.Close()
	h.stdin = nil
	rest, _ := io.ReadAll(h.out)
	h.cmd.Wait()
	return string(rest)
}
