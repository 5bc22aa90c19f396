package read

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/concept/termsafe"
)

// Text renders the exact text envelope of a successful read.
func (r *Result) Text() string {
	var b strings.Builder
	kind := r.Kind()
	b.WriteString("<path>")
	// A name is whatever its maker chose: one holding a control character
	// (a newline would forge the envelope's lines, an escape sequence
	// rewrite the terminal) is shown quoted.
	b.WriteString(termsafe.Quote(r.Path))
	b.WriteString("</path>\n<type>" + kind + "</type>\n<content>\n")
	b.WriteString(r.Body)
	b.WriteString("</content>\n")
	return b.String()
}

// Kind names what was read, as the envelope's <type> says it: "file",
// "image", "directory" or "notebook".
func (r *Result) Kind() string {
	switch {
	case r.Image != nil:
		return "image"
	case r.Listing != nil:
		return "directory"
	case r.Notebook != nil:
		return "notebook"
	case r.Document != nil:
		return "document"
	}
	return "file"
}

// JSONLine is one shown line in JSON output.
type JSONLine struct {
	N         int64  `json:"n"`
	Text      string `json:"text"`
	Anchor    string `json:"anchor,omitempty"` // with anchors, for an unclamped line
	Truncated bool   `json:"truncated,omitempty"`
}

// Envelope is the JSON form of any read outcome.
type Envelope struct {
	Status       string        `json:"status"` // ok | error | unsupported
	Code         string        `json:"code,omitempty"`
	Message      string        `json:"message,omitempty"`
	Unrecorded   string        `json:"unrecorded,omitempty"` // a denial not recorded: why (refusal.Error)
	Path         string        `json:"path"`
	Range        *Range        `json:"range,omitempty"`
	Lines        []JSONLine    `json:"lines,omitempty"`
	Totals       *Totals       `json:"totals,omitempty"`
	Truncation   *Truncation   `json:"truncation,omitempty"`
	Continuation *Continuation `json:"continuation"`
	Observation  *Observation  `json:"observation,omitempty"`
	Notes        []string      `json:"notes"`
	Footer       string        `json:"footer,omitempty"`
	Image        *Image        `json:"image,omitempty"`
	Diff         *Diff         `json:"diff,omitempty"`
	// Type is what was read: "file", "image", "directory", "notebook" or "document".
	Type string `json:"type,omitempty"`
	// Windows, for a read of several windows: each window's lines (or the
	// notice that replaced them), range, truncation, continuation, footer
	// and observation.
	Windows   []Envelope `json:"windows,omitempty"`
	Directory *Listing   `json:"directory,omitempty"`
	Notebook  *Notebook  `json:"notebook,omitempty"`
	// Document is a document's page count (and, asked as a document, its
	// bytes as base64); Text then holds its pages as the text envelope
	// shows them, Range the pages shown.
	Document *Document `json:"document,omitempty"`
	// Notice replaces a window's lines the session already holds.
	Notice string `json:"notice,omitempty"`
	// Text is a notebook's cells as the text envelope shows them.
	Text string `json:"text,omitempty"`
	// Masked names the credentials masked in what was shown (family,
	// line, column, length), never their values.
	Masked []Masked `json:"masked,omitempty"`
}

// JSON renders a successful read.
func (r *Result) JSON() []byte { return marshal(r.Envelope()) }

// Envelope is the JSON form of a successful read.
func (r *Result) Envelope() Envelope {
	e := Envelope{
		Status: "ok", Type: r.Kind(), Path: r.Path, Range: &r.Range, Totals: &r.Totals,
		Truncation: &r.Truncation, Continuation: r.Continuation,
		Observation: &r.Observation, Notes: r.Notes, Footer: r.Footer, Image: r.Image, Diff: r.Diff,
		Lines: make([]JSONLine, len(r.Lines)), Directory: r.Listing, Notebook: r.Notebook,
		Masked: r.Masked,
	}
	if e.Notes == nil {
		e.Notes = []string{}
	}
	if r.Listing != nil {
		e.Totals, e.Observation, e.Lines = nil, nil, nil // entries are in Directory
	}
	if r.Notebook != nil || r.Document != nil {
		e.Lines, e.Text = nil, r.Body // the cells or pages, as the text envelope shows them
	}
	e.Document = r.Document
	for i, l := range r.Lines {
		e.Lines[i] = JSONLine{N: l.N, Text: l.Text, Truncated: l.Truncated}
		if r.Anchors && !l.Truncated {
			e.Lines[i].Anchor = lines.Anchor(l.Text)
		}
	}
	for _, p := range r.Parts {
		w := p.Envelope()
		w.Status, w.Type, w.Path, w.Totals, w.Notes = "", "", "", nil, []string{}
		e.Windows = append(e.Windows, w)
	}
	return e
}

// ErrorJSON renders a refusal.
func ErrorJSON(path string, err error, notes []string) []byte {
	e := Envelope{Status: "error", Code: string(refusal.CodeOf(err)), Message: err.Error(), Path: path, Notes: notes}
	var r *refusal.Error
	if errors.As(err, &r) && r.Path != "" {
		e.Path = r.Path
	}
	if r != nil {
		e.Unrecorded = r.Unrecorded
	}
	switch refusal.CodeOf(err) {
	case refusal.Binary, refusal.Image, refusal.Encoding:
		e.Status = "unsupported"
	}
	if e.Notes == nil {
		e.Notes = []string{}
	}
	return marshal(e)
}

// marshal is v's JSON with no rune a terminal acts on left raw
// (termsafe.JSON): the same value to any JSON reader.
func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only unmarshalable types fail, and Envelope has none.
		panic(err)
	}
	return append(termsafe.JSON(b), '\n')
}
