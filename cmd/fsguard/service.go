package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fsguard/fsguard/internal/concept/document"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/service/session"
	"github.com/fsguard/fsguard/internal/store/blobs"
	"github.com/fsguard/fsguard/internal/store/journal"
)

// openService builds the agent service for direct mode: the guard, and the
// journal at its configured place. A journal that cannot be opened is not
// fatal to reading; the service says so in every result.
func openService(pol *policy.Policy) (*session.Service, func(), error) {
	g, err := roots.New(pol)
	if err != nil {
		return nil, nil, err
	}
	s := (&session.Service{Guard: g, RequireWholeView: pol.Journal.RequireWholeView}).Self()
	path := journalPath(pol)
	_, before := os.Stat(path)
	j, err := journal.Open(path)
	if err == nil && errors.Is(before, fs.ErrNotExist) && pol.Source == policy.EmbeddedDefault && os.Getenv("FSGUARD_JOURNAL") == "" {
		// Said once, when the journal is made: a try-out's record is not
		// where the service's is, and the user should know where it is.
		fmt.Fprintf(os.Stderr, "fsguard: no policy file: journaling this session in %s (read it with FSGUARD_JOURNAL=%s fsguard journal query; FSGUARD_JOURNAL or a policy's [journal] path moves it)\n", termsafe.Escape(path), termsafe.Escape(path))
	}
	if err != nil {
		s.JournalErr = err
	} else {
		// PDFium's compiled code is kept beside the journal: a read of a
		// PDF does not compile it on every run.
		document.Configure(filepath.Join(filepath.Dir(path), "pdfium"))
		held, herr := openHeld(pol, j) // without it, changed files come as lines
		var foreign *blobs.ForeignJournal
		if errors.As(herr, &foreign) {
			// Not a new journal: one that replaced the real one. Nothing is
			// recorded in it, and nothing is taken from it.
			j.Close()
			s.JournalErr = herr
		} else {
			s.Journal, s.Held = j, held
		}
	}
	return s, func() {
		if s.Journal != nil {
			s.Journal.Close()
		}
		if s.Held != nil {
			s.Held.Close()
		}
		g.Close()
	}, nil
}

// journalPath is where a run with pol journals: FSGUARD_JOURNAL, the
// policy's [journal] path, else the default. A run on the embedded default
// policy (no policy file: someone trying fsguard in a checkout) journals
// in the user's own state directory, root's included, so that a try-out
// never writes into the packaged service's journal in /var/lib/fsguard.
func journalPath(pol *policy.Policy) string {
	if pol.Source == policy.EmbeddedDefault && pol.Journal.Path == "" {
		return journal.LocateUnconfigured()
	}
	return journal.Locate(pol.Journal.Path)
}

// openHeld opens the held-content store beside the journal, or returns
// nil when the policy keeps nothing.
func openHeld(pol *policy.Policy, j *journal.Journal) (*blobs.Store, error) {
	if pol.Journal.HeldMaxBytes == 0 {
		return nil, nil
	}
	return blobs.OpenBeside(j.Path(), j.ID(), pol.Journal.HeldMaxBytes)
}
