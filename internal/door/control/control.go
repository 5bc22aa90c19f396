// Package control is the transport of the daemon's control socket: HTTP over
// a unix socket through which `fsguard read`, `check`, `write` and `edit`
// inside a container ask the daemon, which owns the journal. It decides who
// may connect and turns each connection into a caller.Caller; what a request
// does is api.Do's, performed with that caller's own rights.
//
// The daemon never takes the client's word for who it is or where it
// stands: identity comes from the kernel (SO_PEERCRED, SO_PEERGROUPS) at
// accept, and the caller's view of the mount from /proc/<pid>/mountinfo.
//
// Wire format: POST /v1/op with a body of one JSON api.Request line, then,
// for a write, the new content as raw bytes to the end of the body (streamed
// into the file, never held whole). The answer is one JSON session.Output.
package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/fsguard/fsguard/internal/concept/metrics"
	"github.com/fsguard/fsguard/internal/concept/mountinfo"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/caller"
	"github.com/fsguard/fsguard/internal/service/api"
	"github.com/fsguard/fsguard/internal/service/session"
)

type peerKey struct{}

// Server answers requests with the agent service in force at that moment
// (so a policy reload is seen at once), made for each request's caller.
type Server struct {
	// Service returns a service for the current guard and journal.
	Service func() *session.Service
	// Policy returns the control settings in force (who may connect).
	Policy func() policy.Control
	// MaxRequests bounds the requests served at once; more wait, up to
	// BusyWait, then get a busy answer. 0 means 16.
	MaxRequests int
	BusyWait    time.Duration
	// MountDev is the mount's device ("major:minor") by which the peer's
	// view of the mount is found in its mountinfo.
	MountDev string
	// Metrics, when set, is served at GET /metrics.
	Metrics *metrics.Set
	Log     *slog.Logger
	http    *http.Server
	slots   chan struct{}
}

// MaxRequestLine bounds the JSON request line (an edit's text included).
const MaxRequestLine = 16 << 20

// Serve listens on the unix socket at path (replacing a stale one) and
// serves until Close.
func (s *Server) Serve(path string) error {
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	// Anyone may reach the socket; who is served is decided at accept from
	// the kernel's peer credentials, where a refusal can be said and logged.
	os.Chmod(path, 0o666)
	if s.MaxRequests <= 0 {
		s.MaxRequests = 16
	}
	if s.BusyWait <= 0 {
		s.BusyWait = time.Minute
	}
	if s.Log == nil {
		s.Log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	s.slots = make(chan struct{}, s.MaxRequests)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/op", s.handle)
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	if s.Metrics != nil {
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			s.Metrics.Write(w)
		})
	}
	s.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if pc, ok := c.(*peerConn); ok {
				return context.WithValue(ctx, peerKey{}, pc.who)
			}
			return ctx
		},
	}
	go s.http.Serve(&gate{Listener: ln, s: s})
	return nil
}

// Close stops the server.
func (s *Server) Close() error {
	if s.http == nil {
		return nil
	}
	return s.http.Close()
}

// Allowed decides whether a caller may use the socket: root always; anyone
// else only when the policy names its uid, or its primary or a
// supplementary gid.
func Allowed(c policy.Control, who *caller.Caller) bool {
	if who.Uid == 0 || slices.Contains(c.AllowUids, who.Uid) {
		return true
	}
	for _, g := range c.AllowGids {
		if who.InGroup(g) {
			return true
		}
	}
	return false
}

// gate admits only connections whose peer the policy allows. A refused
// peer gets a complete HTTP answer saying why, then the connection closes.
type gate struct {
	net.Listener
	s *Server
}

type peerConn struct {
	net.Conn
	who *caller.Caller
}

func (g *gate) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		who, err := caller.OfConn(c)
		if err == nil && Allowed(g.s.Policy(), who) {
			return &peerConn{Conn: c, who: who}, nil
		}
		msg := "no peer credentials"
		if err == nil {
			msg = fmt.Sprintf("uid %d may not use the fsguard control socket: the daemon serves root and the uids and gids that the policy's [control] allow_uids and allow_gids name; ask the operator to add yours", who.Uid)
			g.s.Log.Warn("control connection refused", "uid", who.Uid, "gid", who.Gid, "pid", who.Pid, "process", who.Process)
		}
		go refuseConn(c, msg)
	}
}

// refuseConn answers one refused connection and closes it. The request is
// read first (a small body drained; a write's waits for "100 Continue",
// which never comes), so the client reads the answer instead of a broken
// pipe.
func refuseConn(c net.Conn, msg string) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil && req.Header.Get("Expect") == "" {
		io.Copy(io.Discard, io.LimitReader(req.Body, 1<<20))
	}
	body, _ := json.Marshal(session.Output{Stderr: "Error: " + msg + "\n", Exit: session.ExitFail, Code: "PERMISSION_DENIED", Message: msg})
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	who, ok := r.Context().Value(peerKey{}).(*caller.Caller)
	if !ok {
		http.Error(w, "no peer credentials", http.StatusForbidden)
		return
	}
	busy := time.NewTimer(s.BusyWait)
	defer busy.Stop()
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-busy.C:
		reply(w, session.Output{Stderr: "Error: the fsguard daemon is busy (all request slots in use); try again\n", Exit: session.ExitFail, Code: "BUSY", Message: "the fsguard daemon is busy (all request slots in use); try again"})
		return
	case <-r.Context().Done():
		return
	}
	body := bufio.NewReaderSize(http.MaxBytesReader(w, r.Body, MaxRequestLine+api.MaxContent+1), 64<<10)
	var req api.Request
	if err := decodeLine(body, &req); err != nil {
		reply(w, session.Output{Stderr: "Error: bad request: " + err.Error() + "\n", Exit: session.ExitUsage, Message: "bad request: " + err.Error()})
		return
	}
	prefix, err := mountinfo.Where(int(who.Pid), s.MountDev)
	if err != nil {
		reply(w, session.Output{Stderr: "Error: " + err.Error() + "\n", Exit: session.ExitFail, Message: err.Error()})
		return
	}
	svc := s.Service()
	svc = svc.As(who, &caller.View{Prefix: prefix, Roots: svc.Guard.Roots()})
	// The label comes from the client, so only known values pass.
	svc.Door = "socket"
	if req.Via == "cli" || req.Via == "mcp" {
		svc.Door = req.Via
	}
	reply(w, api.Do(svc, req, body))
}

// decodeLine reads the request's first line, at most MaxRequestLine bytes,
// as JSON.
func decodeLine(r *bufio.Reader, v any) error {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxRequestLine {
			return fmt.Errorf("the request line is longer than %d bytes", MaxRequestLine)
		}
		if err == nil || (err == io.EOF && len(line) > 0) {
			break
		}
		if err != bufio.ErrBufferFull {
			return err
		}
	}
	return json.Unmarshal(bytes.TrimSpace(line), v)
}

func reply(w http.ResponseWriter, out session.Output) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}
