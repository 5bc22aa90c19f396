package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestWriteStatusAfterLostConnection: a client that loses its connection
// before a write's answer can ask, by the id it sent, whether the write
// happened — and only about its own writes.
func TestWriteStatusAfterLostConnection(t *testing.T) {
	t.Parallel()
	e := newPrivEnv(t, fmt.Sprintf("[control]\nallow_uids = [%d]\n", agentUID))
	root := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		out, errs, code, _ := runBinary(t, e.mp, []string{"FSGUARD_SOCKET=" + e.sock, "FSGUARD_SESSION=s"}, stdin, args...)
		return out, errs, code
	}
	if _, errs, code := root("", "read", "rootfile.txt"); code != 0 {
		t.Fatalf("read: %d %s", code, errs)
	}
	// The probe: a live daemon answers; a socket nobody serves does not.
	if out, _, code := root("", "health", "--socket", e.sock); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Fatalf("health of a live daemon: %d %q", code, out)
	}
	if _, errs, code := root("", "health", "--socket", filepath.Join(e.base, "nobody.sock")); code != 1 || !strings.Contains(errs, "does not answer") {
		t.Fatalf("health of no daemon: %d %s", code, errs)
	}

	// A raw client sends a write under an id and hangs up without reading
	// the answer.
	body := `{"op":"write","path":"rootfile.txt","cwd":"` + e.mp + `","session":"s","id":"lost-1"}` + "\nwritten by a client that hung up\n"
	c, err := net.Dial("unix", e.sock)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /v1/op HTTP/1.1\r\nHost: fsguard\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	c.Close()
	testenv.Within(t, 60*time.Second, "the lost write's status", func() error {
		out, errs, code := root("", "status", "lost-1")
		if code != 0 || !strings.Contains(out, "written") {
			return fmt.Errorf("exit %d: %s%s", code, out, errs)
		}
		return nil
	})

	if b, _ := os.ReadFile(filepath.Join(e.root, "rootfile.txt")); string(b) != "written by a client that hung up\n" {
		t.Fatalf("file holds %q", b)
	}

	// Another user cannot learn about it; an id never sent was not written.
	if _, errs, code := e.agent(t, "", "status", "lost-1"); code != 1 || !strings.Contains(errs, "not written") {
		t.Fatalf("another user's status of root's write: %d %s", code, errs)
	}
	if _, errs, code := root("", "status", "never-sent"); code != 1 || !strings.Contains(errs, "not written") {
		t.Fatalf("status of an id never sent: %d %s", code, errs)
	}

	// A refused write was not written (refused before its intent).
	if _, _, code := root("", "read", "group.txt"); code != 0 {
		t.Fatal("read group.txt")
	}
	writeFile(t, filepath.Join(e.root, "group.txt"), "changed behind the session's back\n", 0o640)
	if _, _, code := root("mine\n", "write", "group.txt", "--id", "stale-1"); code != 4 {
		t.Fatalf("a stale write: exit %d", code)
	}
	if _, errs, code := root("", "status", "stale-1"); code != 1 || !strings.Contains(errs, "not written") {
		t.Fatalf("status of a stale write: %d %s", code, errs)
	}

	// fsguard itself asks when its connection drops before the answer: a
	// proxy passes the first connection's request on and drops its answer.
	proxy := filepath.Join(e.base, "proxy.sock")
	ln, err := net.Listen("unix", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			first := conns.Add(1) == 1
			go func() {
				defer in.Close()
				out, err := net.Dial("unix", e.sock)
				if err != nil {
					return
				}
				defer out.Close()
				go io.Copy(out, in)
				if first {
					// Pass on "100 Continue" (the client then sends the
					// content); drop the final answer: the write is done
					// and the client never hears of it.
					r := bufio.NewReader(out)
					for {
						status, err := r.ReadString('\n')
						if err != nil || !strings.Contains(status, " 100 ") {
							return
						}
						io.WriteString(in, status)
						for {
							h, err := r.ReadString('\n')
							if err != nil {
								return
							}
							io.WriteString(in, h)
							if h == "\r\n" {
								break
							}
						}
					}
				}
				io.Copy(in, out)
			}()
		}
	}()
	if _, _, code := root("", "read", "agent/shared.txt"); code != 0 {
		t.Fatal("read shared.txt")
	}
	out, errs, code, _ := runBinary(t, e.mp, []string{"FSGUARD_SOCKET=" + proxy, "FSGUARD_SESSION=s"}, "through a flaky proxy\n", "write", "agent/shared.txt")
	if code != 0 || !strings.Contains(errs, "connection to the daemon was lost") || !strings.Contains(out, "written") {
		t.Fatalf("write through a dropped connection: exit %d\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "agent", "shared.txt")); string(b) != "through a flaky proxy\n" {
		t.Fatalf("file holds %q", b)
	}
}
