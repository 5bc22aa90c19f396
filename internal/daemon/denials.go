package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsguard/fsguard/internal/concept/mountinfo"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/concept/metrics"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/store/journal"
	"github.com/fsguard/fsguard/internal/view/mount"
)

// denialSink takes the mount's denials off the FUSE path: a handler hands a
// denial to a bounded queue and returns; one goroutine coalesces the queue
// and writes it to the journal once an interval. A denial that finds the
// queue full is counted, and the count is journaled as soon as there is
// room: never dropped silently.
//
// Coalescing: within an interval, the denials of one process (pid and
// name) in one directory with one code are one record, naming the first
// denied path, with their count; at most maxDenialKeys such records an
// interval, and one DENIALS_OVERFLOW record counting the rest. So a flood
// of denials costs the journal and the log a bounded number of records an
// interval, whatever its size, while the metrics count every denial and
// the counts of the records add up to every denial.
//
// While the journal does not record (a full disk), the records of each
// interval are kept, at most maxKept, and written once it records again;
// the denials of records beyond that are counted in one DENIALS_UNRECORDED
// record, so the counts still add up. Each denial's log line is written
// when it is taken, whatever the journal does.
type denialSink struct {
	q chan mount.Denial
	// later takes the socket's denials the journal could not record, to
	// be kept and written with the mount's.
	later   chan *journal.Record
	rec     *recorder
	kept    []*journal.Record // not yet recorded: the journal did not
	unkept  int64             // denials in records beyond maxKept
	kicks   chan struct{}
	log     *slog.Logger
	m       *metrics.Set
	lines   mount.Auditor // also logged, when set: a line per record
	mu      sync.Mutex
	dropped int64
	done    chan struct{}
	session string
	// every is the coalescing interval.
	every time.Duration
	// dev is the mount's device, once mounted: a denial's path is put in
	// the caller's view through it (views caches a prefix per mount
	// namespace; only the writing goroutine touches it).
	dev   atomic.Pointer[string]
	views map[uint64]string
}

const (
	// queueLen bounds the denials waiting to be coalesced.
	queueLen = 4096
	// denialInterval is how long denials are coalesced before they are
	// written.
	denialInterval = time.Second
	// maxDenialKeys bounds the records (process, directory, code) of one
	// interval; the denials beyond them are counted in one record.
	maxDenialKeys = 128
	// maxKept bounds the records kept while the journal does not record.
	maxKept = 4 * maxDenialKeys
	// laterLen bounds the socket's unrecorded denials waiting to be kept.
	laterLen = 256
)

// Keep takes a denial of the socket that the journal could not record, to
// write it once it records again (as the mount's denials are kept). It
// never blocks: false when the queue is full (the denial is then counted
// as dropped, and the caller told it is not kept).
func (s *denialSink) Keep(r *journal.Record) bool {
	select {
	case s.later <- r:
		return true
	default:
		s.mu.Lock()
		s.dropped++
		s.mu.Unlock()
		return false
	}
}

func newDenialSink(rec *recorder, log *slog.Logger, m *metrics.Set, lines mount.Auditor, session string) *denialSink {
	s := &denialSink{q: make(chan mount.Denial, queueLen), later: make(chan *journal.Record, laterLen), rec: rec, kicks: make(chan struct{}, 1), log: log, m: m, lines: lines, done: make(chan struct{}), session: session,
		every: denialInterval, views: map[uint64]string{}}
	go s.run()
	return s
}

// Denial implements mount.Auditor; it never blocks.
func (s *denialSink) Denial(d mount.Denial) {
	s.m.Denials.Add("mount,"+string(d.Code), 1)
	select {
	case s.q <- d:
	default:
		s.mu.Lock()
		s.dropped++
		s.mu.Unlock()
	}
}

// denialKey is what makes two denials one record.
type denialKey struct {
	pid, uid uint32
	process  string
	dir      string
	code     refusal.Code
}

// window is the denials of the interval under way.
type window struct {
	keys     map[denialKey]*mount.Denial // the first of each, with its count
	order    []*mount.Denial
	socket   []*journal.Record // the socket's, not recorded when denied
	overflow int64
	first    time.Time // of the overflow
}

func (s *denialSink) run() {
	defer close(s.done)
	w := &window{keys: map[denialKey]*mount.Denial{}}
	var flush <-chan time.Time
	for {
		select {
		case d, ok := <-s.q:
			if !ok {
				s.write(w) // what is pending, and a last count of what did not fit
				return
			}
			s.add(w, d)
			if flush == nil { // the interval starts with its first denial
				flush = time.After(s.every)
			}
		case r := <-s.later:
			if len(w.socket) < maxDenialKeys {
				w.socket = append(w.socket, r)
			} else {
				if w.overflow == 0 {
					w.first = r.Time
				}
				w.overflow++
			}
			if flush == nil {
				flush = time.After(s.every)
			}
		case <-flush:
			s.write(w)
			flush = nil
			if s.droppedSince() {
				flush = time.After(s.every)
			}
		case <-s.kicks:
			s.write(w) // the journal records again: what was kept, now
		}
	}
}

// droppedSince reports whether denials were dropped that no interval
// under way will count.
func (s *denialSink) droppedSince() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped > 0
}

func (s *denialSink) add(w *window, d mount.Denial) {
	k := denialKey{pid: d.Pid, uid: d.Uid, process: d.Process, dir: path.Dir(d.Path), code: d.Code}
	if first, ok := w.keys[k]; ok {
		first.Count++
		return
	}
	if len(w.keys) >= maxDenialKeys {
		if w.overflow == 0 {
			w.first = d.Time
		}
		w.overflow++
		return
	}
	// The path in the caller's view is found now, while the caller most
	// likely still runs.
	d.Path, d.Count = s.inView(d), 1
	w.keys[k] = &d
	w.order = append(w.order, &d)
}

// write journals (and logs) the window's records, and empties it.
func (s *denialSink) write(w *window) {
	recs := make([]*journal.Record, 0, len(w.order)+len(w.socket)+2)
	recs = append(recs, w.socket...)
	w.socket = w.socket[:0]
	for _, d := range w.order {
		r := &journal.Record{Kind: journal.KindDenial, Time: d.Time, Session: s.session, Path: d.Path, RealPath: d.RealPath, Code: string(d.Code), Pid: d.Pid, Uid: d.Uid, Process: d.Process}
		if d.Count > 1 {
			r.Count = d.Count
			r.Detail = fmt.Sprintf("%d denials of this process in this directory with this code within %s; the path is the first's", d.Count, s.every)
		}
		recs = append(recs, r)
		if s.lines != nil {
			s.lines.Denial(*d)
		}
	}
	if w.overflow > 0 {
		recs = append(recs, &journal.Record{Kind: journal.KindDenial, Time: w.first, Session: s.session, Code: "DENIALS_OVERFLOW", Count: w.overflow,
			Detail: fmt.Sprintf("%d denials beyond the %d (process, directory, code) recorded in this interval of %s are counted here, not named", w.overflow, maxDenialKeys, s.every)})
		s.log.Warn("denials counted, not named: too many distinct denials in one interval", "count", w.overflow, "interval", s.every.String())
	}
	clear(w.keys)
	w.order, w.overflow = w.order[:0], 0
	clear(s.views) // a namespace's mounts may have moved since the last interval
	s.mu.Lock()
	dropped := s.dropped
	s.dropped = 0
	s.mu.Unlock()
	if dropped > 0 {
		recs = append(recs, &journal.Record{Kind: journal.KindDenial, Time: time.Now().UTC(), Session: s.session, Code: "DENIALS_DROPPED", Count: dropped,
			Detail: fmt.Sprintf("%d denials arrived while the queue of %d was full and are counted here, not named", dropped, queueLen)})
		s.log.Warn("denials counted, not named: the queue was full", "count", dropped)
	}
	if s.rec == nil {
		return
	}
	if len(s.kept) > 0 || s.unkept > 0 {
		recs = append(s.kept, recs...)
		if s.unkept > 0 {
			recs = append(recs, &journal.Record{Kind: journal.KindDenial, Time: time.Now().UTC(), Session: s.session, Code: "DENIALS_UNRECORDED", Count: s.unkept,
				Detail: fmt.Sprintf("%d denials arrived while the journal did not record and more than %d records were kept: they are counted here, not named", s.unkept, maxKept)})
		}
		s.kept, s.unkept = nil, 0
	}
	if len(recs) == 0 {
		return
	}
	j, err := s.rec.Journal(), s.rec.Err()
	if j == nil && err == nil {
		err = errors.New("the journal is being reopened")
	}
	if err == nil {
		if err = j.Append(recs...); err != nil {
			s.rec.Failed(j, err)
		}
	}
	if err == nil {
		return
	}
	// Kept for when the journal records again (kick), the overflow
	// counted; an unrecorded-count record of an earlier try is folded in.
	s.m.JournalErrors.Add("", float64(len(recs)))
	if len(s.kept) == 0 {
		s.log.Error("journal append failed: denials kept until the journal records again", "err", err.Error(), "count", len(recs))
	}
	for _, r := range recs {
		switch {
		case r.Code == "DENIALS_UNRECORDED":
			s.unkept += r.Count
		case len(s.kept) < maxKept:
			s.kept = append(s.kept, r)
		default:
			s.unkept += max(r.Count, 1)
		}
	}
}

// kick has the sink write what it kept, now.
func (s *denialSink) kick() {
	select {
	case s.kicks <- struct{}{}:
	default:
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
