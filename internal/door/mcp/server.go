// Package mcp owns fsguard's Model Context Protocol front end: the
// tools read, check, write and edit over stdio (the official Go SDK), with the
// session bound to the connection. Every tool call becomes the same
// request the CLI makes, so results carry exactly the text of `fsguard
// read`, and refusals come back as tool errors with the stable code.
package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/service/api"
	"github.com/fsguard/fsguard/internal/service/edit"
	"github.com/fsguard/fsguard/internal/service/read"
	"github.com/fsguard/fsguard/internal/service/session"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Perform carries out one request, with a write's content (else nil),
// directly or through the daemon.
type Perform func(api.Request, io.Reader) session.Output

// ReadArgs are the read tool's arguments.
type ReadArgs struct {
	Path    string `json:"path"`
	Offset  int64  `json:"offset,omitempty"`
	Limit   int64  `json:"limit,omitempty"`
	Anchors bool   `json:"anchors,omitempty"`
	Full    bool   `json:"full,omitempty"`
	// Windows, Around, Radius and Block: see read.Request.
	Windows []read.Range `json:"windows,omitempty"`
	Around  string       `json:"around,omitempty"`
	Radius  int64        `json:"radius,omitempty"`
	Block   int64        `json:"block,omitempty"`
	// Pages and As: a document's pages, and "document" for the document
	// itself (see read.Request).
	Pages string `json:"pages,omitempty"`
	As    string `json:"as,omitempty"`
}

// CheckArgs are the check tool's arguments.
type CheckArgs struct {
	Path string `json:"path"`
}

// WriteArgs are the write tool's arguments.
type WriteArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// EditArgs are the edit tool's arguments: one anchored edit, or the
// old_string/new_string form.
type EditArgs struct {
	Path        string  `json:"path"`
	Replace     *string `json:"replace,omitempty"`
	InsertAfter *string `json:"insert_after,omitempty"`
	Delete      *string `json:"delete,omitempty"`
	Text        *string `json:"text,omitempty"`
	OldString   *string `json:"old_string,omitempty"`
	NewString   *string `json:"new_string,omitempty"`
}

// pathSchema: a non-blank path without NUL.
func pathSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", MinLength: ptr(1), Pattern: `^[^\x00]*[^\s\x00][^\x00]*$`,
		Description: "file path: absolute, or relative to the project (the allowed root, or the mount's top)"}
}

func positive(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Minimum: ptr(float64(read.MinCount)), Description: desc}
}

func object(props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
}

func ptr[T any](v T) *T { return &v }

// readFacts is the read tool's outputSchema: the structuredContent every
// read answer (a refusal too) carries beside its text (session.ReadFacts).
func readFacts() *jsonschema.Schema {
	str := func(d string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: d} }
	obj := func(d string) *jsonschema.Schema { return &jsonschema.Schema{Type: "object", Description: d} }
	return &jsonschema.Schema{Type: "object", Required: []string{"status", "path"}, Properties: map[string]*jsonschema.Schema{
		"status":       {Type: "string", Enum: []any{"ok", "error"}},
		"code":         str("the refusal code, when refused"),
		"message":      str("the refusal's message, when refused"),
		"path":         str("the file, as the agent sees it"),
		"type":         {Type: "string", Enum: []any{"file", "directory", "notebook", "image", "document"}, Description: "what was read"},
		"pages":        {Type: "integer", Description: "a document's page count"},
		"range":        obj("the lines shown: start, end"),
		"totals":       obj("the file's lines and bytes, and whether the count is complete"),
		"truncation":   obj("what cut the window: reason, clamped lines"),
		"continuation": {Types: []string{"object", "null"}, Description: "the next read's arguments (path, offset, limit), or null at the end"},
		"observation":  obj("what this read showed of which version: statId, contentId, viewId, id, wholeFileVisible, range"),
		"held":         {Type: "boolean", Description: "answered with a notice or a diff, not the lines"},
	}}
}

// opFacts is the outputSchema of check, write and edit: the
// structuredContent each answer (a refusal too) carries, derived from
// the one type that makes it (session.OpFacts).
func opFacts() *jsonschema.Schema {
	schema, err := jsonschema.For[session.OpFacts](nil)
	if err != nil {
		panic("mcp: the schema of session.OpFacts: " + err.Error()) // a programming error, found by any test
	}
	return schema
}

// instructions tell a client how the tools fit together.
const instructions = `fsguard serves files inside the allowed roots. A relative path (src/main.go) is relative to the project: the server's working directory when it lies inside the roots, else the only root (with several roots, give absolute paths; a refusal names the roots). read returns a line-numbered window of a text file; its footer says exactly how to continue (offset=N). A re-read of lines this session already holds answers with a short notice instead; pass full: true to get the lines again, or call forget once after your context was compacted or cleared. To change a file: read it (anchors: true shows each line as N#hh: text), then edit naming lines by those anchors (replace, insert_after, delete; a range is N#hh..M#hh) or by exact old_string/new_string, or write the whole content. Writes are refused unless this session read the current version (FS_NOT_OBSERVED, FS_STALE_VERSION: read again, then retry). Every refusal is a tool error "CODE: message" whose message says what to do next.`

// New returns the MCP server. sessionID names the connection's session; an
// empty one gets a fresh random id, so every connection is its own session.
// A session named by the operator starts this connection holding nothing
// (the model behind a new connection was shown nothing yet), unless
// resume: then it holds what earlier connections of that session were
// shown. The forget tool drops what it holds, for a client that
// compacted its context.
func New(version, sessionID string, resume bool, perform Perform) *mcp.Server {
	perform = fromRoot(perform)
	var since atomic.Int64
	mark := func() error {
		out := perform(api.Request{Op: "mark", Via: "mcp"}, nil)
		var m struct{ Seq int64 }
		if out.Exit != 0 {
			return errors.New(out.Message)
		}
		if err := json.Unmarshal(out.Structured, &m); err != nil {
			return fmt.Errorf("the answer to mark has no sequence number: %v", err)
		}
		since.Store(m.Seq)
		return nil
	}
	if sessionID == "" {
		var b [8]byte
		rand.Read(b[:])
		sessionID = "mcp-" + hex.EncodeToString(b[:])
	} else if !resume {
		mark() // without a journal there is nothing held to start from
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "fsguard", Title: "fsguard", Version: version}, &mcp.ServerOptions{Instructions: instructions})
	addTool(s, &mcp.Tool{
		Name:        "read",
		Title:       "Read a file",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
		Description: "Read a line-numbered window of a text file (UTF-8, or UTF-16/32 with a BOM), a directory's entries, a notebook's cells, or a PDF's text by pages (pages: \"A-B\", at most 20; as: \"document\" also returns the PDF). " +
			"The footer says exactly how to continue (offset=N). windows reads several spans at once; around centres a window on an N#hh anchor; block returns the indented block enclosing a line.",
		OutputSchema: readFacts(),
		InputSchema: object(map[string]*jsonschema.Schema{
			"path":    pathSchema(),
			"offset":  positive("first line to show, 1-based (default 1)"),
			"limit":   positive("most lines to show (default and maximum: the policy's max_lines)"),
			"anchors": {Type: "boolean", Description: "show each line as N#hh: text; the N#hh anchors name lines for the edit tool"},
			"full":    {Type: "boolean", Description: "send the lines even if this session already holds them (after the client dropped them from its context)"},
			"windows": {Type: "array", MinItems: ptr(1), MaxItems: ptr(read.MaxWindows), Description: "several windows of one version in one answer, each with its own footer (instead of offset)",
				Items: object(map[string]*jsonschema.Schema{"start": positive("first line"), "end": positive("last line")}, "start", "end")},
			"around": {Type: "string", Pattern: `^` + lines.RefPattern + `$`, Description: "an N#hh anchor from an anchors read: the window centred on that line (a changed line is noted)"},
			"radius": positive(fmt.Sprintf("lines either side of around's line (default %d)", read.DefaultRadius)),
			"block":  positive("a line number: the smallest block by indentation that encloses it (a function, a class, an if)"),
			"pages":  {Type: "string", Pattern: `^[0-9]+(-[0-9]+)?$`, Description: fmt.Sprintf("a PDF's pages to read, N or A-B, at most %d a call (default: the first %d)", read.MaxPages, read.MaxPages)},
			"as":     {Type: "string", Enum: []any{"text", "document"}, Description: `"document": also return the PDF itself (or a new PDF of the pages asked for) as an embedded application/pdf resource, for models that take PDFs`},
		}, "path"),
	}, func(a ReadArgs) *mcp.CallToolResult {
		req := api.Request{Op: "read", Path: a.Path, Offset: a.Offset, Limit: a.Limit, Anchors: a.Anchors, NoDedupe: a.Full,
			Windows: a.Windows, Around: a.Around, Radius: a.Radius, Block: a.Block, Pages: a.Pages, As: a.As, Again: "full: true", Session: sessionID, Via: "mcp", Since: since.Load()}
		if bad := req.Read().Check(); bad != nil {
			return result(session.RenderRead(a.Path, nil, bad.Refusal(), ""))
		}
		return result(perform(req, nil))
	})
	addTool(s, &mcp.Tool{
		Name:         "check",
		OutputSchema: opFacts(),
		Title:        "Check a write",
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
		Description:  "Say whether this session may write the file: it must have read the current version.",
		InputSchema:  object(map[string]*jsonschema.Schema{"path": pathSchema()}, "path"),
	}, func(a CheckArgs) *mcp.CallToolResult {
		return result(perform(api.Request{Op: "check", Path: a.Path, Session: sessionID, Via: "mcp", Since: since.Load()}, nil))
	})
	addTool(s, &mcp.Tool{
		Name:         "write",
		OutputSchema: opFacts(),
		Title:        "Write a file",
		Annotations:  &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
		Description:  "Replace (or create) a file atomically. Refused unless this session read the current version.",
		InputSchema: object(map[string]*jsonschema.Schema{
			"path":    pathSchema(),
			"content": {Type: "string", Description: "the complete new content"},
		}, "path", "content"),
	}, func(a WriteArgs) *mcp.CallToolResult {
		return result(perform(api.Request{Op: "write", Path: a.Path, Session: sessionID, Via: "mcp", Since: since.Load()}, strings.NewReader(a.Content)))
	})
	anchorSchema := func(desc string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "string", Pattern: edit.AnchorPattern, Description: desc}
	}
	addTool(s, &mcp.Tool{
		Name:         "edit",
		OutputSchema: opFacts(),
		Title:        "Edit lines of a file",
		Annotations:  &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)},
		Description: "Change lines of a file atomically. Name lines by the N#hh anchors a read with anchors=true showed (replace, insert_after, delete; a range is N#hh..M#hh), " +
			"or give old_string (must occur exactly once) and new_string. Refused only if a touched line was never shown to this session (FS_NOT_OBSERVED) or changed since (FS_STALE_VERSION); " +
			"changes elsewhere in the file are kept. The result shows the changed lines with their new anchors.",
		InputSchema: object(map[string]*jsonschema.Schema{
			"path":         pathSchema(),
			"replace":      anchorSchema("the line or range N#hh..M#hh to replace with text"),
			"insert_after": anchorSchema("the line to insert text after (0: before line 1)"),
			"delete":       anchorSchema("the line or range N#hh..M#hh to delete"),
			"text":         {Type: "string", Description: "the new lines for replace or insert_after"},
			"old_string":   {Type: "string", MinLength: ptr(1), Description: "exact text to replace; must occur exactly once"},
			"new_string":   {Type: "string", Description: "the text that replaces old_string"},
		}, "path"),
	}, func(a EditArgs) *mcp.CallToolResult {
		ed, err := edit.Spec{Replace: a.Replace, InsertAfter: a.InsertAfter, Delete: a.Delete, Text: a.Text, Old: a.OldString, New: a.NewString}.Edit()
		if err != nil {
			return result(session.RenderEdit(nil, err))
		}
		return result(perform(api.Request{Op: "edit", Path: a.Path, Edit: &ed, Session: sessionID, Via: "mcp", Since: since.Load()}, nil))
	})
	addTool(s, &mcp.Tool{
		Name:        "forget",
		Title:       "Forget what this session was shown",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
		Description: "Call after your context was compacted or cleared: this session then holds nothing, so reads send the lines again " +
			"(never a notice that you already hold them), and a write or edit needs a fresh read first.",
		InputSchema: object(map[string]*jsonschema.Schema{}),
	}, func(_ struct{}) *mcp.CallToolResult {
		if err := mark(); err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "IO_ERROR: cannot forget: " + err.Error()}}}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Forgotten: this session holds nothing now. Reads send the lines again; read a file before you write or edit it."}}}
	})
	return s
}

// fromRoot has every request's relative path resolved against the
// project, not the server's working directory, which the model cannot
// know (api.Request.FromRoot).
func fromRoot(perform Perform) Perform {
	return func(req api.Request, content io.Reader) session.Output {
		req.FromRoot = true
		return perform(req, content)
	}
}

// result turns a command's output into a tool result: stdout as the text
// on success; on refusal an error result "CODE: message", the message in
// the tools' words (options as arguments) when the refusal came as data.
func result(out session.Output) *mcp.CallToolResult {
	if out.Exit != 0 {
		msg := out.Message // every refused or failed answer has one
		if out.Refusal != nil {
			msg = out.Refusal.Render(refusal.MCP)
			out.Structured = withMessage(out.Structured, msg)
		}
		if out.Code != "" {
			msg = out.Code + ": " + msg
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}, StructuredContent: structured(out)}
	}
	content := []mcp.Content{&mcp.TextContent{Text: out.Stdout}}
	if out.Image != nil && out.Image.Data != nil {
		content = append(content, &mcp.ImageContent{Data: out.Image.Data, MIMEType: out.Image.MIME})
	}
	if out.Document != nil && out.Document.Data != nil {
		content = append(content, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "fsguard:document.pdf", MIMEType: out.Document.MIME, Blob: out.Document.Data}})
	}
	if notes := strings.TrimSpace(out.Stderr); notes != "" {
		content = append(content, &mcp.TextContent{Text: notes})
	}
	return &mcp.CallToolResult{Content: content, StructuredContent: structured(out)}
}

// withMessage is structured facts with their "message" said anew.
func withMessage(facts json.RawMessage, msg string) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(facts, &m) != nil || m == nil {
		return facts
	}
	m["message"] = msg
	b, err := json.Marshal(m)
	if err != nil {
		return facts
	}
	return b
}

// structured is an answer's facts for structuredContent, or nil.
func structured(out session.Output) any {
	if len(out.Structured) == 0 {
		return nil
	}
	return out.Structured
}
