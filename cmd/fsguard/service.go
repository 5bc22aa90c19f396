package main

import (
	"fsguard/agent"
	"fsguard/journal"
	"fsguard/policy"
	"fsguard/roots"
)

// openService builds the agent service for direct mode: the guard, and the
// journal at its configured place. A journal that cannot be opened is not
// fatal to reading; the service says so in every result.
func openService(pol *policy.Policy) (*agent.Service, func(), error) {
	g, err := roots.New(pol)
	if err != nil {
		return nil, nil, err
	}
	s := (&agent.Service{Guard: g, RequireWholeView: pol.Journal.RequireWholeView}).Self()
	j, err := journal.Open(journal.Locate(pol.Journal.Path))
	if err != nil {
		s.JournalErr = err
	} else {
		s.Journal = j
	}
	return s, func() {
		if s.Journal != nil {
			s.Journal.Close()
		}
		g.Close()
	}, nil
}
