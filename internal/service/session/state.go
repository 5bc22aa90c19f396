package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"github.com/fsguard/fsguard/internal/decide/history"

	"golang.org/x/sys/unix"
)

// DaemonFacts is what a running daemon knows about itself, for everyone
// alike; Service.State decides what of it one caller is shown.
type DaemonFacts struct {
	Version string
	Pid     int
	Started time.Time
	// PolicySource and PolicyDigest: the policy file in force and the
	// SHA-256 of its bytes (policy.Policy.Source, Digest).
	PolicySource, PolicyDigest string
	MountPoint                 string
	// Open is the open mode ([mount] open), Watch the watch backend (""
	// for none), Walk the first warm walk's state (mount.Server.WalkState).
	Open, Watch, Walk string
	// Unwatched is the first directory beneath the roots the watch could
	// not watch (mount.Server.Unwatched), "" when it sees them all;
	// UnwatchedErr why, UnwatchedSince since when.
	Unwatched, UnwatchedErr string
	UnwatchedSince          time.Time
	// WatchedAgain is the directory that was last unwatched and is
	// watched again (mount.Server.WatchedAgain), "" if none ever was;
	// WatchedAgainAt when, UnwatchedFrom since when it was not.
	WatchedAgain                  string
	WatchedAgainAt, UnwatchedFrom time.Time
	JournalPath                   string
	// Sessions and Connected are counted per uid: sessions the daemon
	// served since it started, connections open now.
	Sessions, Connected map[uint32]int
	History             HistoryFacts
}

// HistoryFacts is the git history scan's progress and outcome.
type HistoryFacts struct {
	Mode  string // [git] history: "warn" or "hide"
	State string // "waiting", "running", "done", "did not finish"
	Err   string
	// Started and Finished are zero until the scan starts and ends.
	Started, Finished time.Time
	// Repos is the repositories the scan checked (history.Options.Checked),
	// in order; Unlisted counts those that expose nothing and were left
	// out of Repos, which is bounded.
	Repos    []history.Report
	Unlisted int
}

// DaemonState is `fsguard status` with no id: what the daemon is doing,
// as much of it as the caller may see. Scope says how much that is.
type DaemonState struct {
	Version       string       `json:"version"`
	Pid           int          `json:"pid"`
	Started       time.Time    `json:"started"`
	UptimeSeconds int64        `json:"uptimeSeconds"`
	Scope         string       `json:"scope"` // "all", or "uid N" (what its rights reach)
	Policy        PolicyState  `json:"policy"`
	Roots         []string     `json:"roots"`
	Mount         MountState   `json:"mount"`
	Journal       JournalState `json:"journal"`
	Sessions      int          `json:"sessions"`
	ConnectedUids int          `json:"connectedUids"`
	Connections   int          `json:"connections"`
	History       HistoryState `json:"history"`
}

// PolicyState names the policy in force.
type PolicyState struct {
	Source string `json:"source"`
	SHA256 string `json:"sha256,omitempty"`
}

// MountState is the mount's.
type MountState struct {
	Point    string `json:"point"`
	Open     string `json:"open"`
	Watch    string `json:"watch"`
	WarmWalk string `json:"warmWalk"`
	// Unwatched, when set, is a directory the watch cannot watch now: the
	// view is served with short cache timeouts until it can.
	Unwatched *UnwatchedState `json:"unwatched,omitempty"`
	// WatchedAgain, when set, is the last directory that could not be
	// watched and now is: Since is when it could not, At when it was
	// watched again.
	WatchedAgain *WatchedAgainState `json:"watchedAgain,omitempty"`
}

// WatchedAgainState is the last part of the tree watched again.
type WatchedAgainState struct {
	Dir   string    `json:"dir"`
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
}

// UnwatchedState is the part of the tree the watch cannot see.
type UnwatchedState struct {
	Dir   string    `json:"dir"`
	Error string    `json:"error"`
	Since time.Time `json:"since"`
}

// JournalState is the journal's place and last sequence number.
type JournalState struct {
	Path  string `json:"path,omitempty"`
	Head  int64  `json:"head"`
	Error string `json:"error,omitempty"`
}

// HistoryState is the history scan as the caller may see it.
type HistoryState struct {
	Mode     string        `json:"mode"`
	State    string        `json:"state"`
	Error    string        `json:"error,omitempty"`
	Started  *time.Time    `json:"started,omitempty"`
	Finished *time.Time    `json:"finished,omitempty"`
	Repos    []HistoryRepo `json:"repos"`
	Unlisted int           `json:"unlisted,omitempty"` // clean repositories checked but not listed
}

// HistoryRepo is one repository the scan checked.
type HistoryRepo struct {
	Path     string           `json:"path"`
	Complete bool             `json:"complete"`
	Findings []HistoryFinding `json:"findings"`
}

// HistoryFinding is a finding with its wording in the mount's log.
type HistoryFinding struct {
	Text string `json:"text"`
	history.Finding
}

// maxShownFindings bounds the findings one repository's status lists: a
// history can name a denied path in every commit.
const maxShownFindings = 200

// State answers `fsguard status` with no id. The operator (root, the
// daemon's own user: caller.Caller.Operator) sees everything; anyone else
// sees only the roots, and the repositories' findings, that it could read
// with its own rights (each opened as the caller, by caller.Do), its own
// sessions and connections, and paths in its own view of the mount.
func (s *Service) State() (*DaemonState, error) {
	if s.Daemon == nil {
		return nil, errors.New("status with no id asks a running daemon: pass --socket SOCK or set FSGUARD_SOCKET")
	}
	f := s.Daemon()
	op := s.who.Operator()
	st := &DaemonState{Version: f.Version, Pid: f.Pid, Started: f.Started.UTC().Truncate(time.Second),
		UptimeSeconds: int64(time.Since(f.Started) / time.Second), Scope: "all",
		Policy: PolicyState{Source: f.PolicySource, SHA256: f.PolicyDigest},
		Mount:  MountState{Point: f.MountPoint, Open: f.Open, Watch: f.Watch, WarmWalk: f.Walk}}
	if st.Mount.Watch == "" {
		st.Mount.Watch = "none"
	}
	if !op {
		st.Scope = "uid " + strconv.FormatUint(uint64(s.who.Uid), 10)
		if s.view != nil {
			st.Mount.Point = s.view.Prefix
		}
	}
	// Roots, and each repository, count only where the caller could open
	// the directory itself (a repository's: its git directory).
	readable := map[string]bool{}
	canRead := func(dir string) bool {
		if op {
			return true
		}
		if ok, seen := readable[dir]; seen {
			return ok
		}
		err := s.who.Do(func() error {
			fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
			}
			return err
		})
		readable[dir] = err == nil
		return err == nil
	}
	for _, r := range s.Guard.Roots() {
		if canRead(r.Real) {
			st.Roots = append(st.Roots, s.hostShown(r.Path, op))
		}
	}
	if f.Unwatched != "" {
		st.Mount.Unwatched = &UnwatchedState{Dir: s.hostShown(f.Unwatched, op), Error: f.UnwatchedErr, Since: f.UnwatchedSince.UTC().Truncate(time.Second)}
		if !op {
			st.Mount.Unwatched.Error = "" // it names host paths
		}
	}
	if f.WatchedAgain != "" {
		st.Mount.WatchedAgain = &WatchedAgainState{Dir: s.hostShown(f.WatchedAgain, op), Since: f.UnwatchedFrom.UTC().Truncate(time.Second), At: f.WatchedAgainAt.UTC().Truncate(time.Second)}
	}
	st.Journal.Path = f.JournalPath
	if s.Journal == nil {
		if s.JournalErr != nil {
			st.Journal.Error = s.JournalErr.Error()
		} else {
			st.Journal.Error = "no journal"
		}
	} else if head, err := s.Journal.LastSeq(); err != nil {
		st.Journal.Error = err.Error()
	} else {
		st.Journal.Head = head
	}
	for uid, n := range f.Sessions {
		if op || uid == s.who.Uid {
			st.Sessions += n
		}
	}
	for uid, n := range f.Connected {
		if n > 0 && (op || uid == s.who.Uid) {
			st.ConnectedUids++
			st.Connections += n
		}
	}
	h := f.History
	st.History = HistoryState{Mode: h.Mode, State: h.State, Error: h.Err, Repos: []HistoryRepo{}}
	if !h.Started.IsZero() {
		t := h.Started.UTC().Truncate(time.Second)
		st.History.Started = &t
	}
	if !h.Finished.IsZero() {
		t := h.Finished.UTC().Truncate(time.Second)
		st.History.Finished = &t
	}
	if op {
		st.History.Unlisted = h.Unlisted
	}
	for _, rep := range h.Repos {
		// What a history holds is the git directory's: a work tree
		// anyone may list can have a git directory only its owner may
		// open (a .git that is a file, naming one elsewhere, is judged
		// as not readable: shown to the operator alone).
		if rep.Root == nil || !canRead(rep.Root.Real) || !canRead(filepath.Join(rep.Root.Real, rep.Repo, ".git")) {
			continue
		}
		hr := HistoryRepo{Path: s.hostShown(filepath.Join(rep.Root.Path, rep.Repo), op), Complete: !rep.Incomplete, Findings: []HistoryFinding{}}
		for i, fd := range rep.Findings {
			if i == maxShownFindings {
				hr.Findings = append(hr.Findings, HistoryFinding{Text: fmt.Sprintf("and %d more (journal query --kind history has them all)", len(rep.Findings)-i)})
				break
			}
			hr.Findings = append(hr.Findings, HistoryFinding{Text: fd.String(), Finding: fd})
		}
		st.History.Repos = append(st.History.Repos, hr)
	}
	return st, nil
}

// hostShown is a host path as this caller is shown it: as configured to
// the operator, in its own view of the mount to anyone else.
func (s *Service) hostShown(host string, op bool) string {
	if op {
		return host
	}
	return s.shown(host)
}

// RenderState renders the daemon's state: text for a person, the
// DaemonState as structured content.
func RenderState(st *DaemonState, err error) Output {
	if err != nil {
		return refused(errorOutput(err))
	}
	facts, _ := json.Marshal(st)
	facts = termsafe.JSON(facts) // paths and repository names are others' to choose
	var b strings.Builder
	fmt.Fprintf(&b, "fsguard %s, pid %d, up %s (since %s)\n", st.Version, st.Pid, (time.Duration(st.UptimeSeconds) * time.Second).String(), st.Started.Format(time.RFC3339))
	if st.Scope != "all" {
		fmt.Fprintf(&b, "shown:    what %s can read itself (other roots, repositories and uids are left out)\n", st.Scope)
	}
	b.WriteString("policy:   " + termsafe.Quote(st.Policy.Source))
	if st.Policy.SHA256 != "" {
		fmt.Fprintf(&b, " (sha256 %s)", st.Policy.SHA256)
	}
	b.WriteString("\nroots:    ")
	if len(st.Roots) == 0 {
		b.WriteString("none readable")
	}
	for i, r := range st.Roots {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(termsafe.Quote(r))
	}
	fmt.Fprintf(&b, "\nmount:    %s (open mode %s, watch %s, warm walk %s)\n", termsafe.Quote(st.Mount.Point), st.Mount.Open, st.Mount.Watch, st.Mount.WarmWalk)
	if u := st.Mount.Unwatched; u != nil {
		fmt.Fprintf(&b, "          not watched since %s: %s and what is beneath it (short cache timeouts until it is; retried each second)", u.Since.Format(time.RFC3339), termsafe.Quote(u.Dir))
		if u.Error != "" {
			fmt.Fprintf(&b, ": %s", termsafe.Escape(u.Error))
		}
		b.WriteString("\n")
	}
	if w := st.Mount.WatchedAgain; w != nil && st.Mount.Unwatched == nil {
		fmt.Fprintf(&b, "          watched again since %s: %s (not watched from %s)\n", w.At.Format(time.RFC3339), termsafe.Quote(w.Dir), w.Since.Format(time.RFC3339))
	}
	if st.Journal.Error != "" {
		fmt.Fprintf(&b, "journal:  %s (not recording: %s)\n", termsafe.Quote(st.Journal.Path), termsafe.Escape(st.Journal.Error))
	} else {
		fmt.Fprintf(&b, "journal:  %s (head %d)\n", termsafe.Quote(st.Journal.Path), st.Journal.Head)
	}
	fmt.Fprintf(&b, "sessions: %d served since start; %d connections open from %d uids\n", st.Sessions, st.Connections, st.ConnectedUids)
	h := st.History
	fmt.Fprintf(&b, "history:  %s ([git] history = %q)", h.State, h.Mode)
	if h.Started != nil {
		fmt.Fprintf(&b, ", started %s", h.Started.Format(time.RFC3339))
	}
	if h.Finished != nil {
		fmt.Fprintf(&b, ", finished %s", h.Finished.Format(time.RFC3339))
	}
	if h.Error != "" {
		b.WriteString(": " + termsafe.Escape(h.Error))
	}
	exposing := 0
	for _, r := range h.Repos {
		if len(r.Findings) > 0 {
			exposing++
		}
	}
	fmt.Fprintf(&b, "; %d repositories checked, %d expose what the view hides\n", len(h.Repos)+h.Unlisted, exposing)
	for _, r := range h.Repos {
		state := "complete"
		if !r.Complete {
			state = "not complete (stopped at its byte budget, or git could not list every unreachable object)"
		}
		fmt.Fprintf(&b, "  %s: %s", termsafe.Quote(r.Path), state)
		if len(r.Findings) == 0 {
			b.WriteString(": nothing exposed\n")
			continue
		}
		b.WriteString(":\n")
		for _, f := range r.Findings {
			b.WriteString("    " + termsafe.Escape(f.Text) + "\n")
		}
	}
	return Output{Stdout: b.String(), Structured: facts}
}
