// Package refusal owns fsguard's stable refusal codes and the error value
// that carries one. Every "no" that fsguard says to an agent, an operator or
// a shell tool is a *refusal.Error, so the code is machine-readable and the
// message always says what to do next.
package refusal

import (
	"errors"
	"fmt"
	"strings"
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
)

// Error is a refusal: a code, the path as the caller named it, and a complete
// human message. Err, when set, is the underlying cause; it is kept for
// logs and errors.Is but never shown to the agent, because a cause (say, a
// backing path in an *fs.PathError) could reveal what the policy hides.
//
// The message is kept as a format and its arguments, with every file path
// among them a Path, so a front end that shows paths in another view (the
// control socket: the container's /workspace, not the host's /srv/project)
// renders the same refusal in that view (In) — no search and replace in
// finished text.
type Error struct {
	Code   Code
	Path   string
	Format string
	Args   []any
	Err    error
}

// Path is a file path inside a refusal's message.
type Path string

func (e *Error) Error() string { return fmt.Sprintf(e.Format, e.Args...) }
func (e *Error) Unwrap() error { return e.Err }

// Message is the human message (the same as Error).
func (e *Error) Message() string { return e.Error() }

// In returns the refusal with its path and every path of its message
// mapped by view.
func (e *Error) In(view func(string) string) *Error {
	out := *e
	out.Path = view(e.Path)
	out.Args = make([]any, len(e.Args))
	for i, a := range e.Args {
		switch v := a.(type) {
		case Path:
			out.Args[i] = Path(view(string(v)))
		case Paths:
			out.Args[i] = v.mapped(view)
		case Alternatives:
			out.Args[i] = Alternatives(Paths(v).mapped(view))
		default:
			out.Args[i] = a
		}
	}
	return &out
}

// Paths is a list of paths in a message, shown as "a", "b".
type Paths []Path

func (ps Paths) String() string { return ps.join(", ") }

// Alternatives is a list of paths in a message, shown as "a" or "b".
type Alternatives []Path

func (ps Alternatives) String() string { return Paths(ps).join(" or ") }

func (ps Paths) join(sep string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = fmt.Sprintf("%q", string(p))
	}
	return strings.Join(q, sep)
}

func (ps Paths) mapped(view func(string) string) Paths {
	m := make(Paths, len(ps))
	for k, p := range ps {
		m[k] = Path(view(string(p)))
	}
	return m
}

// New returns a refusal with a formatted message. An argument equal to path
// is the refusal's own path, and is mapped with it (see In).
func New(code Code, path, format string, args ...any) *Error {
	for i, a := range args {
		if s, ok := a.(string); ok && s == path && path != "" {
			args[i] = Path(s)
		}
	}
	return &Error{Code: code, Path: path, Format: format, Args: args}
}

// Cannot returns the common form `cannot read "<path>": <why>`.
func Cannot(code Code, path, why string) *Error {
	return &Error{Code: code, Path: path, Format: "cannot read %q: %s", Args: []any{Path(path), why}}
}

// Cannotf is Cannot with a formatted why, whose Path arguments are mapped
// like the refusal's own path.
func Cannotf(code Code, path, format string, args ...any) *Error {
	return &Error{Code: code, Path: path, Format: "cannot read %q: " + format, Args: append([]any{Path(path)}, args...)}
}

// Unobserved is FS_NOT_OBSERVED: the session has not seen (all of) what
// it wants to change.
func Unobserved(path, why string) *Error {
	return New(NotObserved, path, "cannot modify %q: %s — read the file, then retry", path, why)
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
