// Package refusal owns fsguard's stable refusal codes and the error value
// that carries one. Every "no" that fsguard says to an agent, an operator or
// a shell tool is a *refusal.Error, so the code is machine-readable and the
// message always says what to do next.
//
// A refusal is data: its code, the operation refused, the path, a reason
// (one stable key per distinct cause) and the facts its message needs. The
// words are rendered at the door that shows them (Render, from the one
// table in render.go): the CLI and the control socket name options as
// flags, MCP as tool arguments; the mount shows no words at all, only an
// errno.
package refusal

import (
	"errors"
)

// Code is a stable, documented refusal code. Codes never change meaning
// between releases; harnesses switch on them.
type Code string

const (
	InvalidInput        Code = "INVALID_INPUT"
	NotFound            Code = "NOT_FOUND"
	NotAFile            Code = "NOT_A_FILE"
	OutsideAllowedRoots Code = "OUTSIDE_ALLOWED_ROOTS"
	DangerousPath       Code = "DANGEROUS_PATH"
	Denied              Code = "DENIED"
	PermissionDenied    Code = "PERMISSION_DENIED"
	Binary              Code = "BINARY"
	Image               Code = "IMAGE"
	TooLarge            Code = "TOO_LARGE"
	Encoding            Code = "ENCODING"
	OffsetOutOfRange    Code = "OFFSET_OUT_OF_RANGE"
	ChangedDuringRead   Code = "CHANGED_DURING_READ"
	IOError             Code = "IO_ERROR"

	// Write preconditions (fsguard check / fsguard write).
	NotObserved  Code = "FS_NOT_OBSERVED"
	StaleVersion Code = "FS_STALE_VERSION"
	// WriteDenied: a [write] deny rule forbids writing the path.
	WriteDenied Code = "FS_WRITE_DENIED"

	// Exact-text edits (fsguard edit --old/--new).
	EditNoMatch   Code = "FS_EDIT_NO_MATCH"
	EditAmbiguous Code = "FS_EDIT_AMBIGUOUS"

	// MaskedSpan: a write or edit would put a credential's mask (see
	// sniff.Mask) where the file holds the credential, or a mask anywhere.
	MaskedSpan Code = "FS_MASKED_SPAN"

	// ArchiveUnchecked: a packed file (gzip, tar, zip) whose members
	// cannot all be checked within fsguard's bounds; it is never served
	// unchecked.
	ArchiveUnchecked Code = "FS_ARCHIVE_UNCHECKED"

	// UnreadableDocument: a document (a PDF, by its content) that
	// fsguard's sandboxed parser cannot read within its bounds:
	// encrypted, damaged, too large, too slow, a bomb.
	UnreadableDocument Code = "UNREADABLE_DOCUMENT"

	// FuseUnavailable: fsguard mount cannot mount here (no FUSE device,
	// or neither the privilege nor fusermount3); said before mounting,
	// with what to add (mount.Preflight).
	FuseUnavailable Code = "FUSE_UNAVAILABLE"

	// NoJournal: there is no journal at the path an audit command reads
	// (fsguard journal ...); such a command never makes one.
	NoJournal Code = "NO_JOURNAL"
)

// Op is the operation a refusal says no to, as its message names it
// ("cannot read ...").
type Op string

// The operations.
const (
	OpRead   Op = "read"
	OpWrite  Op = "write"
	OpEdit   Op = "edit"
	OpCheck  Op = "check"
	OpModify Op = "modify" // a write or an edit, as a precondition says it
	OpCreate Op = "create"
)

// Facts are what a refusal's message needs besides its path, as typed
// values. Paths among them (Roots, Suggestions) are mapped with the
// refusal's own path when it is shown in another view (In); every other
// fact is shown as it is.
type Facts struct {
	// Limit is the bound the request met (bytes, credentials, windows).
	Limit int64 `json:"limit,omitempty"`
	// Line is a line (the first of a range, an offset, a byte position
	// for Byte reasons), End the last line of a range.
	Line int64 `json:"line,omitempty"`
	End  int64 `json:"end,omitempty"`
	// Total counts what the reason counts (lines, names, occurrences).
	Total int64 `json:"total,omitempty"`
	// Unit is what Total counts, where that varies: "line", "entry", "cell".
	Unit  string `json:"unit,omitempty"`
	MIME  string `json:"mime,omitempty"`
	Class string `json:"class,omitempty"`
	// Kind is a file's type ("directory", "FIFO", ...).
	Kind string `json:"kind,omitempty"`
	// Rule is the policy rule that decided.
	Rule string `json:"rule,omitempty"`
	// Arg names the request's option at fault (the read's window options,
	// by their request names), Options all of them, Got the value as given.
	Arg     string   `json:"arg,omitempty"`
	Options []string `json:"options,omitempty"`
	Got     string   `json:"got,omitempty"`
	// At is a byte offset (or a column, counted in bytes from 1).
	At int64 `json:"at,omitempty"`
	// Anchor and Now are an anchor as given and the line's anchor now;
	// AnchorTo ends a range that Anchor begins.
	Anchor   string `json:"anchor,omitempty"`
	AnchorTo string `json:"anchorTo,omitempty"`
	Now      string `json:"now,omitempty"`
	// Member is a path inside a packed file (archives inside archives
	// joined by "/"), Family a credential's family.
	Member string `json:"member,omitempty"`
	Family string `json:"family,omitempty"`
	// Detail is the text of a cause that may be shown (an errno's, a
	// decoding error's), never one that could name a hidden path.
	Detail string `json:"detail,omitempty"`
	// Roots are the allowed roots, Suggestions near names of a path
	// that was not found.
	Roots       []string `json:"roots,omitempty"`
	Suggestions []string `json:"suggestions,omitempty"`
}

// Error is a refusal: a code, the operation, the path as the caller named
// it, the reason and its facts. Err, when set, is the underlying cause; it
// is kept for logs and errors.Is but never shown to the agent, because a
// cause (say, a backing path in an *fs.PathError) could reveal what the
// policy hides.
type Error struct {
	Code   Code   `json:"code"`
	Op     Op     `json:"op,omitempty"`
	Path   string `json:"path,omitempty"`
	Reason Reason `json:"reason,omitempty"`
	Facts
	// Unrecorded, when set, says why this refusal, a denial the journal
	// records, could not be recorded (a full disk), and what becomes of
	// it: every door's message ends with a sentence saying so.
	Unrecorded string `json:"unrecorded,omitempty"`
	Err        error  `json:"-"`
}

// Of returns the refusal for reason, of op on path, with facts f. Its code
// is the reason's (see the table).
func Of(reason Reason, op Op, path string, f Facts) *Error {
	return &Error{Code: reason.Code(), Op: op, Path: path, Reason: reason, Facts: f}
}

// Because returns e with err as its cause.
func (e *Error) Because(err error) *Error {
	e.Err = err
	return e
}

func (e *Error) Error() string { return e.Render(CLI) }
func (e *Error) Unwrap() error { return e.Err }

// Message is the human message (the same as Error).
func (e *Error) Message() string { return e.Error() }

// In returns the refusal with its path and every path among its facts
// (roots, suggestions) mapped by view.
func (e *Error) In(view func(string) string) *Error {
	out := *e
	out.Path = view(e.Path)
	out.Roots = mapped(e.Roots, view)
	out.Suggestions = mapped(e.Suggestions, view)
	return &out
}

func mapped(ps []string, view func(string) string) []string {
	if ps == nil {
		return nil
	}
	m := make([]string, len(ps))
	for i, p := range ps {
		m[i] = view(p)
	}
	return m
}

// CodeOf returns the refusal code carried by err, or IOError for any other
// non-nil error.
func CodeOf(err error) Code {
	var r *Error
	if errors.As(err, &r) {
		return r.Code
	}
	if err == nil {
		return ""
	}
	return IOError
}

// ReasonOf returns the reason of the refusal err carries, or "".
func ReasonOf(err error) Reason {
	var r *Error
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}
