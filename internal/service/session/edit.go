package session

import (
	"bytes"
	"crypto/sha256"
	"io"
	"unicode/utf8"

	"github.com/fsguard/fsguard/internal/concept/charset"
	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/service/edit"
	"github.com/fsguard/fsguard/internal/store/journal"
)

// EditResult describes a completed edit.
type EditResult struct {
	*WriteResult
	// Start..End are the changed lines in the new version (End < Start:
	// only lines were deleted, after line End).
	Start, End int64
	Moved      int64  // how far the lines after them moved (+ down)
	Shown      string // the changed lines with context, anchored
	// Elsewhere: the file had also changed, where the edit did not touch,
	// since the session's last read.
	Elsewhere bool
}

// maxEdit bounds the file an edit rewrites (the control socket's bound).
const maxEdit = 64 << 20

// maxEditLines bounds the lines of a text an edit plans on, or a write
// restores masks in. A line costs its split record and its text (tens of
// bytes) whatever its length, so maxEdit bytes of empty lines would cost
// tens of times maxEdit: the byte bound alone does not bound the memory.
const maxEditLines = 1 << 20

// lineCount is how many lines lines.Split would make of data, counted
// without making them: a LF, a CR, or a CRLF ends a line, and text after
// the last end is one more.
func lineCount(data []byte) int {
	n := bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r")) - bytes.Count(data, []byte("\r\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' && data[len(data)-1] != '\r' {
		n++
	}
	return n
}

// Edit applies one edit atomically through the write path. What it checks
// is narrower than a write: only that the lines it touches are lines the
// session was handed and that they have not changed since. The file may
// have changed elsewhere; those changes are kept, and line numbers are
// mapped through them from the version the session last read. The plan is
// package edit's; this is its I/O and bookkeeping.
func (s *Service) Edit(name, cwd, session string, ed edit.Edit) (*EditResult, error) {
	var out EditResult
	res, err := s.replace(name, cwd, session, func(f *roots.File) (io.Reader, *edited, error) {
		if f == nil {
			return nil, nil, refusal.Of(refusal.NoSuchFile, refusal.OpEdit, name, refusal.Facts{})
		}
		p, err := s.planEdit(f, session, ed)
		if err != nil {
			return nil, nil, err
		}
		out = EditResult{Start: p.Start, End: p.End, Moved: p.Moved, Shown: p.Shown, Elsewhere: p.Elsewhere}
		return bytes.NewReader(p.Content), &edited{held: p.Held, start: p.ShownStart, end: p.ShownEnd}, nil
	})
	if res == nil {
		return nil, s.shownErr(err)
	}
	res.Path = s.shown(res.Path)
	out.WriteResult = res
	return &out, err // written; err says it was not recorded
}

// basis finds the version the session last held of f (the current one, or
// an older one still kept) and what it holds of it.
func (s *Service) basis(session string, f *roots.File, last *journal.Record, curID string, cur []string) (*edit.Basis, error) {
	if last.ContentID == curID {
		held, err := s.Journal.Holding(s.sess(session), f.Real, curID, int64(len(cur)), false)
		return edit.Current(cur, held), err
	}
	none := &edit.Basis{}
	if s.Held == nil || last.ContentID == "" {
		return none, nil
	}
	data, err := s.Held.Get(last.ContentID)
	if err != nil || data == nil {
		return none, err
	}
	_, split := textOf(data)
	held, err := s.Journal.Holding(s.sess(session), f.Real, last.ContentID, int64(len(split)), false)
	if err != nil {
		return none, err
	}
	if b := edit.Older(lines.Texts(split), cur, held); b != nil {
		return b, nil
	}
	return none, nil // too different to map: as good as not kept
}

func (s *Service) planEdit(f *roots.File, session string, ed edit.Edit) (*edit.Plan, error) {
	if s.Journal == nil {
		return nil, s.notRecorded(refusal.OpEdit, f.Shown)
	}
	// An edit's answer shows lines of the file: the file must be one the
	// policy lets this caller see, as for a read.
	v, err := s.admit().Decide(s.Guard, f)
	if err != nil {
		return nil, err
	}
	raw, err := wholeText(f)
	if err != nil {
		return nil, err
	}
	curID := fileid.ContentID(sha256.Sum256(raw))
	enc := charset.Detect(raw)
	// The edit is planned on the lines as they were shown (credentials
	// masked: anchors and exact text name those), and the secrets are
	// put back into its result (see restore).
	m, err := maskedText(f.Shown, raw, v.Masks)
	if err != nil {
		return nil, err
	}
	data := m.shown
	if lineCount(data) > maxEditLines {
		return nil, refusal.Of(refusal.TooManyLinesToEdit, refusal.OpEdit, f.Shown, refusal.Facts{Limit: maxEditLines})
	}
	bom, split := lines.Split(data)
	cur := lines.Texts(split)
	last, err := s.Journal.LastObservation(s.sess(session), f.Real)
	if err != nil {
		return nil, err
	}
	if last == nil {
		return nil, refusal.Of(refusal.NotRead, refusal.OpModify, f.Shown, refusal.Facts{})
	}
	b, err := s.basis(session, f, last, curID, cur)
	if err != nil {
		return nil, err
	}
	curHeld := b.Held // the version it last held is the current one
	if !b.Same {
		if curHeld, err = s.Journal.Holding(s.sess(session), f.Real, curID, int64(len(cur)), false); err != nil {
			return nil, err
		}
	}
	p, err := edit.Make(f.Shown, data, bom, split, b, curHeld, ed, s.Guard.Policy().Limits.MaxLineChars)
	var restored [][]byte
	if err == nil {
		p.Content, restored, err = restore(f.Shown, m.raw, m.shown, p.Content)
	}
	if err == nil && enc != charset.UTF8 {
		// Edited as text, written back in the file's own encoding.
		p.Content, err = charset.Encode(p.Content, enc)
	}
	if err == nil {
		err = s.keptMasked(f.Shown, p.Content, restored)
	}
	return p, err
}

// textOf splits a version's bytes into lines as a read shows them: UTF-16
// and UTF-32 decoded (their BOM gone), UTF-8 by lines.Split.
func textOf(data []byte) (string, []lines.RawLine) {
	if text, err := charset.Decode(data, charset.Detect(data)); err == nil {
		data = text
	}
	return lines.Split(data)
}

// wholeText reads the open file whole, and refuses one that changed while
// it was read or that is not UTF-8 text.
func wholeText(f *roots.File) ([]byte, error) {
	if f.Stat.Size > maxEdit {
		return nil, refusal.Of(refusal.TooLargeToEdit, refusal.OpEdit, f.Shown, refusal.Facts{Limit: maxEdit})
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, maxEdit+1))
	if err != nil {
		return nil, refusal.Of(refusal.IOFailedReading, refusal.OpEdit, f.Shown, refusal.Facts{Detail: err.Error()})
	}
	if now, err := f.Restat(); err != nil || now != f.Identity() || int64(len(data)) != f.Stat.Size {
		return nil, refusal.Of(refusal.ChangedReadingEdit, refusal.OpEdit, f.Shown, refusal.Facts{})
	}
	if !utf8.Valid(data) && charset.Detect(data) == charset.UTF8 {
		return nil, refusal.Of(refusal.NotText, refusal.OpEdit, f.Shown, refusal.Facts{})
	}
	return data, nil
}
