package read

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"
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

// notebook shows a notebook's cells — type, source, text outputs; images
// and long outputs described, not inlined — paged by cells as a text file
// is by lines. The observation is of the file's bytes; it never counts as
// a whole-file view (the agent saw a rendering, not the JSON a write
// replaces). A file that is not a notebook is shown as text, with a note.
//
// The file is decoded as a stream (nbscan.go), once: what a read holds is
// bounded by the window it shows, not by the file, so a notebook of any
// size up to max_scan_bytes is shown as cells; a larger one as text
// windows, like any text file.
func (r *Reader) notebook(f *roots.File, req Request, p *windowPlan, admission *admit.Pending) (*Result, error) {
	lim := r.Guard.Policy().Limits
	if f.Stat.Size > lim.MaxScanBytes {
		p.notes = append(p.notes, fmt.Sprintf("the notebook is larger than max_scan_bytes (%d): shown as text", lim.MaxScanBytes))
		return r.textOf(f, req, p, admission)
	}
	verdict, err := admission.Wait()
	if err != nil {
		return nil, err
	}
	s := newNBStream(io.NewSectionReader(f, 0, f.Stat.Size+1), verdict.Masks)
	nb := &nbRender{req: req, maxBytes: lim.MaxBytes, maxLineChars: lim.MaxLineChars}
	perr := nb.decode(&nbDecoder{s: s})
	if perr == nil {
		perr = s.drain()
	}
	if s.err != nil {
		return nil, refusal.Of(refusal.IOFailedReading, refusal.OpRead, f.Shown, refusal.Facts{Detail: s.err.Error()})
	}
	scanned := s.total()
	if perr != nil {
		scanned = -1 // stopped early: the text read that follows checks the size
	}
	if err := verify(f, scanned); err != nil {
		return nil, err
	}
	if perr != nil || nb.format < 4 || s.bad {
		why := "nbformat 4 or later is shown as cells"
		if perr != nil {
			why = perr.Error()
		}
		p.notes = append(p.notes, "not a notebook fsguard can show as cells ("+why+"): shown as text")
		return r.textOf(f, req, p, admission)
	}
	sum := fileid.ContentID(s.sum()) // of the file, not of what is shown
	var masked []Masked
	if len(verdict.Masks) > 0 {
		if masked, err = locate(f, verdict.Masks); err != nil {
			return nil, refusal.Of(refusal.IOFailedReading, refusal.OpRead, f.Shown, refusal.Facts{Detail: err.Error()})
		}
		p.notes = append(p.notes, maskNotes(masked)...)
	}
	total := nb.total
	if req.Offset > total && total > 0 {
		return nil, refusal.Of(refusal.OutOfRange, refusal.OpRead, f.Shown, refusal.Facts{Arg: "offset", Line: req.Offset, Total: total, Unit: "cell"})
	}
	res := &Result{Path: f.Shown, Notes: p.notes, Notebook: &Notebook{Cells: total, Language: nb.language},
		Totals:     Totals{Lines: total, Bytes: s.total(), Complete: true},
		Truncation: Truncation{Reason: "none", ClampedLines: []int64{}, MaxLineChars: lim.MaxLineChars}}
	if nb.full {
		res.Truncation.Reason = "bytes"
	}
	body := &nb.body
	page(res, req, nb.shown, total, "cell", "cells", "notebook")
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

// nbRender decodes a notebook and renders the cells of one window as it
// goes; the cells outside the window are only counted.
type nbRender struct {
	req          Request
	maxBytes     int
	maxLineChars int

	format   int
	language string
	total    int64 // cells seen
	cells    bool  // the cell list was seen
	body     strings.Builder
	shown    int64
	full     bool // the body reached max_bytes
}

// maxMIMEs bounds the data types of one output described one by one.
const maxMIMEs = 16

func (n *nbRender) decode(d *nbDecoder) error {
	return d.object(func(key string) error {
		switch key {
		case "cells":
			if n.cells {
				return errors.New("the cell list is given twice")
			}
			n.cells = true
			return d.array(func(i int) error { return n.cell(d, int64(i)+1) })
		case "metadata":
			return d.objectOr(func(key string) error {
				if key != "language_info" {
					return d.skipErr()
				}
				return d.objectOr(func(key string) error {
					if key != "name" {
						return d.skipErr()
					}
					var t nbText
					err := d.strOr(&t, 64)
					n.language = t.s
					return err
				})
			})
		case "nbformat":
			v, err := d.scalar()
			n.format, _ = strconv.Atoi(v)
			return err
		}
		return d.skipErr()
	})
}

// nbCell is what is kept of one cell in the window.
type nbCell struct {
	typ    string
	count  *int
	source nbText
	outs   strings.Builder // the outputs, rendered
	more   int             // outputs left out: the cell's budget was spent
}

// cell decodes cell num: rendered into the body when it is in the window
// and the body has room, else only counted.
func (n *nbRender) cell(d *nbDecoder, num int64) error {
	n.total = num
	if num < n.req.Offset || n.shown >= n.req.Limit || n.full {
		return d.skipErr()
	}
	budget := max(n.maxBytes-n.body.Len(), 1)
	var c nbCell
	err := d.object(func(key string) error {
		switch key {
		case "cell_type":
			var t nbText
			err := d.str(&t, 64)
			c.typ = t.s
			return err
		case "execution_count":
			v, err := d.scalar()
			if err == nil && v != "null" {
				k, cerr := strconv.Atoi(v)
				if cerr != nil {
					return errors.New("execution_count is not an integer")
				}
				c.count = &k
			}
			return err
		case "source":
			return d.text(&c.source, budget)
		case "outputs":
			return d.array(func(k int) error {
				if c.outs.Len() > budget {
					c.more++
					return d.skipErr()
				}
				return n.output(d, &c.outs, k+1)
			})
		}
		return d.skipErr()
	})
	if err != nil {
		return err
	}
	cell := n.render(num, &c)
	if n.body.Len()+len(cell)+1 > n.maxBytes && n.shown > 0 {
		n.full = true
		return nil
	}
	if n.shown > 0 {
		n.body.WriteString("\n") // a blank line between cells
	}
	n.body.WriteString(cell)
	n.shown++
	return nil
}

// render shows a cell: a header line, its source, and its outputs.
func (n *nbRender) render(num int64, c *nbCell) string {
	var b strings.Builder
	head := fmt.Sprintf("[cell %d] %s", num, c.typ)
	if c.typ == "code" && c.count != nil {
		head += fmt.Sprintf(" (In [%d])", *c.count)
	}
	b.WriteString(head + "\n")
	writeText(&b, &c.source, n.maxLineChars, 0, 0, "source")
	b.WriteString(c.outs.String())
	if c.more > 0 {
		fmt.Fprintf(&b, "... (%d more %s not shown)\n", c.more, plural(int64(c.more), "output", "outputs"))
	}
	return b.String()
}

// output decodes output k of a cell and renders it into b: text outputs
// up to maxOutputLines and maxOutputBytes, the rest described.
func (n *nbRender) output(d *nbDecoder, b *strings.Builder, k int) error {
	keep := maxOutputBytes + 1 // one byte more than is shown tells a cut
	var typ, name, ename, evalue, plain, tb, text nbText
	hasPlain := false
	type sized struct {
		mime string
		size int64
	}
	var others []sized
	moreTypes := 0
	err := d.object(func(key string) error {
		switch key {
		case "output_type":
			return d.str(&typ, 64)
		case "name":
			return d.str(&name, 64)
		case "ename":
			return d.str(&ename, 4*n.maxLineChars)
		case "evalue":
			return d.str(&evalue, 4*n.maxLineChars)
		case "text":
			return d.text(&text, keep)
		case "traceback":
			// Escape sequences are removed after the cut: keep more.
			return d.lines(&tb, 4*keep)
		case "data":
			return d.objectOr(func(mime string) error {
				if mime == "text/plain" {
					hasPlain = true
					return d.text(&plain, keep)
				}
				size, err := d.skip()
				if len(others) < maxMIMEs {
					others = append(others, sized{mime, size})
				} else {
					moreTypes++
				}
				return err
			})
		}
		return d.skipErr()
	})
	if err != nil {
		return err
	}
	switch typ.s {
	case "stream":
		fmt.Fprintf(b, "[output %d] %s\n", k, name.s)
		writeText(b, &text, n.maxLineChars, maxOutputLines, maxOutputBytes, "output")
	case "error":
		fmt.Fprintf(b, "[output %d] error: %s: %s\n", k, ename.s, evalue.s)
		tb.s = ansi.ReplaceAllString(tb.s, "")
		writeText(b, &tb, n.maxLineChars, maxOutputLines, maxOutputBytes, "output")
	case "execute_result", "display_data":
		if hasPlain {
			fmt.Fprintf(b, "[output %d] %s\n", k, "text/plain")
			writeText(b, &plain, n.maxLineChars, maxOutputLines, maxOutputBytes, "output")
		}
		slices.SortFunc(others, func(x, y sized) int { return strings.Compare(x.mime, y.mime) })
		for _, o := range others {
			fmt.Fprintf(b, "[output %d] %s, %d bytes (not shown)\n", k, o.mime, o.size)
		}
		if moreTypes > 0 {
			fmt.Fprintf(b, "[output %d] %d more data types (not shown)\n", k, moreTypes)
		}
	default:
		fmt.Fprintf(b, "[output %d] %s (not shown)\n", k, typ.s)
	}
	return nil
}

// textOf reads a notebook as the text file it also is.
func (r *Reader) textOf(f *roots.File, req Request, p *windowPlan, admission *admit.Pending) (*Result, error) {
	return r.text(f, admission.Sample, req, p, admission)
}

// ansi matches terminal escape sequences, which tracebacks are full of.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// writeText writes text's lines, each clamped to maxLineChars and with its
// control characters visible; with caps (> 0), a long text is cut and what
// was left out described. t holds at most a cap of the text: a line cut by
// that cap is not shown, and is counted with what was left out.
func writeText(b *strings.Builder, t *nbText, maxLineChars, maxLines, maxBytes int, what string) {
	text := t.s
	if !t.cut {
		text = strings.TrimSuffix(text, "\n")
	}
	if text == "" && !t.cut {
		return
	}
	parts := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if t.cut && len(parts) > 1 {
		parts = parts[:len(parts)-1] // cut inside it
	}
	total := max(t.lines(), int64(len(parts)))
	size := 0
	for i, l := range parts {
		if maxLines > 0 && (i >= maxLines || size+len(l) > maxBytes) {
			rest := total - int64(i)
			fmt.Fprintf(b, "... (%d more %s of %s not shown)\n", rest, plural(rest, "line", "lines"), what)
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
	if rest := total - int64(len(parts)); t.cut && rest > 0 {
		fmt.Fprintf(b, "... (%d more %s of %s not shown)\n", rest, plural(rest, "line", "lines"), what)
	}
}
