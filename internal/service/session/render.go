package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"github.com/fsguard/fsguard/internal/service/read"
)

// Output is a command's complete answer: what goes to stdout and stderr,
// and the exit status. The CLI prints it; the control socket sends it, so
// an answer through the daemon is byte-identical to a direct one.
type Output struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Exit   int    `json:"exit"`
	// Code is the refusal code when the operation was refused.
	Code string `json:"code,omitempty"`
	// Message is the refusal's message alone, without "Error: ".
	Message string `json:"message,omitempty"`
	// Refusal is the refusal itself, as data, for a front end that says it
	// in its own words (MCP: Render(refusal.MCP)); Message is the CLI's.
	Refusal *refusal.Error `json:"refusal,omitempty"`
	// Image carries an image read's bytes for front ends that can show
	// them (MCP); the text output only describes it.
	Image *read.Image `json:"image,omitempty"`
	// Document carries a document read's bytes when it was asked for as a
	// document (MCP's as: "document").
	Document *read.Document `json:"document,omitempty"`
	// Structured is the answer's facts as an object (a read's path, range,
	// totals, truncation, continuation, observation; a refusal's code and
	// message), for front ends that carry them beside the text (MCP's
	// structuredContent).
	Structured json.RawMessage `json:"structured,omitempty"`
}

// ReadFacts is what a read's structured answer carries.
type ReadFacts struct {
	Status  string `json:"status"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Unrecorded says why a denial could not be recorded in the journal
	// (refusal.Error.Unrecorded); absent when it was.
	Unrecorded string `json:"unrecorded,omitempty"`
	Path       string `json:"path"`
	Type       string `json:"type,omitempty"` // file, directory, notebook, image or document
	// Pages is a document's page count.
	Pages        int64              `json:"pages,omitempty"`
	Range        *read.Range        `json:"range,omitempty"`
	Totals       *read.Totals       `json:"totals,omitempty"`
	Truncation   *read.Truncation   `json:"truncation,omitempty"`
	Continuation *read.Continuation `json:"continuation"`
	Observation  *read.Observation  `json:"observation,omitempty"`
	// Held: the answer was a notice or a diff, not the lines.
	Held bool `json:"held,omitempty"`
}

func facts(name string, res *ReadResult, err error) json.RawMessage {
	f := ReadFacts{Status: "ok", Path: name}
	if err != nil {
		f.Status, f.Code, f.Message = "error", string(refusal.CodeOf(err)), err.Error()
		var r *refusal.Error
		if errors.As(err, &r) && r.Path != "" {
			f.Path = r.Path
		}
		if r != nil {
			f.Unrecorded = r.Unrecorded
		}
	} else {
		f.Path, f.Range, f.Totals, f.Truncation = res.Path, &res.Range, &res.Totals, &res.Truncation
		f.Continuation, f.Observation, f.Held, f.Type = res.Continuation, &res.Observation, res.Notice != "" || res.held(), res.Kind()
		if res.Listing != nil {
			f.Totals, f.Observation = nil, nil // a listing observes no file
		}
		if res.Document != nil {
			f.Pages = res.Document.Pages
		}
	}
	b, _ := json.Marshal(f)
	return b
}

// Exit statuses: every front end (the CLI, the control socket, MCP's
// refusals) answers with these, and ExitStatuses says what each means.
const (
	ExitOK          = 0
	ExitFail        = 1
	ExitUsage       = 2
	ExitNotObserved = 3
	ExitStale       = 4
	// ExitJournalMoved: a follower (journal tail --follow) found another
	// journal, or none, at the path of the one it followed.
	ExitJournalMoved = 5
)

// ExitStatus is one exit status: the refusal codes answered with it, and
// what it means, as the CLI's usage shows it (lines after the first are
// continuations).
type ExitStatus struct {
	Exit  int
	Codes []refusal.Code
	Means string
}

// ExitStatuses is the one table of exit statuses, in order. A refusal
// whose code no row names exits ExitFail.
var ExitStatuses = []ExitStatus{
	{ExitOK, nil, "done"},
	{ExitFail, nil, "refused or failed: the message says why and what to do\n(status: NOT_WRITTEN or IN_PROGRESS)"},
	{ExitUsage, nil, "usage error: unknown command or flag, a bad flag value, a bad\npolicy file, no session for check/write/edit"},
	{ExitNotObserved, []refusal.Code{refusal.NotObserved}, "check/write/edit: FS_NOT_OBSERVED (the session has not read the file)"},
	{ExitStale, []refusal.Code{refusal.StaleVersion}, "check/write/edit: FS_STALE_VERSION (the file changed since it was read)"},
	{ExitJournalMoved, nil, "journal tail --follow: the journal at its path is no longer the one it\nfollowed (moved aside, replaced: started anew); --reopen follows the new one"},
}

// ExitOf is the exit status of a refusal with this code.
func ExitOf(code refusal.Code) int {
	for _, s := range ExitStatuses {
		if slices.Contains(s.Codes, code) {
			return s.Exit
		}
	}
	return ExitFail
}

func errorOutput(err error) Output {
	code := refusal.CodeOf(err)
	msg := termsafe.Escape(err.Error()) // an error that is no refusal may name a path raw
	return Output{Stderr: "Error: " + msg + "\n", Exit: ExitOf(code), Code: string(code), Message: msg, Refusal: asData(err)}
}

// asData is the refusal err carries, for a door that renders it in its
// own words, or nil.
func asData(err error) *refusal.Error {
	var r *refusal.Error
	if errors.As(err, &r) {
		return r
	}
	return nil
}

// RenderRead renders a read's outcome in "text" or "json".
func RenderRead(name string, res *ReadResult, err error, format string) Output {
	if err != nil {
		if format == "json" {
			return Output{Stdout: string(read.ErrorJSON(name, err, nil)), Exit: ExitOf(refusal.CodeOf(err)), Code: string(refusal.CodeOf(err)), Message: err.Error(), Refusal: asData(err), Structured: facts(name, nil, err)}
		}
		out := errorOutput(err)
		out.Structured = facts(name, nil, err)
		return out
	}
	if format == "json" {
		return Output{Stdout: string(res.JSON()), Structured: facts(name, res, nil)}
	}
	var notes strings.Builder
	for _, n := range res.Notes {
		fmt.Fprintf(&notes, "Note: %s\n", n)
	}
	out := Output{Stdout: res.Text(), Stderr: notes.String(), Image: res.Image, Structured: facts(name, res, nil)}
	if res.Document != nil && res.Document.Data != nil {
		out.Document = res.Document
	}
	return out
}

// RenderCheck renders a check's outcome.
func RenderCheck(f *Freshness, err error) Output {
	if err != nil {
		return refused(errorOutput(err))
	}
	facts := OpFacts{Status: "fresh", Path: f.Path, NewFile: f.NewFile}
	if f.NewFile {
		return withFacts(Output{Stdout: fmt.Sprintf("fresh: %q does not exist yet; it may be created\n", f.Path)}, facts)
	}
	return withFacts(Output{Stdout: fmt.Sprintf("fresh: %q is the version this session read\n", f.Path)}, facts)
}

// OpFacts is what the structured answer of a check, write or edit
// carries (--format json, MCP's structuredContent).
type OpFacts struct {
	// Status: "fresh" (check), "written", "created", "edited", or
	// "refused" (then Code and Message say why).
	Status     string `json:"status"`
	Code       string `json:"code,omitempty"`
	Message    string `json:"message,omitempty"`
	Path       string `json:"path,omitempty"`
	NewFile    bool   `json:"newFile,omitempty"`
	Bytes      int64  `json:"bytes,omitempty"`
	TotalLines int64  `json:"totalLines,omitempty"`
	ContentID  string `json:"contentId,omitempty"`
	// An edit's changed lines in the new version, how far later lines
	// moved, the lines shown with their anchors, and whether the file had
	// also changed elsewhere.
	Start     int64  `json:"start,omitempty"`
	End       int64  `json:"end,omitempty"`
	Moved     int64  `json:"moved,omitempty"`
	Shown     string `json:"shown,omitempty"`
	Elsewhere bool   `json:"elsewhere,omitempty"`
}

func withFacts(out Output, f OpFacts) Output {
	out.Structured, _ = json.Marshal(f)
	return out
}

// refused gives a refusal its structured form.
func refused(out Output) Output {
	return withFacts(out, OpFacts{Status: "refused", Code: out.Code, Message: out.Message})
}

// AsJSON turns an answer into its --format json form: the structured
// facts on stdout, nothing on stderr, the same exit status.
func AsJSON(out Output) Output {
	if len(out.Structured) == 0 {
		return out
	}
	out.Stdout, out.Stderr = string(out.Structured)+"\n", ""
	return out
}

// RenderWrite renders a write's outcome.
func RenderWrite(res *WriteResult, err error) Output {
	if err != nil {
		out := refused(errorOutput(err))
		if res != nil { // written, but not recorded
			out.Stdout = fmt.Sprintf("replaced %q: %d bytes, %d lines\n", res.Path, res.Bytes, res.TotalLines)
			out = withFacts(out, OpFacts{Status: "written", Code: out.Code, Message: out.Message, Path: res.Path, Bytes: res.Bytes, TotalLines: res.TotalLines, ContentID: res.ContentID})
		}
		return out
	}
	verb, status := "replaced", "written"
	if res.Created {
		verb, status = "created", "created"
	}
	return withFacts(Output{Stdout: fmt.Sprintf("%s %q: %d bytes, %d lines\n", verb, res.Path, res.Bytes, res.TotalLines), Stderr: unconfirmedNote(res)},
		OpFacts{Status: status, Path: res.Path, Bytes: res.Bytes, TotalLines: res.TotalLines, ContentID: res.ContentID})
}

// unconfirmedNote is the note of a write made but not known to be durable
// (WriteResult.Unconfirmed), or "".
func unconfirmedNote(res *WriteResult) string {
	if res == nil || res.Unconfirmed == "" {
		return ""
	}
	return "Note: written; durability not confirmed (" + termsafe.Escape(res.Unconfirmed) + "): the file was replaced and the journal records it, but it may not survive a power loss until its directory is synced; do not write it again\n"
}

// RenderEdit renders an edit's outcome: the changed lines with context and
// their anchors, so the next edit needs no re-read, and where later lines
// went.
func RenderEdit(res *EditResult, err error) Output {
	if res == nil {
		return refused(errorOutput(err))
	}
	var b strings.Builder
	b.WriteString("<path>" + termsafe.Quote(res.Path) + "</path>\n<type>edit</type>\n<content>\n" + res.Shown + "\n")
	moved := ""
	switch after := res.End < res.TotalLines; {
	case after && res.Moved > 0:
		moved = fmt.Sprintf(" Lines after them moved down by %d.", res.Moved)
	case after && res.Moved < 0:
		moved = fmt.Sprintf(" Lines after them moved up by %d.", -res.Moved)
	}
	switch {
	case res.End == res.Start:
		fmt.Fprintf(&b, "(Edited line %d.%s The file now has %d lines.)\n", res.Start, moved, res.TotalLines)
	case res.End > res.Start:
		fmt.Fprintf(&b, "(Edited lines %d-%d.%s The file now has %d lines.)\n", res.Start, res.End, moved, res.TotalLines)
	default:
		fmt.Fprintf(&b, "(Edited: lines deleted after line %d.%s The file now has %d lines.)\n", res.End, moved, res.TotalLines)
	}
	b.WriteString("</content>\n")
	out := Output{Stdout: b.String()}
	if res.Elsewhere {
		out.Stderr = "Note: the file had also changed elsewhere since your last read; those changes were kept. Read those lines again before relying on them.\n"
	}
	out.Stderr += unconfirmedNote(res.WriteResult)
	facts := OpFacts{Status: "edited", Path: res.Path, Bytes: res.Bytes, TotalLines: res.TotalLines, ContentID: res.ContentID,
		Start: res.Start, End: res.End, Moved: res.Moved, Shown: res.Shown, Elsewhere: res.Elsewhere}
	if err != nil {
		e := errorOutput(err)
		out.Stderr += e.Stderr
		out.Exit, out.Code, out.Message, out.Refusal = e.Exit, e.Code, e.Message, e.Refusal
		facts.Code, facts.Message = e.Code, e.Message
	}
	return withFacts(out, facts)
}
