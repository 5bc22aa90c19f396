package daemon

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsguard/fsguard/internal/concept/mountinfo"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/concept/metrics"
	"github.com/fsguard/fsguard/internal/store/journal"
	"github.com/fsguard/fsguard/internal/view/mount"
)

// denialSink takes the mount's denials off the FUSE path: a handler hands a
// denial to a bounded queue and returns; one goroutine writes the queue to
// the journal in batches (one transaction, one fsync, for many). A denial
// that finds the queue full is counted, and the count is journaled as soon
// as there is room: never dropped silently.
type denialSink struct {
	q       chan mount.Denial
	j       *journal.Journal
	log     *slog.Logger
	m       *metrics.Set
	lines   mount.Auditor // also logged, when set
	mu      sync.Mutex
	dropped int64
	done    chan struct{}
	session string
	// dev is the mount's device, once mounted: a denial's path is put in
	// the caller's view through it (views caches a prefix per mount
	// namespace; only the writing goroutine touches it).
	dev   atomic.Pointer[string]
	views map[uint64]string
}

// queueLen bounds the denials waiting to be written.
const queueLen = 4096

func newDenialSink(j *journal.Journal, log *slog.Logger, m *metrics.Set, lines mount.Auditor, session string) *denialSink {
	s := &denialSink{q: make(chan mount.Denial, queueLen), j: j, log: log, m: m, lines: lines, done: make(chan struct{}), session: session, views: map[uint64]string{}}
	go s.run()
	return s
}

// Denial implements mount.Auditor; it never blocks.
func (s *denialSink) Denial(d mount.Denial) {
	s.m.Denials.Add("mount,"+string(d.Code), 1)
	if s.lines != nil {
		s.lines.Denial(d)
	}
	select {
	case s.q <- d:
	default:
		s.mu.Lock()
		s.dropped++
		s.mu.Unlock()
	}
}

func (s *denialSink) run() {
	defer close(s.done)
	for d := range s.q {
		batch := []mount.Denial{d}
	more:
		for len(batch) < 512 {
			select {
			case d, ok := <-s.q:
				if !ok {
					break more
				}
				batch = append(batch, d)
			default:
				break more
			}
		}
		s.write(batch)
	}
	s.write(nil) // a last count of what did not fit
}

func (s *denialSink) write(batch []mount.Denial) {
	recs := make([]*journal.Record, 0, len(batch)+1)
	clear(s.views) // a namespace's mounts may have moved since the last batch
	for _, d := range batch {
		recs = append(recs, &journal.Record{Kind: journal.KindDenial, Time: d.Time, Session: s.session, Path: s.inView(d), RealPath: d.RealPath, Code: string(d.Code), Pid: d.Pid, Uid: d.Uid, Process: d.Process})
	}
	s.mu.Lock()
	dropped := s.dropped
	s.dropped = 0
	s.mu.Unlock()
	if dropped > 0 {
		recs = append(recs, &journal.Record{Kind: journal.KindDenial, Time: time.Now().UTC(), Session: s.session, Code: "DENIALS_DROPPED",
			Detail: fmt.Sprintf("%d denials arrived while the queue of %d was full and are not recorded one by one", dropped, queueLen)})
		s.log.Warn("denials not recorded one by one: the queue was full", "count", dropped)
	}
	if len(recs) == 0 || s.j == nil {
		return
	}
	if err := s.j.Append(recs...); err != nil {
		s.m.JournalErrors.Add("", float64(len(recs)))
		s.log.Error("journal append failed: denials not recorded", "err", err.Error(), "count", len(recs))
	}
}

// close writes what is queued and stops.
func (s *denialSink) close() {
	close(s.q)
	<-s.done
}

// inView is the denied path as the caller named it in its own mount
// namespace (/workspace/.env in a container), or relative to the mount's
// top (/.env) when that cannot be told (the caller is gone, or sees only
// part of the mount).
func (s *denialSink) inView(d mount.Denial) string {
	dev := s.dev.Load()
	if dev == nil || d.Pid == 0 {
		return d.Path
	}
	var st unix.Stat_t
	if unix.Stat(fmt.Sprintf("/proc/%d/ns/mnt", d.Pid), &st) != nil {
		return d.Path
	}
	prefix, ok := s.views[st.Ino]
	if !ok {
		p, err := mountinfo.Where(int(d.Pid), *dev)
		if err != nil {
			return d.Path
		}
		s.views[st.Ino], prefix = p, p
	}
	return filepath.Join(prefix, d.Path)
}
