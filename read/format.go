package read

import (
	"encoding/json"
	"errors"
	"strings"

	"fsguard/refusal"
	"fsguard/window"
)

// Text renders the exact text envelope of a successful read.
func (r *Result) Text() string {
	var b strings.Builder
	kind := "file"
	if r.Image != nil {
		kind = "image"
	}
	b.WriteString("<path>")
	b.WriteString(r.Path)
	b.WriteString("</path>\n<type>" + kind + "</type>\n<content>\n")
	b.WriteString(r.Body)
	b.WriteString("</content>\n")
	return b.String()
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
}

// JSON renders a successful read.
func (r *Result) JSON() []byte {
	e := Envelope{
		Status: "ok", Path: r.Path, Range: &r.Range, Totals: &r.Totals,
		Truncation: &r.Truncation, Continuation: r.Continuation,
		Observation: &r.Observation, Notes: r.Notes, Footer: r.Footer, Image: r.Image, Diff: r.Diff,
		Lines: make([]JSONLine, len(r.Lines)),
	}
	if e.Notes == nil {
		e.Notes = []string{}
	}
	for i, l := range r.Lines {
		e.Lines[i] = JSONLine{N: l.N, Text: l.Text, Truncated: l.Truncated}
		if r.Anchors && !l.Truncated {
			e.Lines[i].Anchor = window.Anchor(l.Text)
		}
	}
	return marshal(e)
}

// ErrorJSON renders a refusal.
func ErrorJSON(path string, err error, notes []string) []byte {
	e := Envelope{Status: "error", Code: string(refusal.CodeOf(err)), Message: err.Error(), Path: path, Notes: notes}
	var r *refusal.Error
	if errors.As(err, &r) && r.Path != "" {
		e.Path = r.Path
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

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only unmarshalable types fail, and Envelope has none.
		panic(err)
	}
	return append(b, '\n')
}
