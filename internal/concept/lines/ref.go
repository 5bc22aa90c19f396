package lines

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// Ref names one line as an --anchors read shows it, "N#hh": its number
// (1-based) and its anchor (Anchor of its text). It is the one grammar of
// a named line for every front end and every request that takes one (an
// edit's lines, a read around a line).
type Ref struct {
	Line int64
	Hash string
}

// RefPattern is a Ref's grammar as a regular expression without ^ and $,
// for schemas that build on it: digits naming a line of 1 or more, "#",
// and the anchor's two lower-case hex digits.
const RefPattern = `0*[1-9][0-9]*#[0-9a-f]{2}`

// Why a value is not a Ref.
var (
	// ErrNotRef: the value is not of the form N#hh.
	ErrNotRef = errors.New("not an anchor")
	// ErrNoLine: the form is right, but N names no line (0, or too large).
	ErrNoLine = errors.New("names no line")
)

var refForm = regexp.MustCompile(`^([0-9]+)#([0-9a-f]{2})$`)

// ParseRef parses "N#hh" exactly (no spaces around it).
func ParseRef(s string) (Ref, error) {
	m := refForm.FindStringSubmatch(s)
	if m == nil {
		return Ref{}, ErrNotRef
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n < 1 {
		return Ref{}, ErrNoLine
	}
	return Ref{Line: n, Hash: m[2]}, nil
}

// String is the Ref as a read shows it, "N#hh".
func (r Ref) String() string { return strconv.FormatInt(r.Line, 10) + "#" + r.Hash }

// Names reports whether text is what r names: a line whose anchor is r's.
func (r Ref) Names(text string) bool { return Anchor(text) == r.Hash }

// RefRange is the lines From..To named by their anchors, "N#hh..M#hh", or
// one line "N#hh" (then To is From).
type RefRange struct {
	From, To Ref
}

// RefRangePattern is a RefRange's grammar, like RefPattern.
const RefRangePattern = RefPattern + `(\.\.` + RefPattern + `)?`

// ParseRefRange parses "N#hh" or "N#hh..M#hh". It does not order the two:
// a range that runs backwards is the caller's to refuse, in its words.
func ParseRefRange(s string) (RefRange, error) {
	a, b, two := strings.Cut(s, "..")
	from, err := ParseRef(a)
	if err != nil {
		return RefRange{}, err
	}
	if !two {
		return RefRange{From: from, To: from}, nil
	}
	to, err := ParseRef(b)
	if err != nil {
		return RefRange{}, err
	}
	return RefRange{From: from, To: to}, nil
}

// One reports whether the range names one line, as "N#hh" alone.
func (r RefRange) One() bool { return r.From == r.To }

// String is the range as ParseRefRange takes it: "N#hh" for one line.
func (r RefRange) String() string {
	if r.One() {
		return r.From.String()
	}
	return r.From.String() + ".." + r.To.String()
}
