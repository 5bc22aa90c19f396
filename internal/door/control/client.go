package control

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsguard/fsguard/internal/service/api"
	"github.com/fsguard/fsguard/internal/service/session"
)

// clients holds one HTTP client per socket path for the whole process, so
// repeated calls reuse one idle connection instead of leaking a transport
// and its connections per call.
var clients sync.Map // socket path -> *http.Client

func clientFor(socket string) *http.Client {
	if c, ok := clients.Load(socket); ok {
		return c.(*http.Client)
	}
	c := &http.Client{
		Timeout: 5 * time.Minute,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return dial(ctx, socket)
			},
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       30 * time.Second,
			ExpectContinueTimeout: 5 * time.Second,
		},
	}
	actual, _ := clients.LoadOrStore(socket, c)
	return actual.(*http.Client)
}

// dial connects to the socket. A full backlog (EAGAIN: connections
// arrive faster than the daemon accepts them, as in a flood by a refused
// uid) is waited out, with backoff, until ctx ends. The connection reads
// nothing before its first write (see writeFirst).
func dial(ctx context.Context, socket string) (net.Conn, error) {
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		c, err := (&net.Dialer{}).DialContext(ctx, "unix", socket)
		if err == nil {
			return &writeFirst{Conn: c, wrote: make(chan struct{}), closed: make(chan struct{})}, nil
		}
		if errors.Is(err, syscall.EACCES) {
			return nil, denied(socket, err)
		}
		if !errors.Is(err, syscall.EAGAIN) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
	}
}

// denied names, for a connection refused by file permissions, the socket
// and its directory, and which of the two keeps this user out: a service
// whose run directory is private locks out every agent in allow_uids.
func denied(socket string, err error) error {
	dir := filepath.Dir(socket)
	mode := func(p string) string {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) != nil {
			return "unknown mode"
		}
		return fmt.Sprintf("mode %04o, owner uid %d", st.Mode&0o7777, st.Uid)
	}
	if syscall.Access(dir, 1 /* X_OK */) != nil {
		return fmt.Errorf("control socket %s: permission denied: its directory %s (%s) does not let uid %d through; the daemon's directory must be searchable by its agents (the unit's RuntimeDirectoryMode=0755): %w", socket, dir, mode(dir), os.Geteuid(), err)
	}
	return fmt.Errorf("control socket %s: permission denied: the socket (%s) in %s (%s) does not let uid %d connect: %w", socket, mode(socket), dir, mode(dir), os.Geteuid(), err)
}

// writeFirst holds a connection's reads until its first write. A daemon
// that refuses a peer answers at once, maybe before the request is sent;
// net/http's transport, reading a fresh connection before it has
// registered the request, would take that answer for an unsolicited one
// and drop it.
type writeFirst struct {
	net.Conn
	once, closeOnce sync.Once
	wrote, closed   chan struct{}
}

func (c *writeFirst) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.once.Do(func() { close(c.wrote) })
	return n, err
}

func (c *writeFirst) Read(b []byte) (int, error) {
	select {
	case <-c.wrote:
	case <-c.closed:
	}
	return c.Conn.Read(b)
}

func (c *writeFirst) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// Call sends a request (and a write's content, streamed; nil for none) to
// the daemon at socket and returns its answer. A write or edit is sent
// under an id (one is made if the request has none); if the connection is
// lost before its answer, Call asks the daemon, on a new connection, what
// became of it, so the caller is never left not knowing.
func Call(socket string, req api.Request, content io.Reader) (session.Output, error) {
	if req.Op != "write" && req.Op != "edit" {
		return call(socket, req, content)
	}
	if req.ID == "" {
		var b [8]byte
		rand.Read(b[:])
		req.ID = hex.EncodeToString(b[:])
	}
	out, err := call(socket, req, content)
	if err == nil || !errors.Is(err, errLost) {
		return out, err
	}
	st, serr := call(socket, api.Request{Op: "status", ID: req.ID}, nil)
	if serr != nil {
		return session.Output{}, fmt.Errorf("%v; whether the %s happened is recorded under id %s: ask with 'fsguard status %s' once the daemon answers", err, req.Op, req.ID, req.ID)
	}
	note := fmt.Sprintf("Note: the connection to the daemon was lost before the %s's answer (%v); the daemon says:\n", req.Op, err)
	st.Stderr = note + st.Stderr
	return st, nil
}

// errLost marks a failure after the request may have reached the daemon.
var errLost = errors.New("connection lost")

func call(socket string, req api.Request, content io.Reader) (session.Output, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return session.Output{}, err
	}
	var body io.Reader = bytes.NewReader(append(line, '\n'))
	if content != nil {
		body = io.MultiReader(body, content)
	}
	hr, err := http.NewRequest("POST", "http://fsguard/v1/op", body)
	if err != nil {
		return session.Output{}, err
	}
	hr.Header.Set("Content-Type", "application/x-fsguard-request")
	if content != nil {
		// A refused caller learns it before sending the content.
		hr.Header.Set("Expect", "100-continue")
	}
	resp, err := clientFor(socket).Do(hr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return session.Output{}, fmt.Errorf("cannot reach the fsguard daemon at %s: %v", socket, err)
		}
		return session.Output{}, fmt.Errorf("fsguard daemon at %s: %w: %v", socket, errLost, err)
	}
	defer resp.Body.Close()
	var out session.Output
	derr := json.NewDecoder(resp.Body).Decode(&out)
	io.Copy(io.Discard, resp.Body) // drained, so the connection is reused
	switch {
	case resp.StatusCode == http.StatusForbidden && derr == nil && out.Exit != 0:
		return out, nil // refused at accept, with the reason
	case resp.StatusCode != http.StatusOK:
		return session.Output{}, fmt.Errorf("fsguard daemon at %s answered %s", socket, resp.Status)
	case derr != nil:
		return session.Output{}, fmt.Errorf("bad answer from the fsguard daemon: %w: %v", errLost, derr)
	}
	return out, nil
}

// Health asks the daemon at socket whether it serves (GET /v1/health),
// waiting at most timeout.
func Health(socket string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, "GET", "http://fsguard/v1/health", nil)
	if err != nil {
		return err
	}
	resp, err := clientFor(socket).Do(hr)
	if err != nil {
		return fmt.Errorf("the fsguard daemon at %s does not answer: %v", socket, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the fsguard daemon at %s answered %s", socket, resp.Status)
	}
	return nil
}
