// Package refusal owns fsguard's stable refusal codes and the error value
// that carries one. Every "no" that fsguard says to an agent, an operator or
// a shell tool is a *refusal.Error, so the code is machine-readable and the
// message always says what to do next.
package refusal

import (
	"errors"
	"fmt"
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
)

// Error is a refusal: a code, the path as the caller named it, and a complete
// human message. Err, when set, is the underlying cause; it is kept for
// logs and errors.Is but never shown to the agent, because a cause (say, a
// backing path in an *fs.PathError) could reveal what the policy hides.
type Error struct {
	Code    Code
	Path    string
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// New returns a refusal with a formatted message.
func New(code Code, path, format string, args ...any) *Error {
	return &Error{Code: code, Path: path, Message: fmt.Sprintf(format, args...)}
}

// Cannot returns the common form `cannot read "<path>": <why>`.
func Cannot(code Code, path, why string) *Error {
	return &Error{Code: code, Path: path, Message: fmt.Sprintf("cannot read %q: %s", path, why)}
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
