package read

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"

	"golang.org/x/sys/unix"
)

// Listing is a directory read: the admitted entries of one page.
type Listing struct {
	Entries []Entry `json:"entries"`
	Total   int64   `json:"total"` // entries in the directory
	// RealPath is the directory's real path (the journal's key).
	RealPath string `json:"-"`
}

// Entry is one name in a directory read.
type Entry struct {
	Name string `json:"name"`
	Type string `json:"type"` // "file", "directory" or "symlink"
}

// list answers a read of a directory: the names the mount shows there
// (the same listing and the same admission, admit.Decider.Shown), sorted,
// one per line with "/" after a directory, paged by offset and limit like
// lines. Hidden names are not there to count: the total is of what may be
// shown. A listing is no observation of any file. A directory of more than
// max_dir_entries entries is refused (TOO_LARGE) before any is decided:
// sorting and admitting a listing holds every entry at once.
func (r *Reader) list(req Request) (*Result, error) {
	l, err := r.Guard.ListDir(req.Path, req.Cwd, r.Guard.Policy().Limits.MaxDirEntries)
	if err != nil {
		return nil, err
	}
	d := r.Admit
	if d == nil {
		d = admit.New(1)
	}
	ents := d.Shown(r.Guard, l.Path(), l.Entries, nil, nil)
	slices.SortFunc(ents, func(a, b roots.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	total := int64(len(ents))
	lim := r.Guard.Policy().Limits
	if req.Offset > total && total > 0 {
		return nil, refusal.Of(refusal.OutOfRange, refusal.OpRead, l.Shown, refusal.Facts{Arg: "offset", Line: req.Offset, Total: total, Unit: "entry"})
	}
	res := &Result{Path: l.Shown, Listing: &Listing{Entries: []Entry{}, Total: total, RealPath: l.Real},
		Truncation: Truncation{Reason: "none", ClampedLines: []int64{}}}
	var body strings.Builder
	size := 0
	for i := req.Offset - 1; i < total && int64(len(res.Listing.Entries)) < req.Limit; i++ {
		e := ents[i]
		line := visibleName(e.Name)
		typ := "file"
		switch e.Mode {
		case unix.S_IFDIR:
			line, typ = line+"/", "directory"
		case unix.S_IFLNK:
			typ = "symlink"
		}
		if size+len(line)+1 > lim.MaxBytes && len(res.Listing.Entries) > 0 {
			res.Truncation.Reason = "bytes"
			break
		}
		size += len(line) + 1
		body.WriteString(line + "\n")
		res.Listing.Entries = append(res.Listing.Entries, Entry{Name: e.Name, Type: typ})
	}
	page(res, req, int64(len(res.Listing.Entries)), total, "entry", "entries", "directory")
	if total > 0 {
		body.WriteString("\n")
	}
	body.WriteString(res.Footer + "\n")
	res.Body = body.String()
	res.Observation.ViewID = fileid.Hash(res.Body)
	return res, nil
}

// visibleName shows a name as a line: its control characters (a newline
// in a name, an escape sequence) as visible stand-ins, and what else a
// terminal acts on (a bidi override, a line separator, a byte that is not
// UTF-8) as its escape.
func visibleName(name string) string { return termsafe.Escape(lines.Visible(name)) }

// page sets the range, footer and continuation of a read paged by items
// other than lines (a directory's entries, a notebook's cells): the same
// footers as for lines, in the items' own words.
func page(res *Result, req Request, shown, total int64, one, many, whole string) {
	a, b := req.Offset, req.Offset+shown-1
	if total > 0 {
		res.Range = Range{Start: a, End: b}
	}
	switch {
	case total == 0:
		res.Footer = "(Empty " + whole + ")"
	case b < total:
		if res.Truncation.Reason == "none" {
			res.Truncation.Reason = "lines"
		}
		res.Footer = fmt.Sprintf("(Showing %s %d-%d of %d. Use offset=%d to continue.)", many, a, b, total, b+1)
		res.Continuation = &Continuation{Path: req.Path, Offset: b + 1, Limit: req.Limit}
	default:
		res.Footer = fmt.Sprintf("(End of %s - total %d %s)", whole, total, plural(total, one, many))
	}
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
