package daemon

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/fsguard/fsguard/internal/concept/metrics"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/store/journal"
)

// recorder is the daemon's journal as each of its parts uses it: the
// journal while it records, and why not while it does not. A journal that
// could not be opened, or that failed an append, is retried with backoff
// (reopened when it was never open or its files were lost, probed
// otherwise) until it records again; the log says when it stops and when
// it records again, and each part asks the recorder at each use, never
// keeping a journal of its own, so it follows the reopened one.
//
// Invariant: err is nil only when the journal is open and its last use
// (an append, a probe) succeeded; the retry loop runs whenever err is set.
type recorder struct {
	path string
	log  *slog.Logger
	m    *metrics.Set
	// hold is what is done to each journal opened (HoldFiles, with the
	// daemon's onLost); told is called each time the journal records
	// again (the denials kept meanwhile are written).
	hold    func(*journal.Journal) error
	told    func()
	stopped func()

	mu       sync.Mutex
	j        *journal.Journal
	err      error
	reopen   bool // the journal must be opened anew (never open, or its files lost)
	retrying bool
	closed   bool
	wake     chan struct{}
	done     sync.WaitGroup
}

// retryFirst and retryMost bound the wait between two tries.
const (
	retryFirst = 500 * time.Millisecond
	retryMost  = 5 * time.Second
)

// open opens the journal the first time. A failure starts the retries and
// is returned, for the caller to refuse to start when the journal is
// required.
func (r *recorder) open() error {
	r.wake = make(chan struct{}, 1)
	j, err := r.openOnce()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.err, r.reopen = err, true
		r.startRetry()
		return err
	}
	r.j = j
	return nil
}

// openOnce opens, holds and probes the journal.
func (r *recorder) openOnce() (*journal.Journal, error) {
	j, err := journal.Open(r.path)
	if err != nil {
		return nil, err
	}
	if r.hold != nil {
		if err := r.hold(j); err != nil {
			j.Close()
			return nil, err
		}
	}
	if err := j.Probe(); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// Journal is the journal when it is open (recording or not), or nil.
func (r *recorder) Journal() *journal.Journal {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.j
}

// Err is nil while the journal records, or why it does not (and that it
// is being retried).
func (r *recorder) Err() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		return nil
	}
	return &retryingError{r.err}
}

// retryingError is why the journal does not record, said with what the
// daemon does about it.
type retryingError struct{ err error }

func (e *retryingError) Error() string {
	return e.err.Error() + " (the daemon retries the journal and records again as soon as it can)"
}
func (e *retryingError) Unwrap() error { return e.err }

// Refusal is the one rule of [journal] required at every door: while the
// journal does not record, what would be served without its record is
// refused (Unrecordable), whether a socket read or an open or read
// through the mount. It is nil when the journal records or is not
// required.
func (r *recorder) Refusal(required bool, op refusal.Op, path string) error {
	if !required {
		return nil
	}
	if r == nil {
		return refusal.Of(refusal.Unrecordable, op, path, refusal.Facts{Detail: "no journal is configured"})
	}
	err := r.Err()
	if err == nil {
		return nil
	}
	return refusal.Of(refusal.Unrecordable, op, path, refusal.Facts{Detail: err.Error()}).Because(err)
}

// Failed says that an append to j (or a check of its files) failed: the
// journal does not record until a retry succeeds. A failure of a journal
// already replaced by a reopen is old news.
func (r *recorder) Failed(j *journal.Journal, err error) {
	if r == nil || err == nil {
		return
	}
	var lost *journal.LostFilesError
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || (j != r.j && r.j != nil) {
		return
	}
	if errors.As(err, &lost) {
		r.reopen = true
	}
	first := r.err == nil
	r.err = err
	r.startRetry()
	if first {
		r.log.Error("the journal stopped recording; retrying", "err", err.Error())
		r.m.Events.Add("journal_stopped", 1)
		if r.stopped != nil {
			go r.stopped()
		}
	}
}

// startRetry starts the retry loop unless it runs (r.mu held).
func (r *recorder) startRetry() {
	if r.retrying || r.closed {
		return
	}
	r.retrying = true
	r.done.Add(1)
	go r.retry()
}

// retry tries the journal with backoff until it records or the daemon
// stops.
func (r *recorder) retry() {
	defer r.done.Done()
	wait := retryFirst
	for {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.wake:
			t.Stop()
			r.mu.Lock()
			closed := r.closed
			r.mu.Unlock()
			if closed {
				return
			}
		}
		wait = min(wait*2, retryMost)
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return
		}
		if r.err == nil {
			r.retrying = false // an append succeeded meanwhile (Succeeded)
			r.mu.Unlock()
			return
		}
		old, reopen := r.j, r.reopen || r.j == nil
		r.mu.Unlock()
		var err error
		j := old
		if reopen {
			if old != nil {
				// Closed before the new one opens: its connections hold
				// the lost files, and SQLite's last close of them must not
				// find the new journal's WAL at the path.
				r.mu.Lock()
				r.j = nil
				r.mu.Unlock()
				old.Close()
			}
			j, err = r.openOnce()
		} else {
			err = j.Probe()
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			if reopen && j != nil {
				j.Close()
			}
			return
		}
		if err != nil {
			r.err = err
			r.mu.Unlock()
			continue
		}
		r.j, r.err, r.reopen, r.retrying = j, nil, false, false
		r.mu.Unlock()
		r.back()
		return
	}
}

// Succeeded says that an append to j succeeded: if the recorder thought
// it did not record (and it need not be reopened), it records again now,
// without waiting for the next try.
func (r *recorder) Succeeded(j *journal.Journal) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.err == nil || r.reopen || r.closed || j != r.j {
		r.mu.Unlock()
		return
	}
	r.err = nil
	r.mu.Unlock()
	r.back()
}

// back says that the journal records again.
func (r *recorder) back() {
	r.log.Info("the journal records again", "path", r.path)
	r.m.Events.Add("journal_recovered", 1)
	if r.told != nil {
		r.told()
	}
}

// close stops the retries and closes the journal.
func (r *recorder) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true
	j := r.j
	r.j = nil
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	r.done.Wait()
	if j != nil {
		j.Close()
	}
}
