// Package session performs what an agent's tools ask — read, check, write,
// edit — for one caller at a time (Service.As), and keeps their books: a
// read consults the delivery ledger and records an observation, a write
// checks its precondition and records the version written. It decides no
// policy itself: admission is admit's, paths are roots', what a session
// holds is journal's, and the caller's rights are caller's.
package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/caller"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/service/read"
	"github.com/fsguard/fsguard/internal/store/blobs"
	"github.com/fsguard/fsguard/internal/store/journal"
)

// Service performs agent operations under one guard. Journal may be nil:
// reads then still work and say that nothing was recorded.
type Service struct {
	Guard   *roots.Guard
	Journal *journal.Journal
	// JournalErr says why Journal is nil, for the "not recorded" note.
	JournalErr error
	// RequireWholeView makes a write precondition demand that the session
	// was handed every line of the current version, not just some.
	RequireWholeView bool
	// who is the caller of this one operation, and view its view of the
	// mount (nil in direct mode): set per call by As, never by overwriting
	// a shared service.
	who  *caller.Caller
	view *caller.View
	// OnRecord, when set, sees every record once it is committed (the
	// daemon's metrics); OnAppendError every record that could not be.
	OnRecord func(door string, r *journal.Record)
	// Door names the front end that asked ("socket", "cli", "mcp"), for
	// OnRecord's metrics; the control server sets it per request.
	Door          string
	OnAppendError func(error)
	// OnUnrecorded, when set, is given a denial the journal could not
	// record; it returns whether it keeps it to record later.
	OnUnrecorded func(*journal.Record) bool
	// noTmpfile, in tests, has writes take the path of a file system
	// without O_TMPFILE.
	noTmpfile bool
	// Held, when set, keeps the content sessions were handed, so a
	// changed file can be answered with a diff.
	Held *blobs.Store
	// Admit decides whether a file version may be shown; the daemon shares
	// one with its mount, so both doors give one verdict, scanned once.
	// Nil: a decider for this service alone.
	Admit *admit.Decider
	// OnWrite, when set, is told the real path of every file a write
	// replaced or created, before the write answers (the daemon makes the
	// kernel forget what it cached of it).
	OnWrite func(real string)
	// Daemon, when set, is the running daemon's facts about itself, for
	// `fsguard status` with no id (State); nil in direct mode.
	Daemon func() *DaemonFacts
	// request is the caller's id for this write or edit, and since the
	// sequence number after which its session's records count (ForRequest).
	request string
	since   int64
}

// ForRequest is the service for one request the caller named id (see
// api.Request.ID: its write's intent is recorded under the id), counting
// only what its session was shown after record since (api.Request.Since).
func (s *Service) ForRequest(id string, since int64) *Service {
	if id == s.request && since == s.since {
		return s
	}
	cp := *s
	cp.request, cp.since = id, since
	return &cp
}

// Mark is the journal's last sequence number: a client that forgets what
// its session was shown sends it as Since from then on.
func (s *Service) Mark() (int64, error) {
	if s.Journal == nil {
		return 0, nil
	}
	return s.Journal.LastSeq()
}

// append commits records (at once) and reports each to OnRecord (or
// their failure to OnAppendError).
func (s *Service) append(recs ...*journal.Record) error {
	if err := s.Journal.Append(recs...); err != nil {
		if s.OnAppendError != nil {
			s.OnAppendError(err)
		}
		return err
	}
	if s.OnRecord != nil {
		for _, r := range recs {
			s.OnRecord(s.Door, r)
		}
	}
	return nil
}

// resolve turns a caller's name into what the guard resolves.
func (s *Service) resolve(name, cwd string) (string, string, error) {
	if s.view == nil {
		return name, cwd, nil
	}
	host, err := s.view.ToHost(name, cwd)
	return host, "/", err
}

// shown returns a path as the caller sees it.
func (s *Service) shown(host string) string {
	if s.view == nil {
		return host
	}
	return s.view.ToView(host)
}

// admit returns the service's admission decider.
func (s *Service) admit() *admit.Decider {
	if s.Admit == nil {
		d := admit.New(1) // decides afresh: nothing to share
		if s.Journal != nil {
			d.OnMasks = MaskAudit(s.Journal, nil)
		}
		return d
	}
	return s.Admit
}

// sess is the session id as the journal keys it: bound to the caller.
func (s *Service) sess(id string) journal.Session {
	return journal.Session{ID: id, Owner: s.who.Owner(), Since: s.since}
}

// ReadRequest is a read with its session options.
type ReadRequest struct {
	read.Request
	Session  string
	NoDedupe bool
	// Again is how the asking door says "send the lines even if held"
	// ("--no-dedupe" for the CLI, the default; "full: true" for MCP):
	// answers speak the words of the interface that asked.
	Again string
}

// ReadResult is a read's outcome: either the window, or a ledger notice
// that the session already holds it, or a diff that brings the version
// the session holds up to date.
type ReadResult struct {
	*read.Result
	Notice string // non-empty: the window was withheld, this was said instead
	// Footer follows a notice for part of a file: the window's own
	// continuation footer, so paging still works.
	Footer string
	// Diff is set when the notice is a diff against a held version.
	Diff  *read.Diff
	Notes []string
	// PartNotices, for a read of several windows, replace the lines of
	// the windows the session already holds ("" for a window shown).
	PartNotices []string
}

// Read performs a read, answers from the ledger when the session already
// holds every line of this version, and records what was shown.
func (s *Service) Read(req ReadRequest) (*ReadResult, error) {
	named := req.Path
	var err error
	if req.Path, req.Cwd, err = s.resolve(req.Path, req.Cwd); err != nil {
		return nil, s.recordRefusal(req.Session, named, err)
	}
	if s.Held != nil {
		req.Keep = s.Held.MaxFile()
	}
	res, err := (&read.Reader{Guard: s.Guard, Admit: s.admit()}).Read(req.Request)
	if err != nil {
		return nil, s.recordRefusal(req.Session, named, s.view.Err(err))
	}
	res.Path = s.shown(res.Path)
	for _, r := range append([]*read.Result{res}, res.Parts...) {
		if r.Continuation != nil {
			r.Continuation.Path = named
		}
	}
	out := &ReadResult{Result: res, Notes: res.Notes}
	if s.Journal == nil {
		if s.Guard.Policy().Journal.Required {
			return nil, s.unrecordable(res.Path, s.JournalErr)
		}
		out.Notes = append(out.Notes, s.notRecordedNote())
		return out, nil
	}
	again := req.Again
	if again == "" {
		again = "--no-dedupe"
	}
	dedupe := req.Session != "" && !req.NoDedupe
	var recs []*journal.Record
	switch {
	case res.Listing != nil:
		rec, err := s.answerListing(req.Session, dedupe, again, out)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	case res.Parts != nil:
		rs, err := s.answerWindows(req, dedupe, again, out)
		if err != nil {
			return nil, err
		}
		recs = rs
	default:
		rec, err := s.answerWindow(req, dedupe, again, out)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	if err := s.append(recs...); err != nil {
		if s.Guard.Policy().Journal.Required {
			return nil, s.unrecordable(res.Path, err)
		}
		out.Notes = append(out.Notes, "nothing was recorded in the journal: "+err.Error())
	}
	if res.Listing == nil {
		s.keep(res.Observation.ContentIDString(), res.Observation.RealPath, res.Content)
	}
	return out, nil
}

// observed is the journal record of what a read (or one window of it)
// showed.
func (s *Service) observed(session string, res, part *read.Result) *journal.Record {
	o := part.Observation
	rec := &journal.Record{
		Kind: journal.KindObservation, Origin: journal.OriginRead,
		Session: session, Path: res.Path, RealPath: o.RealPath, Pid: s.who.Pid, Uid: s.who.Uid, Process: s.who.Process, Owner: s.who.Owner(),
		StatID: o.StatID, ViewID: o.ViewID, ObsID: o.ID, WholeFileVisible: o.WholeFileVisible,
		Start: o.Range.Start, End: o.Range.End, Clamped: len(part.Truncation.ClampedLines),
		TotalLines: res.Totals.Lines, Identity: &o.Identity, Delivered: int64(len(part.Body)), Anchors: res.Anchors,
		ContentID: o.ContentIDString(),
	}
	// A document's read records its pages as the window: Start-End and
	// TotalLines count pages, so an unchanged re-read of the same pages of
	// the same version is answered from the ledger as lines are. No line
	// of it is held for a write: it is never a whole-file view.
	if res.Image != nil || res.Notebook != nil {
		// What was shown is a description or a rendering: no line of
		// the file is held through it.
		rec.Media, rec.Start, rec.End, rec.TotalLines = true, 0, 0, 0
	}
	return rec
}

// answerWindow answers a read of one window: from the ledger when the
// session already holds every line of it in this version, with a diff
// when the file changed since the session's last read and that says the
// same in fewer bytes, else with the lines. A window with a clamped line
// is always sent: its full text was never delivered.
func (s *Service) answerWindow(req ReadRequest, dedupe bool, again string, out *ReadResult) (*journal.Record, error) {
	res := out.Result
	rec := s.observed(req.Session, res, res)
	o := res.Observation
	a, b := o.Range.Start, o.Range.End
	if !dedupe || rec.ContentID == "" || rec.Media || rec.Clamped != 0 {
		return rec, nil
	}
	held, err := s.Journal.Holding(s.sess(req.Session), o.RealPath, rec.ContentID, res.Totals.Lines, req.Anchors)
	if err != nil {
		return nil, err
	}
	var change *changeAnswer
	switch {
	case held.Window(a, b, res.Totals.Lines):
		notice, footer := heldNotice(a, b, res.Totals.Lines, o.WholeFileVisible, again), ""
		if res.Document != nil {
			// A document's "lines" are its pages (see observed).
			notice = fmt.Sprintf("(Unchanged since your last read - you already hold pages %d-%d. Use %s to see them again.)", a, b, again)
		}
		if !o.WholeFileVisible {
			footer = res.Footer // paging goes on from the window
		}
		// A notice longer than the lines saves nothing: send the lines.
		if len(notice)+len(footer) < len(res.Body) {
			out.Notice, out.Footer = notice, footer
			rec.Origin, rec.Start, rec.End = journal.OriginLedger, 0, 0
		}
	case !req.Anchors && res.Document == nil: // a diff carries no anchors: an anchored read gets lines
		if change, err = s.answerChange(req.Session, res, again); err != nil {
			return nil, err
		}
	}
	if change != nil {
		out.Notice, out.Footer = change.notice, res.Footer
		out.Diff = &read.Diff{Against: change.against, Unified: change.unified}
		rec.Origin, rec.Held = journal.OriginDiff, change.held
	}
	if out.Notice != "" {
		saved(rec, len(out.Notice)+len(out.Footer))
	}
	return rec, nil
}

// heldNotice says that the session already holds lines a-b.
func heldNotice(a, b, total int64, whole bool, again string) string {
	if whole {
		return fmt.Sprintf("(Unchanged since your last read - you already hold all %d lines. Use %s to see them again.)", total, again)
	}
	return fmt.Sprintf("(Unchanged since your last read - you already hold lines %d-%d. Use %s to see them again.)", a, b, again)
}

// saved turns a record of lines shown into one of a shorter answer.
func saved(rec *journal.Record, delivered int) {
	rec.Saved, rec.Delivered = rec.Delivered-int64(delivered), int64(delivered)
	rec.ViewID, rec.WholeFileVisible = "", false
}

// answerWindows answers a read of several windows: each window the
// session already holds in this version is a notice (with its footer), the
// rest are lines; each window is its own record.
func (s *Service) answerWindows(req ReadRequest, dedupe bool, again string, out *ReadResult) ([]*journal.Record, error) {
	res := out.Result
	out.PartNotices = make([]string, len(res.Parts))
	var held journal.Held
	if cid := res.Observation.ContentIDString(); dedupe && cid != "" {
		var err error
		if held, err = s.Journal.Holding(s.sess(req.Session), res.Observation.RealPath, cid, res.Totals.Lines, req.Anchors); err != nil {
			return nil, err
		}
	}
	var recs []*journal.Record
	for i, p := range res.Parts {
		rec := s.observed(req.Session, res, p)
		a, b := p.Range.Start, p.Range.End
		if rec.ContentID != "" && rec.Clamped == 0 && held.Window(a, b, res.Totals.Lines) {
			notice := heldNotice(a, b, res.Totals.Lines, false, again)
			if len(notice)+len(p.Footer)+2 < len(p.Body) {
				out.PartNotices[i] = notice
				rec.Origin, rec.Start, rec.End = journal.OriginLedger, 0, 0
				saved(rec, len(notice)+len(p.Footer)+2)
			}
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// answerListing answers a directory read: a notice when the session's
// last listing of this page of the directory was exactly this one, else
// the entries. A listing record observes no file: it can never meet a
// write's precondition.
func (s *Service) answerListing(session string, dedupe bool, again string, out *ReadResult) (*journal.Record, error) {
	res := out.Result
	rec := &journal.Record{Kind: journal.KindListing, Origin: journal.OriginRead, Session: session, Path: res.Path, RealPath: res.Listing.RealPath,
		Pid: s.who.Pid, Uid: s.who.Uid, Process: s.who.Process, Owner: s.who.Owner(),
		ViewID: res.Observation.ViewID, Start: res.Range.Start, End: res.Range.End, TotalLines: res.Listing.Total, Delivered: int64(len(res.Body))}
	if !dedupe || res.Listing.Total == 0 {
		return rec, nil
	}
	last, err := s.Journal.LastListing(s.sess(session), res.Listing.RealPath, res.Range.Start)
	if err != nil {
		return nil, err
	}
	if last == nil || last.ViewID != res.Observation.ViewID {
		return rec, nil
	}
	notice := fmt.Sprintf("(Unchanged since your last listing - you already hold entries %d-%d of %d. Use %s to see them again.)", res.Range.Start, res.Range.End, res.Listing.Total, again)
	footer := ""
	if res.Continuation != nil {
		footer = res.Footer
	}
	if len(notice)+len(footer) < len(res.Body) {
		out.Notice, out.Footer = notice, footer
		rec.Origin = journal.OriginLedger
		rec.Saved, rec.Delivered = rec.Delivered-int64(len(notice)+len(footer)), int64(len(notice)+len(footer))
	}
	return rec, nil
}

// unrecordable refuses a read the journal cannot record when the policy
// requires a record of every read ([journal] required = true): fail closed.
func (s *Service) unrecordable(path string, cause error) error {
	why := "no journal is open"
	if cause != nil {
		why = cause.Error()
	}
	return refusal.Of(refusal.Unrecordable, refusal.OpRead, path, refusal.Facts{Detail: why}).Because(cause)
}

// shownErr is a check's, write's or edit's refusal as its caller is
// shown it: a name not found with its near names, in the caller's view.
func (s *Service) shownErr(err error) error {
	return s.view.Err(s.Guard.Suggest(err))
}

// notRecorded is the refusal of op on path when the journal records
// nothing.
func (s *Service) notRecorded(op refusal.Op, path string) *refusal.Error {
	return refusal.Of(refusal.NotRecorded, op, path, refusal.Facts{Detail: s.journalMissing()})
}

// notRecordedNote is the note of a read the journal did not record.
func (s *Service) notRecordedNote() string {
	return "nothing was recorded in the journal (" + s.journalMissing() + "); a later write will need a re-read"
}

func (s *Service) journalMissing() string {
	if s.JournalErr != nil {
		return s.JournalErr.Error()
	}
	return "no journal is open"
}

// recordRefusal journals the refusals that are policy decisions (not a
// typo's NOT_FOUND), so an operator sees what the agent tried, and returns
// the refusal to give the caller: one the journal could not record says
// so (refusal.Error.Unrecorded), and is handed to OnUnrecorded, which may
// keep it for when the journal records again.
func (s *Service) recordRefusal(session, path string, err error) error {
	code := refusal.CodeOf(err)
	switch code {
	case refusal.Denied, refusal.ArchiveUnchecked, refusal.OutsideAllowedRoots, refusal.DangerousPath:
	default:
		return err
	}
	shown := path
	r, ok := err.(*refusal.Error)
	if ok && r.Path != "" {
		shown = r.Path
	}
	rec := &journal.Record{Kind: journal.KindDenial, Time: time.Now().UTC(), Session: session, Path: shown, Code: string(code), Pid: s.who.Pid, Uid: s.who.Uid, Process: s.who.Process, Owner: s.who.Owner()}
	var why error
	if s.Journal == nil {
		why = errors.New(s.journalMissing())
	} else if why = s.append(rec); why == nil {
		return err
	}
	if !ok {
		return err
	}
	out := *r
	out.Unrecorded = why.Error()
	if s.OnUnrecorded != nil && s.OnUnrecorded(rec) {
		out.Unrecorded += "; the daemon keeps it and records it once the journal records again"
	}
	return &out
}

// Text renders a read result as the agent sees it.
func (r *ReadResult) Text() string {
	if r.held() {
		// Some windows were withheld: each is its notice and footer.
		var b strings.Builder
		for i, p := range r.Parts {
			if i > 0 {
				b.WriteString("\n")
			}
			if n := r.PartNotices[i]; n != "" {
				b.WriteString(n + "\n\n" + p.Footer + "\n")
			} else {
				b.WriteString(p.Body)
			}
		}
		cp := *r.Result
		cp.Body = b.String()
		return cp.Text()
	}
	if r.Notice == "" {
		return r.Result.Text()
	}
	var b strings.Builder
	b.WriteString("<path>" + termsafe.Quote(r.Path) + "</path>\n<type>" + r.Kind() + "</type>\n<content>\n" + r.Notice + "\n")
	if r.Footer != "" {
		b.WriteString("\n" + r.Footer + "\n")
	}
	b.WriteString("</content>\n")
	return b.String()
}

// JSON renders a read result as JSON. A notice replaces the lines; a
// diff's text is in "diff", and the footer keeps only its first line.
func (r *ReadResult) JSON() []byte {
	if r.held() {
		r.Result.Notes = r.Notes
		e := r.Result.Envelope()
		for i, n := range r.PartNotices {
			if n != "" {
				e.Windows[i].Lines, e.Windows[i].Notice = nil, n
			}
		}
		b, _ := json.Marshal(e) // an Envelope always marshals
		return append(b, '\n')
	}
	if r.Notice == "" {
		r.Result.Notes = r.Notes
		return r.Result.JSON()
	}
	notice, _, _ := strings.Cut(r.Notice, "\n")
	cp := *r.Result
	cp.Lines, cp.Footer, cp.Diff = nil, notice, r.Diff
	if r.Footer == "" {
		cp.Continuation = nil
	} else {
		cp.Footer = notice + "\n" + r.Footer
	}
	cp.Notes = append(append([]string{}, r.Notes...), notice)
	return cp.JSON()
}

// held reports whether some window of a read of several was withheld.
func (r *ReadResult) held() bool {
	for _, n := range r.PartNotices {
		if n != "" {
			return true
		}
	}
	return false
}

// As returns the service for one call by c, seen through view (nil: the
// caller sees host paths). Every file the call opens, creates or renames is
// opened with c's own rights, so the kernel decides what c may do exactly as
// for c's own system calls; its records carry c's identity, and its sessions
// are c's. The receiver is not changed: concurrent calls each have theirs.
func (s *Service) As(c *caller.Caller, view *caller.View) *Service {
	cp := *s
	cp.who, cp.view = c, view
	cp.Guard = s.Guard.As(c)
	return &cp
}

// Self is the service for the current process, for direct mode.
func (s *Service) Self() *Service { return s.As(caller.Self(), nil) }
