package main

import (
	"errors"
	"github.com/fsguard/fsguard/internal/concept/policy"
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
	j, err := journal.Open(journal.Locate(pol.Journal.Path))
	if err != nil {
		s.JournalErr = err
	} else {
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

// openHeld opens the held-content store beside the journal, or returns
// nil when the policy keeps nothing.
func openHeld(pol *policy.Policy, j *journal.Journal) (*blobs.Store, error) {
	if pol.Journal.HeldMaxBytes == 0 {
		return nil, nil
	}
	return blobs.OpenBeside(j.Path(), j.ID(), pol.Journal.HeldMaxBytes)
}
