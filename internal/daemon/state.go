package daemon

import (
	"os"
	"sync"
	"time"

	"github.com/fsguard/fsguard/internal/concept/metrics"
	"github.com/fsguard/fsguard/internal/decide/history"
	"github.com/fsguard/fsguard/internal/door/control"
	"github.com/fsguard/fsguard/internal/service/session"
	"github.com/fsguard/fsguard/internal/store/journal"
)

// Bounds of what the daemon keeps for `fsguard status`: sessions are
// counted exactly up to maxSessions (then no new one is remembered), and
// clean repositories are listed up to maxCleanRepos (then only counted);
// repositories with findings are all kept, as the log names them all.
const (
	maxSessions   = 1 << 16
	maxCleanRepos = 256
)

// tracker keeps what the daemon reports about itself beyond what its
// parts already know: when it started, the sessions it served, and the
// history scan's progress.
type tracker struct {
	started  time.Time
	mu       sync.Mutex
	sessions map[sessionKey]struct{}
	perUid   map[uint32]int
	hist     session.HistoryFacts
	clean    int // clean repositories in hist.Repos
}

type sessionKey struct{ owner, id string }

func newTracker(mode string) *tracker {
	return &tracker{started: time.Now(), sessions: map[sessionKey]struct{}{}, perUid: map[uint32]int{},
		hist: session.HistoryFacts{Mode: mode, State: "waiting"}}
}

// saw notes the session of a record the socket committed.
func (t *tracker) saw(r *journal.Record) {
	if r.Session == "" {
		return
	}
	k := sessionKey{r.Owner, r.Session}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.sessions[k]; ok || len(t.sessions) >= maxSessions {
		return
	}
	t.sessions[k] = struct{}{}
	t.perUid[r.Uid]++
}

// historyStarted marks the scan as running.
func (t *tracker) historyStarted() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hist.State, t.hist.Started = "running", time.Now()
}

// checked notes one repository the scan finished (history.Options.Checked).
func (t *tracker) checked(r history.Report) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(r.Findings) == 0 && !r.Incomplete {
		if t.clean >= maxCleanRepos {
			t.hist.Unlisted++
			return
		}
		t.clean++
	}
	t.hist.Repos = append(t.hist.Repos, r)
}

// historyDone marks the scan as ended, with err when it did not finish.
func (t *tracker) historyDone(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hist.State, t.hist.Finished = "done", time.Now()
	if err != nil {
		t.hist.State, t.hist.Err = "did not finish", err.Error()
	}
}

// facts is the daemon's facts about itself now (session.Service.Daemon),
// with the connections open on ctl.
func (d *Daemon) facts(ctl *control.Server) *session.DaemonFacts {
	pol := d.srv.Guard().Policy()
	f := &session.DaemonFacts{Version: metrics.Version(), Pid: os.Getpid(), Started: d.state.started,
		PolicySource: pol.Source, PolicyDigest: pol.Digest, MountPoint: d.cfg.MountPoint,
		Open: pol.Mount.Open, Watch: d.srv.Watch(), Walk: d.srv.Warming().WalkState()}
	if b := d.srv.Unwatched(); b != nil {
		f.Unwatched, f.UnwatchedErr, f.UnwatchedSince = b.Dir, b.Err, b.Since
	}
	if w := d.srv.WatchedAgain(); w != nil {
		f.WatchedAgain, f.UnwatchedFrom, f.WatchedAgainAt = w.Dir, w.Since, w.At
	}
	f.JournalPath = d.cfg.JournalPath
	f.Connected = ctl.Connected()
	t := d.state
	t.mu.Lock()
	defer t.mu.Unlock()
	f.Sessions = make(map[uint32]int, len(t.perUid))
	for uid, n := range t.perUid {
		f.Sessions[uid] = n
	}
	f.History = t.hist
	f.History.Repos = append([]history.Report(nil), t.hist.Repos...)
	return f
}
