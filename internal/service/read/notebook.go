package read

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// Notebook describes a Jupyter notebook read.
type Notebook struct {
	Cells    int64  `json:"cells"`              // cells in the notebook
	Language string `json:"language,omitempty"` // the kernel's language
}

// Output caps: a cell's output beyond these is described, not shown.
const (
	maxOutputLines = 40
	maxOutputBytes = 4 << 10
)

func isNotebook(name string) bool { return strings.HasSuffix(name, ".ipynb") }

// nbFile is the part of nbformat 4 that is shown.
type nbFile struct {
	Cells    []nbCell `json:"cells"`
	Metadata struct {
		LanguageInfo struct {
			Name string `json:"name"`
		} `json:"language_info"`
	} `json:"metadata"`
	NBFormat int `json:"nbformat"`
}

type nbCell struct {
	Type    string     `json:"cell_type"`
	Source  nbText     `json:"source"`
	Count   *int       `json:"execution_count"`
	Outputs []nbOutput `json:"outputs"`
}

type nbOutput struct {
	Type      string                     `json:"output_type"`
	Name      string                     `json:"name"`
	Text      nbText                     `json:"text"`
	Data      map[string]json.RawMessage `json:"data"`
	EName     string                     `json:"ename"`
	EValue    string                     `json:"evalue"`
	Traceback []string                   `json:"traceback"`
}

// nbText is nbformat's multiline string: a string or a list of lines.
type nbText string

func (t *nbText) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = nbText(s)
		return nil
	}
	var parts []string
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	*t = nbText(strings.Join(parts, ""))
	return nil
}

// notebook shows a notebook's cells — type, source, text outputs; images
// and long outputs described, not inlined — paged by cells as a text file
// is by lines. The observation is of the file's bytes; it never counts as
// a whole-file view (the agent saw a rendering, not the JSON a write
// replaces). A file that is not a notebook is shown as text, with a note.
func (r *Reader) notebook(f *roots.File, req Request, p *windowPlan, admission *admit.Pending) (*Result, error) {
	lim := r.Guard.Policy().Limits
	if f.Stat.Size > lim.MaxScanBytes {
		p.notes = append(p.notes, fmt.Sprintf("the notebook is larger than max_scan_bytes (%d): shown as text", lim.MaxScanBytes))
		return r.textOf(f, req, p, admission)
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, f.Stat.Size+1))
	if err != nil {
		return nil, refusal.Of(refusal.IOFailedReading, refusal.OpRead, f.Shown, refusal.Facts{Detail: err.Error()})
	}
	verdict, err := admission.Wait()
	if err != nil {
		return nil, err
	}
	if err := verify(f, int64(len(data))); err != nil {
		return nil, err
	}
	sum := fileid.ContentID(sha256.Sum256(data)) // of the file, not of what is shown
	var masked []Masked
	if len(verdict.Masks) > 0 {
		masked = notebookMasked(data, verdict.Masks)
		sniff.ApplyMasks(verdict.Masks, data, 0)
		p.notes = append(p.notes, maskNotes(masked)...)
	}
	var nb nbFile
	if err := json.Unmarshal(data, &nb); err != nil || nb.NBFormat < 4 || !utf8.Valid(data) {
		why := "nbformat 4 or later is shown as cells"
		if err != nil {
			why = err.Error()
		}
		p.notes = append(p.notes, "not a notebook fsguard can show as cells ("+why+"): shown as text")
		return r.textOf(f, req, p, admission)
	}
	total := int64(len(nb.Cells))
	if req.Offset > total && total > 0 {
		return nil, refusal.Of(refusal.OutOfRange, refusal.OpRead, f.Shown, refusal.Facts{Arg: "offset", Line: req.Offset, Total: total, Unit: "cell"})
	}
	res := &Result{Path: f.Shown, Notes: p.notes, Notebook: &Notebook{Cells: total, Language: nb.Metadata.LanguageInfo.Name},
		Totals:     Totals{Lines: total, Bytes: int64(len(data)), Complete: true},
		Truncation: Truncation{Reason: "none", ClampedLines: []int64{}, MaxLineChars: lim.MaxLineChars}}
	var body strings.Builder
	shown := int64(0)
	for i := req.Offset - 1; i < total && shown < req.Limit; i++ {
		cell := renderCell(i+1, nb.Cells[i], lim.MaxLineChars)
		if body.Len()+len(cell)+1 > lim.MaxBytes && shown > 0 {
			res.Truncation.Reason = "bytes"
			break
		}
		if shown > 0 {
			body.WriteString("\n") // a blank line between cells
		}
		body.WriteString(cell)
		shown++
	}
	page(res, req, shown, total, "cell", "cells", "notebook")
	body.WriteString("\n" + res.Footer + "\n")
	res.Body = body.String()
	st := f.Identity()
	o := Observation{StatID: fileid.StatID(f.Real, st), ContentID: &sum, ViewID: fileid.Hash(res.Body), Range: res.Range, Identity: st, RealPath: f.Real}
	o.ID = fileid.Hash(o.StatID, sum, o.ViewID)
	res.Observation = o
	res.Masked = masked
	res.Observation.Masked = masked != nil
	return res, nil
}

// textOf reads a notebook as the text file it also is.
func (r *Reader) textOf(f *roots.File, req Request, p *windowPlan, admission *admit.Pending) (*Result, error) {
	return r.text(f, admission.Sample, req, p, admission)
}

// ansi matches terminal escape sequences, which tracebacks are full of.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// renderCell shows cell n: a header line, its source, and its outputs.
func renderCell(n int64, c nbCell, maxLineChars int) string {
	var b strings.Builder
	head := fmt.Sprintf("[cell %d] %s", n, c.Type)
	if c.Type == "code" && c.Count != nil {
		head += fmt.Sprintf(" (In [%d])", *c.Count)
	}
	b.WriteString(head + "\n")
	writeText(&b, string(c.Source), maxLineChars, 0, 0)
	for k, o := range c.Outputs {
		switch o.Type {
		case "stream":
			fmt.Fprintf(&b, "[output %d] %s\n", k+1, o.Name)
			writeText(&b, string(o.Text), maxLineChars, maxOutputLines, maxOutputBytes)
		case "error":
			fmt.Fprintf(&b, "[output %d] error: %s: %s\n", k+1, o.EName, o.EValue)
			writeText(&b, ansi.ReplaceAllString(strings.Join(o.Traceback, "\n"), ""), maxLineChars, maxOutputLines, maxOutputBytes)
		case "execute_result", "display_data":
			var plain nbText
			if raw, ok := o.Data["text/plain"]; ok && json.Unmarshal(raw, &plain) == nil {
				fmt.Fprintf(&b, "[output %d] %s\n", k+1, "text/plain")
				writeText(&b, string(plain), maxLineChars, maxOutputLines, maxOutputBytes)
			}
			for mime, raw := range sortedData(o.Data) {
				if mime != "text/plain" {
					fmt.Fprintf(&b, "[output %d] %s, %d bytes (not shown)\n", k+1, mime, len(raw))
				}
			}
		default:
			fmt.Fprintf(&b, "[output %d] %s (not shown)\n", k+1, o.Type)
		}
	}
	return b.String()
}

// sortedData yields a display's MIME types in order.
func sortedData(m map[string]json.RawMessage) func(func(string, json.RawMessage) bool) {
	return func(yield func(string, json.RawMessage) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// writeText writes text's lines, each clamped to maxLineChars and with its
// control characters visible; with caps (> 0), a long output is cut and
// what was left out described.
func writeText(b *strings.Builder, text string, maxLineChars, maxLines, maxBytes int) {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return
	}
	parts := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	size := 0
	for i, l := range parts {
		if maxLines > 0 && (i >= maxLines || size+len(l) > maxBytes) {
			rest := int64(len(parts) - i)
			fmt.Fprintf(b, "... (%d more %s of output not shown)\n", rest, plural(rest, "line", "lines"))
			return
		}
		size += len(l) + 1
		shown := lines.LineOf(1, l, maxLineChars)
		b.WriteString(lines.Visible(shown.Text))
		if shown.Truncated {
			fmt.Fprintf(b, "... (line truncated to %d chars)", maxLineChars)
		}
		b.WriteString("\n")
	}
}
