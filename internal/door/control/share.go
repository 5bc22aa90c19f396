package control

import (
	"context"
	"sync"
	"time"
)

// share divides n units (connections, request slots) among the uids that
// take them, so that no uid can take them all:
//
//   - a uid holds at most per = max(1, n/4) at once;
//   - when n > 1, all uids but the privileged (root, the daemon's own)
//     together hold at most n-1, so a privileged caller always finds one;
//   - a privileged uid is bounded by n alone: it is the operator.
//
// Invariant: used is the sum of by, and by holds no zero counts.
type share struct {
	n, per int
	mu     sync.Mutex
	used   int
	by     map[uint32]int
	// freed is closed, and replaced, each time a unit is given back, to
	// wake whoever waits for one.
	freed chan struct{}
}

func newShare(n int) *share {
	return &share{n: n, per: max(1, n/4), by: map[uint32]int{}, freed: make(chan struct{})}
}

func (s *share) fits(uid uint32, privileged bool) bool {
	if privileged {
		return s.used < s.n
	}
	reserve := 0
	if s.n > 1 {
		reserve = 1
	}
	return s.used < s.n-reserve && s.by[uid] < s.per
}

// try takes a unit for uid if its share allows one now.
func (s *share) try(uid uint32, privileged bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.fits(uid, privileged) {
		return false
	}
	s.used++
	s.by[uid]++
	return true
}

// take waits, up to wait or ctx's end, for a unit for uid.
func (s *share) take(ctx context.Context, uid uint32, privileged bool, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if s.fits(uid, privileged) {
			s.used++
			s.by[uid]++
			s.mu.Unlock()
			return true
		}
		freed := s.freed
		s.mu.Unlock()
		select {
		case <-freed:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// room waits until fewer than n units are held (one more fits, for some
// uid).
func (s *share) room() {
	for {
		s.mu.Lock()
		if s.used < s.n {
			s.mu.Unlock()
			return
		}
		freed := s.freed
		s.mu.Unlock()
		<-freed
	}
}

// give returns a unit uid took.
func (s *share) give(uid uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used--
	if s.by[uid]--; s.by[uid] <= 0 {
		delete(s.by, uid)
	}
	close(s.freed)
	s.freed = make(chan struct{})
}

// held is how many units uid holds.
func (s *share) held(uid uint32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.by[uid]
}

// logEvery rate-limits a log line per key: the first is said at once, the
// rest within every are counted, and the next line said carries the count
// of all since the last. Its memory is bounded: keys not seen for an
// interval are forgotten when the map grows past maxKeys.
type logEvery struct {
	every time.Duration
	mu    sync.Mutex
	seen  map[string]*logSeen
}

type logSeen struct {
	said time.Time
	n    int // refusals since the last line, this one included
}

const maxLogKeys = 1024

// note counts one event for key; when a line is due it returns the count
// to say and true.
func (l *logEvery) note(key string, now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]*logSeen{}
	}
	s := l.seen[key]
	if s == nil {
		if len(l.seen) >= maxLogKeys {
			for k, v := range l.seen {
				if now.Sub(v.said) >= l.every {
					delete(l.seen, k)
				}
			}
			if len(l.seen) >= maxLogKeys {
				key = "" // every key is recent: the rest share one line
			}
		}
		if s = l.seen[key]; s == nil {
			s = &logSeen{}
			l.seen[key] = s
		}
	}
	s.n++
	if !s.said.IsZero() && now.Sub(s.said) < l.every {
		return 0, false
	}
	n := s.n
	s.said, s.n = now, 0
	return n, true
}

// holders returns how many units each uid holds now.
func (s *share) holders() map[uint32]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[uint32]int, len(s.by))
	for uid, n := range s.by {
		out[uid] = n
	}
	return out
}
