// Package api is the one request vocabulary of fsguard's front ends: the
// CLI in direct mode, the control socket's server and the MCP server all
// turn what they were asked into a Request and have Do perform it on a
// session service made for the caller, so no door offers more, or checks
// less, than another.
package api

import (
	"fmt"
	"github.com/fsguard/fsguard/internal/service/edit"
	"io"

	"github.com/fsguard/fsguard/internal/service/read"
	"github.com/fsguard/fsguard/internal/service/session"
)

// Request is one agent operation. Path and Cwd are in the caller's view. A
// write's content is not part of it: it travels beside the request as a
// stream (see Do), so a large write is never held in memory whole.
type Request struct {
	Op       string `json:"op"` // read | check | write | edit | status | state | mark
	Path     string `json:"path"`
	Cwd      string `json:"cwd"`
	Session  string `json:"session"`
	Offset   int64  `json:"offset,omitempty"`
	Limit    int64  `json:"limit,omitempty"`
	Format   string `json:"format,omitempty"`
	NoDedupe bool   `json:"noDedupe,omitempty"`
	// Again is how this door\'s caller asks for the lines even if held, as
	// answers should name it ("" is the CLI\'s --no-dedupe).
	Again   string     `json:"again,omitempty"`
	Anchors bool       `json:"anchors,omitempty"`
	Edit    *edit.Edit `json:"edit,omitempty"`
	// Windows, Around (with Radius) and Block ask a read for windows other
	// than offset/limit (see read.Request).
	Windows []read.Range `json:"windows,omitempty"`
	Around  string       `json:"around,omitempty"`
	Radius  int64        `json:"radius,omitempty"`
	Block   int64        `json:"block,omitempty"`
	// Pages selects a document's pages ("N" or "A-B"); As "document"
	// asks for the document itself too (read.Request.AsDocument).
	Pages string `json:"pages,omitempty"`
	As    string `json:"as,omitempty"`
	// ID is the caller's name for a write or edit: its intent is recorded
	// under it, so a caller that lost the connection before the answer
	// asks {"op": "status", "id": ID} whether it happened.
	ID string `json:"id,omitempty"`
	// Since: count only what the session was shown after this journal
	// record (the start of a client's connection, or its forget; see the
	// op "mark"). It can only ask for more, never less.
	Since int64 `json:"since,omitempty"`
	// Via names the front end that sent the request through the socket
	// ("cli", "mcp"): a metrics label, never a decision.
	Via string `json:"via,omitempty"`
	// FromRoot: a relative Path resolves against Cwd only when Cwd lies
	// in what the caller can see, else against the mount's top or the
	// only root (session.Service.Base): for a door whose caller cannot
	// know the process's working directory (MCP).
	FromRoot bool `json:"fromRoot,omitempty"`
}

// Read is a read request's part that read.Request takes, with its window
// options (read.Request.Check is their one check).
func (r Request) Read() read.Request {
	return read.Request{Path: r.Path, Offset: r.Offset, Limit: r.Limit, Cwd: r.Cwd, Anchors: r.Anchors,
		Windows: r.Windows, Around: r.Around, Radius: r.Radius, Block: r.Block, Pages: r.Pages, AsDocument: r.As == "document"}
}

// CheckFormat is the rule for an answer's format: text or json.
func CheckFormat(format string) error {
	if format != "text" && format != "json" {
		return fmt.Errorf("--format must be text or json, got %q", format)
	}
	return nil
}

// MaxID bounds a request id: it is recorded with the write's intent.
const MaxID = 128

// MaxContent bounds what one write may carry.
const MaxContent = 64 << 20

// Do performs a request with a service made for its caller (session.Service.As).
// content is a write's new content, read at most MaxContent bytes; a larger
// one fails the write rather than truncate it.
func Do(svc *session.Service, req Request, content io.Reader) session.Output {
	if req.Session == "" && (req.Op == "check" || req.Op == "write" || req.Op == "edit") {
		// Without a session, anyone's sessionless read would pass anyone's
		// sessionless write: a precondition needs to know whose reads count.
		return usage(fmt.Sprintf("%s needs a session: pass --session ID or set FSGUARD_SESSION (the id the agent's reads used)", req.Op))
	}
	if len(req.ID) > MaxID {
		return usage(fmt.Sprintf("the request id is %d bytes; at most %d", len(req.ID), MaxID))
	}
	if req.Since < 0 {
		return usage("since must not be negative")
	}
	svc = svc.ForRequest(req.ID, req.Since)
	if req.FromRoot {
		req.Cwd = svc.Base(req.Cwd)
	}
	if err := CheckFormat(req.Format); err != nil && req.Op != "read" && req.Format != "" {
		return usage(err.Error())
	}
	out := do(svc, req, content)
	if req.Op != "read" && req.Format == "json" {
		out = session.AsJSON(out)
	}
	return out
}

func do(svc *session.Service, req Request, content io.Reader) session.Output {
	switch req.Op {
	case "status":
		st, err := svc.Status(req.ID)
		return session.RenderStatus(req.ID, st, err)
	case "state":
		return session.RenderState(svc.State())
	case "mark":
		seq, err := svc.Mark()
		return session.RenderMark(seq, err)
	case "read":
		res, err := svc.Read(session.ReadRequest{Request: req.Read(), Session: req.Session, NoDedupe: req.NoDedupe, Again: req.Again})
		return session.RenderRead(req.Path, res, err, req.Format)
	case "check":
		return session.RenderCheck(svc.Check(req.Path, req.Cwd, req.Session))
	case "write":
		if content == nil {
			return usage("bad request: write without content")
		}
		return session.RenderWrite(svc.Write(req.Path, req.Cwd, req.Session, &capped{r: content, left: MaxContent}))
	case "edit":
		if req.Edit == nil {
			return usage("bad request: edit without an edit")
		}
		return session.RenderEdit(svc.Edit(req.Path, req.Cwd, req.Session, *req.Edit))
	}
	return usage(fmt.Sprintf("unknown operation %q", req.Op))
}

func usage(msg string) session.Output {
	return session.Output{Stderr: "Error: " + msg + "\n", Exit: session.ExitUsage, Message: msg}
}

// capped reads at most left bytes and fails, rather than stop quietly,
// when there are more.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, _ := io.ReadFull(c.r, one[:]); n > 0 {
			return 0, fmt.Errorf("the content is larger than %d bytes, the most one write takes", MaxContent)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
