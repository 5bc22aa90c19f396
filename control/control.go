// Package control owns the daemon's control socket: HTTP+JSON over a unix
// socket through which `fsguard read`, `check`, `write` and `edit` inside a
// container ask the daemon, which owns the journal. The daemon never takes
// the client's word for who it is or where it stands: the caller's pid and
// uid come from SO_PEERCRED, and its view of the mount (where the mount
// appears in its mount namespace) from /proc/<pid>/mountinfo.
package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"fsguard/agent"
	"fsguard/metrics"
	"fsguard/mount"
	"fsguard/read"

	"golang.org/x/sys/unix"
)

// Request is one agent operation. Path and Cwd are in the caller's view.
type Request struct {
	Op       string      `json:"op"` // read | check | write | edit
	Path     string      `json:"path"`
	Cwd      string      `json:"cwd"`
	Session  string      `json:"session"`
	Offset   int64       `json:"offset,omitempty"`
	Limit    int64       `json:"limit,omitempty"`
	Format   string      `json:"format,omitempty"`
	NoDedupe bool        `json:"noDedupe,omitempty"`
	Anchors  bool        `json:"anchors,omitempty"`
	Content  []byte      `json:"content,omitempty"` // write
	Edit     *agent.Edit `json:"edit,omitempty"`
}

// Peer is the connected process, as the kernel reports it.
type Peer struct {
	Pid, Uid uint32
}

type peerKey struct{}

// Server answers requests with a fresh agent.Service per request, built by
// Service for the peer (so a policy reload is seen at once).
type Server struct {
	// Service returns a service for the current guard and journal.
	Service func() *agent.Service
	// MountDev is the mount's device ("major:minor") by which the peer's
	// view of the mount is found in its mountinfo.
	MountDev string
	// Metrics, when set, is served at GET /metrics.
	Metrics *metrics.Set
	http    *http.Server
}

// Serve listens on the unix socket at path (replacing a stale one) and
// serves until Close.
func (s *Server) Serve(path string) error {
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	// Container users connect; who they are is taken from the kernel.
	os.Chmod(path, 0o666)
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
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if p, ok := peerOf(c); ok {
				return context.WithValue(ctx, peerKey{}, p)
			}
			return ctx
		},
	}
	go s.http.Serve(ln)
	return nil
}

// Close stops the server.
func (s *Server) Close() error {
	if s.http == nil {
		return nil
	}
	return s.http.Close()
}

func peerOf(c net.Conn) (Peer, bool) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, false
	}
	var cred *unix.Ucred
	var cerr error
	raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if cerr != nil || cred == nil {
		return Peer{}, false
	}
	return Peer{Pid: uint32(cred.Pid), Uid: cred.Uid}, true
}

// MaxBody bounds a request (a write's content included).
const MaxBody = 64 << 20

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	peer, ok := r.Context().Value(peerKey{}).(Peer)
	if !ok {
		http.Error(w, "no peer credentials", http.StatusForbidden)
		return
	}
	var req Request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&req); err != nil {
		reply(w, agent.Output{Stderr: "Error: bad request: " + err.Error() + "\n", Exit: agent.ExitUsage})
		return
	}
	svc := s.Service()
	svc.Pid, svc.Uid, svc.Process = peer.Pid, peer.Uid, mount.ProcessName(peer.Pid)
	prefix, err := viewOf(peer.Pid, s.MountDev)
	if err != nil {
		reply(w, agent.Output{Stderr: "Error: " + err.Error() + "\n", Exit: agent.ExitFail})
		return
	}
	svc.View = &agent.View{Prefix: prefix, Roots: svc.Guard.Roots()}
	reply(w, Do(svc, req))
}

// Do performs a request with a service.
func Do(svc *agent.Service, req Request) agent.Output {
	switch req.Op {
	case "read":
		res, err := svc.Read(agent.ReadRequest{
			Request: read.Request{Path: req.Path, Offset: req.Offset, Limit: req.Limit, Cwd: req.Cwd, Anchors: req.Anchors},
			Session: req.Session, NoDedupe: req.NoDedupe,
		})
		return agent.RenderRead(req.Path, res, err, req.Format)
	case "check":
		return agent.RenderCheck(svc.Check(req.Path, req.Cwd, req.Session))
	case "write":
		return agent.RenderWrite(svc.Write(req.Path, req.Cwd, req.Session, bytes.NewReader(req.Content)))
	case "edit":
		if req.Edit == nil {
			return agent.Output{Stderr: "Error: bad request: edit without an edit\n", Exit: agent.ExitUsage}
		}
		return agent.RenderEdit(svc.Edit(req.Path, req.Cwd, req.Session, *req.Edit))
	}
	return agent.Output{Stderr: fmt.Sprintf("Error: unknown operation %q\n", req.Op), Exit: agent.ExitUsage}
}

func reply(w http.ResponseWriter, out agent.Output) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// viewOf finds where the peer sees the mount: the mount point, in the
// peer's own mount namespace, of the whole mount with our device number.
func viewOf(pid uint32, dev string) (string, error) {
	ents, err := mount.Mountinfo(int(pid))
	if err != nil {
		return "", fmt.Errorf("cannot see the caller's mounts: %v", err)
	}
	for _, e := range ents {
		if e.Dev == dev && e.Root == "/" {
			return e.MountPoint, nil
		}
	}
	return "", fmt.Errorf("the fsguard mount is not visible to the calling process (a bind of the whole mount is needed); fsguard read over the socket reads through the mount")
}

// Call sends a request to the daemon at socket and returns its answer.
func Call(socket string, req Request) (agent.Output, error) {
	client := &http.Client{
		Timeout: 5 * time.Minute,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}},
	}
	body, _ := json.Marshal(req)
	resp, err := client.Post("http://fsguard/v1/op", "application/json", bytes.NewReader(body))
	if err != nil {
		return agent.Output{}, fmt.Errorf("cannot reach the fsguard daemon at %s: %v", socket, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return agent.Output{}, fmt.Errorf("fsguard daemon at %s answered %s", socket, resp.Status)
	}
	var out agent.Output
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return agent.Output{}, fmt.Errorf("bad answer from the fsguard daemon: %v", err)
	}
	return out, nil
}
