package session

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/store/journal"

	"golang.org/x/sys/unix"
)

// WriteStatus is what became of a write or edit the caller named by id.
type WriteStatus struct {
	ID string `json:"id"`
	// State is "written", "not written" or "in progress".
	State     string `json:"state"`
	Path      string `json:"path,omitempty"`
	ContentID string `json:"contentId,omitempty"`
	// Code says why it was not written (a refusal code, NOT_WRITTEN).
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail"`
}

// Status answers a caller that lost its connection before a write's or an
// edit's answer: did it happen? Only the caller's own writes are found (an
// id of someone else's is "no such write"), and the answer comes from
// the journal, which records a write's intent before anything is replaced.
func (s *Service) Status(id string) (*WriteStatus, error) {
	if id == "" {
		return nil, errors.New("status needs the id the write or edit was sent with")
	}
	if s.Journal == nil {
		return nil, fmt.Errorf("no journal, so no record of writes: %v", s.JournalErr)
	}
	in, res, err := s.Journal.Request(s.who.Owner(), id)
	if err != nil {
		return nil, err
	}
	st := &WriteStatus{ID: id}
	switch {
	case in == nil:
		st.State, st.Code = "not written", "NOT_WRITTEN"
		st.Detail = "no write or edit with this id was recorded for you; one is recorded before it replaces anything, so nothing was written"
		return st, nil
	case res == nil:
		st.Path, st.ContentID = in.Path, in.ContentID
		if holds(in.RealPath, in.ContentID) {
			st.State, st.Detail = "written", "the file holds the content; its record is not written yet"
		} else {
			st.State, st.Detail = "in progress", "recorded as begun and not yet finished; ask again"
		}
		return st, nil
	case res.Kind == journal.KindObservation:
		st.State, st.Path, st.ContentID, st.Detail = "written", res.Path, res.ContentID, "written and recorded"
	default:
		st.State, st.Path, st.Code, st.Detail = "not written", res.Path, res.Code, "it did not happen: "+res.Code
	}
	return st, nil
}

// holds reports whether the file at real has the content contentID.
func holds(real, contentID string) bool {
	f, err := os.Open(real)
	if err != nil {
		return false
	}
	defer f.Close()
	var fst unix.Stat_t
	if unix.Fstat(int(f.Fd()), &fst) != nil || fst.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return fileid.ContentID(sum) == contentID
}

// RenderStatus renders a status answer: exit 0 when the write happened,
// 1 (with the code NOT_WRITTEN or IN_PROGRESS) when it did not or has not
// yet.
func RenderStatus(id string, st *WriteStatus, err error) Output {
	if err != nil {
		return refused(errorOutput(err))
	}
	facts, _ := json.Marshal(st)
	out := Output{Structured: facts}
	switch st.State {
	case "written":
		out.Stdout = fmt.Sprintf("write %s: written %q (contentId %s): %s\n", id, st.Path, st.ContentID, st.Detail)
	case "in progress":
		out.Exit, out.Code, out.Message = ExitFail, "IN_PROGRESS", fmt.Sprintf("write %s: %s", id, st.Detail)
	default:
		out.Exit, out.Code, out.Message = ExitFail, "NOT_WRITTEN", fmt.Sprintf("write %s: not written: %s", id, st.Detail)
	}
	if out.Message != "" {
		out.Stderr = "Error: " + out.Message + "\n"
	}
	return out
}

// RenderMark renders the journal's last sequence number: stdout is the
// number, structured {"seq": N}.
func RenderMark(seq int64, err error) Output {
	if err != nil {
		return refused(errorOutput(err))
	}
	facts, _ := json.Marshal(map[string]int64{"seq": seq})
	return Output{Stdout: fmt.Sprintf("%d\n", seq), Structured: facts}
}
