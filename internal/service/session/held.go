package session

import (
	"fmt"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/diff"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/service/read"
	"github.com/fsguard/fsguard/internal/store/journal"
)

// keep puts a version the session was handed (or wrote) into the held
// content store, and records what the store's cap pushed out: an evicted
// version is never diffed against, and the journal says why.
func (s *Service) keep(contentID, real string, data []byte) {
	if s.Held == nil || data == nil || contentID == "" {
		return
	}
	evicted, err := s.Held.Put(contentID, real, data)
	if err != nil || s.Journal == nil {
		return // not kept: the next changed re-read gets lines
	}
	for _, e := range evicted {
		s.append(&journal.Record{Kind: journal.KindEviction, Path: e.Path, RealPath: e.Path, ContentID: e.ID, Pid: s.who.Pid, Uid: s.who.Uid, Process: s.who.Process, Owner: s.who.Owner()})
	}
}

// diffContext is the number of equal lines around each change, as diff -u.
const diffContext = 3

// changeAnswer is what a re-read of a changed file says instead of its
// lines: a unified diff against the version the session holds.
type changeAnswer struct {
	notice  string // the whole answer above the footer
	against string // the held version's contentId
	unified string // the diff alone, file headers included
	held    [][2]int64
}

// answerChange returns a diff answer for a read of res when the session
// last held another version of the file, that version's content is still
// kept, the session held every line of the old version the diff shows or
// leans on, the session will hold every line of the window afterwards,
// and the answer is smaller than the window. Otherwise nil: send lines.
func (s *Service) answerChange(session string, res *read.Result, again string) (*changeAnswer, error) {
	o := res.Observation
	if s.Held == nil || res.Content == nil || o.ContentID == nil {
		return nil, nil
	}
	last, err := s.Journal.LastObservation(s.sess(session), o.RealPath)
	if err != nil || last == nil || last.ContentID == "" || last.ContentID == *o.ContentID {
		return nil, err
	}
	old, err := s.Held.Get(last.ContentID)
	if err != nil || old == nil {
		return nil, err // evicted or never kept: lines
	}
	_, oldLines := textOf(old)
	_, newLines := lines.Split(res.Content)
	had, err := s.Journal.Holding(s.sess(session), o.RealPath, last.ContentID, int64(len(oldLines)), false)
	if err != nil || len(had.Spans) == 0 {
		return nil, err
	}
	full := len(res.Body) - len(res.Footer) // what the lines would take
	a, b := o.Range.Start, o.Range.End
	oldT, newT := lines.Texts(oldLines), lines.Texts(newLines)
	ops, ok := diff.Lines(oldT, newT, min(full/2, 20000)) // each changed line costs two bytes at least
	if !ok {
		return nil, nil
	}
	lastHeld := had.Spans[len(had.Spans)-1][1]
	var shown []diff.Hunk
	for _, h := range diff.Hunks(ops, diffContext) {
		// Hunks wholly after every held line and after the window change
		// nothing the session holds or will hold, nor any of their line
		// numbers: they are left out. The rest must lean only on held lines.
		after := int64(h.OldStart) > lastHeld || (h.OldLen == 0 && int64(h.OldStart) >= lastHeld)
		if after && int64(h.NewStart) > b {
			break
		}
		for _, op := range h.Ops {
			if op.Kind != diff.Insert && !had.Has(int64(op.Old)+1) {
				return nil, nil // a line the diff shows or leans on was never handed over
			}
		}
		shown = append(shown, h)
	}
	// What the session holds of the new version: the lines its held lines
	// became, and the lines the diff shows.
	now := make([]bool, len(newLines)+1)
	for _, op := range ops {
		if op.Kind == diff.Equal && had.Has(int64(op.Old)+1) {
			now[op.New+1] = true
		}
	}
	for _, h := range shown {
		for _, op := range h.Ops {
			if op.Kind != diff.Delete {
				now[op.New+1] = true
			}
		}
	}
	for l := a; l <= b; l++ {
		if !now[l] {
			return nil, nil
		}
	}
	if len(shown) == 0 {
		// Only lines the session does not hold changed. Saying "unchanged"
		// of a changed file invites the wrong conclusion: send the lines.
		return nil, nil
	}
	ans := &changeAnswer{against: last.ContentID, held: journal.SpansOf(int64(len(newLines)), func(n int64) bool { return now[n] })}
	var u strings.Builder
	fmt.Fprintf(&u, "--- %s\t(the version you hold)\n+++ %s\t(now, %d lines)\n", res.Path, res.Path, len(newLines))
	diff.Write(&u, shown, oldT, newT)
	ans.unified = u.String()
	ans.notice = "(Changed since your last read - the diff below, against the version you hold, brings you up to date. Use " + again + " to see the lines.)\n" +
		strings.TrimSuffix(ans.unified, "\n")
	if len(ans.notice)+1 >= full {
		return nil, nil // the lines are no larger
	}
	return ans, nil
}
