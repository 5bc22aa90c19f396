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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/fsguard/fsguard/internal/concept/metrics"
	"github.com/fsguard/fsguard/internal/concept/mountinfo"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"github.com/fsguard/fsguard/internal/decide/caller"
	"github.com/fsguard/fsguard/internal/service/api"
	"github.com/fsguard/fsguard/internal/service/session"

	"golang.org/x/sys/unix"
)

type peerKey struct{}

// Server answers requests with the agent service in force at that moment
// (so a policy reload is seen at once), made for each request's caller.
//
// Fairness: connections and request slots are shared per uid (see share):
// no uid holds more than a quarter of either, and root and the daemon's
// own uid always find one. A slot is taken only once the request line has
// arrived (for anything but a write, the whole body), so a client that
// sends headers and no body holds a connection of its own share, never a
// slot. A refused peer costs two getsockopt calls, a short answer and a
// close.
type Server struct {
	// Service returns a service for the current guard and journal.
	Service func() *session.Service
	// Policy returns the control settings in force (who may connect).
	Policy func() policy.Control
	// MaxRequests bounds the requests served at once; more wait, up to
	// BusyWait, then get a busy answer. 0 means 16.
	MaxRequests int
	BusyWait    time.Duration
	// MaxConns bounds the connections open at once (the daemon sizes it
	// from its descriptor limit): a client past it waits in the listen
	// backlog until one closes. 0 means 256.
	MaxConns int
	// OnTableFull, when set, is called when accept finds the descriptor
	// table full: it closes what the daemon's caches keep idle and
	// returns how many. The accept is retried either way, with backoff:
	// the client waits in the backlog, it is never dropped.
	OnTableFull func() int
	// BodyWait bounds how long a request's line may take to arrive after
	// its headers, and how long a write's content may pause. 0 means 30 s.
	BodyWait time.Duration
	// RefusalLogEvery is the least time between two log lines about one
	// uid's refused connections (the rest are counted into the next).
	// 0 means 10 s.
	RefusalLogEvery time.Duration
	// MountDev is the mount's device ("major:minor") by which the peer's
	// view of the mount is found in its mountinfo.
	MountDev string
	// Metrics, when set, is served at GET /metrics.
	Metrics *metrics.Set
	Log     *slog.Logger
	http    *http.Server
	conns   *share
	slots   *share
	// lingering bounds the refused connections waiting for their
	// request to arrive (so the client reads the answer, not a broken
	// pipe); when it is full, a refused connection is closed at once.
	lingering chan struct{}
	refusals  logEvery
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
	if s.MaxConns <= 0 {
		s.MaxConns = 256
	}
	if s.BodyWait <= 0 {
		s.BodyWait = 30 * time.Second
	}
	if s.RefusalLogEvery <= 0 {
		s.RefusalLogEvery = 10 * time.Second
	}
	if s.Log == nil {
		s.Log = slog.New(slog.NewJSONHandler(termsafe.Writer(os.Stderr), nil))
	}
	s.slots, s.conns = newShare(s.MaxRequests), newShare(s.MaxConns)
	s.lingering = make(chan struct{}, 16)
	s.refusals.every = s.RefusalLogEvery
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
		// The client's headers are a few short lines; a connection's
		// share of memory before its request holds a slot is bounded.
		MaxHeaderBytes: 16 << 10,
		IdleTimeout:    2 * time.Minute,
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

// Connected returns how many connections each uid holds open now (none
// before Serve).
func (s *Server) Connected() map[uint32]int {
	if s.conns == nil {
		return nil
	}
	return s.conns.holders()
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

// privileged is whether uid always finds a connection and a slot: root,
// and the daemon's own user.
func privileged(uid uint32) bool { return (&caller.Caller{Uid: uid}).Operator() }

// gate admits only connections whose peer the policy allows, within the
// peer's share of connections. A refused peer gets a complete HTTP answer
// saying why, at once, then the connection closes.
type gate struct {
	net.Listener
	s *Server
}

// peerConn is an admitted connection; closing it gives its unit of the
// connection share back, once.
type peerConn struct {
	net.Conn
	who   *caller.Caller
	conns *share
	once  sync.Once
}

func (c *peerConn) Close() error {
	c.once.Do(func() { c.conns.give(c.who.Uid) })
	return c.Conn.Close()
}

func (g *gate) Accept() (net.Conn, error) {
	s := g.s
	pause := time.Duration(0)
	for {
		// A connection is accepted only when one more fits: the next
		// client waits in the backlog meanwhile. Whoever it is, it fits
		// then if privileged; anyone else may be over its share (BUSY).
		s.conns.room()
		c, err := g.Listener.Accept()
		if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) {
			// The table is full: the caches give back what they keep,
			// and the client, still in the backlog, is accepted once a
			// descriptor is free.
			if s.OnTableFull != nil && s.OnTableFull() > 0 {
				pause = 0
				continue
			}
			pause = min(max(2*pause, time.Millisecond), 100*time.Millisecond)
			time.Sleep(pause)
			continue
		}
		if err != nil {
			return nil, err
		}
		pause = 0
		// The kernel's record alone decides; /proc is read only for a
		// peer that is served, or for a refusal's (rate-limited) log line.
		cred, err := caller.CredsOf(c)
		if err != nil {
			s.refuse(c, nil, "credentials", http.StatusForbidden, "PERMISSION_DENIED", "no peer credentials")
			continue
		}
		if !Allowed(s.Policy(), cred) {
			s.refuse(c, cred, "uid", http.StatusForbidden, "PERMISSION_DENIED", fmt.Sprintf("uid %d may not use the fsguard control socket: the daemon serves root and the uids and gids that the policy's [control] allow_uids and allow_gids name; ask the operator to add yours", cred.Uid))
			continue
		}
		if !s.conns.try(cred.Uid, privileged(cred.Uid)) {
			s.refuse(c, cred, "connections", http.StatusServiceUnavailable, "BUSY", fmt.Sprintf("uid %d holds its share of the fsguard control socket's connections (%d of %d): close idle ones, or wait for its requests to finish, and try again", cred.Uid, s.conns.held(cred.Uid), s.MaxConns))
			continue
		}
		who, err := caller.OfConn(c)
		if err != nil {
			who = cred // gone meanwhile: served as the kernel recorded it
		}
		who.Uid = cred.Uid // the unit is given back under the uid it was taken for
		return &peerConn{Conn: c, who: who, conns: s.conns}, nil
	}
}

// refuseWait bounds how long a refused connection is kept to read its
// request, and its answer's write.
const refuseWait = time.Second

// refuse counts, logs (at most a line per uid and reason per interval,
// with the count since the last) and answers one refused connection, and
// closes it. The answer is written at once; then, while fewer than
// cap(lingering) are, the connection is kept up to refuseWait to read the
// request the client sends, so that it reads the answer rather than a
// broken pipe. Beyond that it is closed at once: a flood of refused
// connections costs a bounded number of descriptors.
func (s *Server) refuse(c net.Conn, who *caller.Caller, reason string, status int, code, msg string) {
	if s.Metrics != nil {
		s.Metrics.SocketRefused.Add(reason, 1)
	}
	var uid uint32
	if who != nil {
		uid = who.Uid
	}
	if n, say := s.refusals.note(fmt.Sprintf("%s/%d", reason, uid), time.Now()); say {
		args := []any{"reason", reason, "count", n, "interval", s.RefusalLogEvery.String()}
		if who != nil {
			args = append(args, "uid", who.Uid, "gid", who.Gid, "pid", who.Pid, "process", caller.ProcessName(who.Pid))
		}
		s.Log.Warn("control connection refused", args...)
	}
	body, _ := json.Marshal(failed(session.ExitFail, code, msg))
	answer := fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", status, http.StatusText(status), len(body), body)
	select {
	case s.lingering <- struct{}{}:
		go func() {
			defer func() { <-s.lingering }()
			defer c.Close()
			c.SetDeadline(time.Now().Add(refuseWait))
			if _, err := c.Write(answer); err != nil {
				return
			}
			// The request (a write's stops at its headers: it waits for
			// "100 Continue", which never comes); the client closes once
			// it has read the answer.
			io.Copy(io.Discard, io.LimitReader(c, 64<<10))
		}()
	default:
		c.SetWriteDeadline(time.Now().Add(refuseWait / 10))
		c.Write(answer)
		c.Close()
	}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	who, ok := r.Context().Value(peerKey{}).(*caller.Caller)
	if !ok {
		http.Error(w, "no peer credentials", http.StatusForbidden)
		return
	}
	// The request line must arrive within BodyWait of the headers. A
	// short line (at most freeLine) is read before a slot is taken: a
	// client that sends headers and no body holds a connection of its own
	// share, never a slot. A longer line takes its slot before it is read
	// past freeLine, so the memory lines hold at once is bounded by the
	// slots (MaxRequestLine each), not by the connections. Anything but a
	// write has nothing after the line, so its whole body is here.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(s.BodyWait))
	body := bufio.NewReaderSize(http.MaxBytesReader(w, r.Body, MaxRequestLine+api.MaxContent+1), freeLine)
	held := false
	take := func() bool {
		if !held && !s.slots.take(r.Context(), who.Uid, privileged(who.Uid), s.BusyWait) {
			if r.Context().Err() == nil {
				s.count("busy")
				reply(w, failed(session.ExitFail, "BUSY", "the fsguard daemon is busy (all request slots in use, or this uid's share of them); try again"))
			}
			return false
		}
		held = true
		return true
	}
	defer func() {
		if held {
			s.slots.give(who.Uid)
		}
	}()
	var req api.Request
	if err := decodeLine(body, &req, take); err != nil {
		if err == errNoSlot {
			return // answered BUSY by take
		}
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			s.count("timeout")
			msg := fmt.Sprintf("the request line did not arrive within %v of the request's headers", s.BodyWait)
			reply(w, failed(session.ExitFail, "BUSY", msg))
			return
		}
		reply(w, failed(session.ExitUsage, "", "bad request: "+err.Error()))
		return
	}
	if req.Op != "write" {
		body.Peek(1) // the body's end, or what follows the line
	}
	if !take() {
		return
	}
	// A write's content streams into the file under the slot; it may
	// pause at most BodyWait at a time.
	rc.SetReadDeadline(time.Time{})
	var content io.Reader = body
	if req.Op == "write" {
		content = &paced{r: body, rc: rc, wait: s.BodyWait}
	}
	prefix, err := mountinfo.Where(int(who.Pid), s.MountDev)
	if err != nil {
		reply(w, failed(session.ExitFail, "", err.Error()))
		return
	}
	svc := s.Service()
	svc = svc.As(who, &caller.View{Prefix: prefix, Roots: svc.Guard.Roots()})
	// The label comes from the client, so only known values pass.
	svc.Door = "socket"
	if req.Via == "cli" || req.Via == "mcp" {
		svc.Door = req.Via
	}
	reply(w, api.Do(svc, req, content))
}

// count counts a request turned away unserved.
func (s *Server) count(reason string) {
	if s.Metrics != nil {
		s.Metrics.SocketRefused.Add(reason, 1)
	}
}

// paced reads a write's content, allowing each read at most wait.
type paced struct {
	r    io.Reader
	rc   *http.ResponseController
	wait time.Duration
}

func (p *paced) Read(b []byte) (int, error) {
	p.rc.SetReadDeadline(time.Now().Add(p.wait))
	return p.r.Read(b)
}

// freeLine is how much of a request line is read before the request holds
// a slot (see handle).
const freeLine = 64 << 10

// errNoSlot: a long line found no slot (and was answered BUSY).
var errNoSlot = errors.New("no request slot")

// decodeLine reads the request's first line, at most MaxRequestLine bytes,
// as JSON. Past its first freeLine bytes it reads on only once long()
// says it may (a slot is held).
func decodeLine(r *bufio.Reader, v any, long func() bool) error {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line) == 0 && err == bufio.ErrBufferFull && !long() {
			return errNoSlot
		}
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

// failed is the answer to a request the socket itself turns away, with
// the exit status and code the client reports.
func failed(exit int, code, msg string) session.Output {
	return session.Output{Stderr: "Error: " + msg + "\n", Exit: exit, Code: code, Message: msg}
}

func reply(w http.ResponseWriter, out session.Output) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}
