package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/charset"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/service/edit"
	"github.com/fsguard/fsguard/internal/service/read"
	"github.com/fsguard/fsguard/internal/store/journal"
)

// TestNotebooksAreNeverWholeViews: a notebook read shows a rendering of
// cells, so with require_whole_view a write to it stays refused, as for an
// image; a plain check passes on the version observed.
func TestNotebooksAreNeverWholeViews(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("n.ipynb", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "source": "x = 1", "outputs": []}]}`)
	r := e.read("n.ipynb", 1, 0)
	if r.Notebook == nil || r.Observation.WholeFileVisible || !strings.Contains(r.Body, "x = 1") {
		t.Fatalf("notebook read: %+v", r.Result)
	}
	if _, err := e.svc.Check("n.ipynb", e.root, "s1"); err != nil {
		t.Errorf("a plain check after the notebook was read: %v", err)
	}
	strict := *e.svc
	strict.RequireWholeView = true
	if _, err := strict.Check("n.ipynb", e.root, "s1"); refusal.CodeOf(err) != refusal.NotObserved {
		t.Errorf("require_whole_view check after a notebook read: %v, want FS_NOT_OBSERVED", err)
	}
}

// TestWideTextRoundTrips: a UTF-16 or UTF-32 file is read as text, and a
// write or an edit of that text keeps the file's encoding and BOM.
func TestWideTextRoundTrips(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, enc := range []charset.Encoding{charset.UTF16LE, charset.UTF16BE, charset.UTF32LE} {
		name := string(enc) + ".txt"
		data, _ := charset.Encode([]byte("alpha\r\nbeta ✓\r\n"), enc)
		p := e.write(name, string(data))
		r := e.read(name, 1, 0)
		if !strings.HasPrefix(r.Body, "1: alpha\n2: beta ✓\n") {
			t.Fatalf("%s: read %q", enc, r.Body)
		}
		res, err := e.svc.Edit(name, e.root, "s1", edit.Edit{Old: "beta ✓", New: "gamma 𝄞"})
		if err != nil {
			t.Fatalf("%s: edit: %v", enc, err)
		}
		got, _ := os.ReadFile(p)
		want, _ := charset.Encode([]byte("alpha\r\ngamma 𝄞\r\n"), enc)
		if string(got) != string(want) {
			t.Fatalf("%s: after the edit the file is %q, want %q", enc, got, want)
		}
		if res.TotalLines != 2 {
			t.Errorf("%s: edit says %d lines", enc, res.TotalLines)
		}
		// The edit's record holds the new version: a whole write follows
		// without a re-read, sent as UTF-8 text.
		long := strings.Repeat("one two three four five six seven\n", 20)
		if _, err := e.svc.Write(name, e.root, "s1", strings.NewReader(long)); err != nil {
			t.Fatalf("%s: write: %v", enc, err)
		}
		got, _ = os.ReadFile(p)
		want, _ = charset.Encode([]byte(long), enc)
		if string(got) != string(want) {
			t.Fatalf("%s: after the write the file is %q, want %q", enc, got, want)
		}
		if r := e.read(name, 1, 0); r.Notice == "" {
			t.Errorf("%s: the session wrote this version, yet a re-read sent it again: %q", enc, r.Body)
		}
	}
}

// TestWindowsAndListingsInTheLedger: each window of a read of several is
// its own record and is withheld only when held; a listing is recorded,
// withheld only when the same as the session's last listing of it, and
// never meets a write's precondition.
func TestWindowsAndListingsInTheLedger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var b strings.Builder
	for i := 1; i <= 300; i++ {
		b.WriteString(strings.Repeat("x", i%50) + " line\n")
	}
	e.write("f.txt", b.String())
	e.read("f.txt", 100, 50) // holds 100-149
	r, err := e.svc.Read(ReadRequest{Request: read.Request{Path: "f.txt", Cwd: e.root, Windows: []read.Range{{Start: 110, End: 140}, {Start: 200, End: 260}}}, Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.PartNotices) != 2 || r.PartNotices[0] == "" || r.PartNotices[1] != "" {
		t.Fatalf("notices %q", r.PartNotices)
	}
	text := r.Text()
	if !strings.Contains(text, "you already hold lines 110-140") || !strings.Contains(text, "\n200: ") || strings.Contains(text, "\n110: ") {
		t.Fatalf("text:\n%s", text)
	}
	var env read.Envelope
	if err := json.Unmarshal(r.JSON(), &env); err != nil || len(env.Windows) != 2 || env.Windows[0].Notice == "" || len(env.Windows[0].Lines) != 0 || len(env.Windows[1].Lines) != 61 {
		t.Fatalf("JSON: %v %s", err, r.JSON())
	}
	recs := e.records("s1")
	if n := len(recs); n < 3 || recs[n-2].Origin != journal.OriginLedger || recs[n-1].Start != 200 || recs[n-1].End != 260 {
		t.Fatalf("records: %+v", recs)
	}

	os.Mkdir(filepath.Join(e.root, "d"), 0o755)
	for _, n := range strings.Fields("a c e g i k m o q s u w y") {
		e.write("d/"+n+".txt", "a\n")
	}
	list := func() *ReadResult {
		r, err := e.svc.Read(ReadRequest{Request: read.Request{Path: "d", Cwd: e.root}, Session: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := list(); r.Notice != "" || !strings.Contains(r.Body, "a.txt") {
		t.Fatalf("first listing: %+v", r)
	}
	if r := list(); r.Notice == "" {
		t.Fatalf("second listing of the same entries was sent again")
	}
	e.write("d/b.txt", "b\n")
	if r := list(); r.Notice != "" || !strings.Contains(r.Body, "b.txt") {
		t.Fatalf("a changed directory was withheld: %+v", r)
	}
	if _, err := e.svc.Check("d", e.root, "s1"); err == nil {
		t.Fatal("a listing met a write precondition")
	}
	recs = e.records("s1")
	if recs[len(recs)-1].Kind != journal.KindListing {
		t.Fatalf("last record: %+v", recs[len(recs)-1])
	}
}

// records returns a session's journal records, in order.
func (e *env) records(session string) []*journal.Record {
	e.t.Helper()
	recs, err := e.svc.Journal.Query(journal.Filter{Session: session})
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}
