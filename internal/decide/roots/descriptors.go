package roots

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Descriptors are a limited resource of the whole daemon (RLIMIT_NOFILE):
// the caches that keep descriptors open (the mount's kept files) give way
// when the table is full, instead of the open that needed one failing.
// Every open the guard makes on a request's behalf goes through
// retryOpen: on EMFILE or ENFILE it asks each registered reliever to close
// what it keeps idle, and tries again; the request fails only if nothing
// could be freed, or the table is still full after relief.

var pressure struct {
	mu        sync.Mutex
	relievers map[int]func() int
	next      int
	hits      atomic.Int64
	notify    atomic.Pointer[func()]
}

// OnDescriptorPressure registers relieve, called when an open finds the
// descriptor table full; it closes what its cache keeps idle and returns
// how many it closed. The returned function unregisters it.
func OnDescriptorPressure(relieve func() int) (stop func()) {
	pressure.mu.Lock()
	defer pressure.mu.Unlock()
	if pressure.relievers == nil {
		pressure.relievers = map[int]func() int{}
	}
	id := pressure.next
	pressure.next++
	pressure.relievers[id] = relieve
	return func() {
		pressure.mu.Lock()
		delete(pressure.relievers, id)
		pressure.mu.Unlock()
	}
}

// OnDescriptorLimit sets fn, called (from the request that met it) each
// time an open found the descriptor table full: the daemon logs the first
// and counts them all (DescriptorLimitHits).
func OnDescriptorLimit(fn func()) { pressure.notify.Store(&fn) }

// DescriptorLimitHits is how many opens found the descriptor table full.
func DescriptorLimitHits() int64 { return pressure.hits.Load() }

// tableFull reports whether err says the descriptor table is full.
func tableFull(err error) bool { return err == unix.EMFILE || err == unix.ENFILE }

// RelieveDescriptors is relieveDescriptors for a descriptor the guard does
// not open itself (the control socket's accept): counted and said alike.
func RelieveDescriptors() int { return relieveDescriptors() }

// relieveDescriptors asks every reliever to close what it keeps idle, and
// returns how many descriptors were closed.
func relieveDescriptors() int {
	pressure.hits.Add(1)
	if fn := pressure.notify.Load(); fn != nil {
		(*fn)()
	}
	pressure.mu.Lock()
	fns := make([]func() int, 0, len(pressure.relievers))
	for _, fn := range pressure.relievers {
		fns = append(fns, fn)
	}
	pressure.mu.Unlock()
	n := 0
	for _, fn := range fns {
		n += fn()
	}
	return n
}

// retryOpen runs open, and once more after relief when it found the
// descriptor table full and relief closed something. Concurrent requests
// may take what one freed: a few rounds, each freeing what was kept since.
func retryOpen(open func() (int, error)) (int, error) {
	fd, err := open()
	for range 4 {
		if !tableFull(err) || relieveDescriptors() == 0 {
			return fd, err
		}
		fd, err = open()
	}
	return fd, err
}

// DescriptorRoom is how many descriptors a cache may keep under a
// descriptor limit of limit: a quarter of what is left once the daemon's
// own (journal, socket, watch, the runtime, the FUSE device) and a
// request's worth for each of the FUSE server's concurrent requests are
// set aside, and never more than most.
func DescriptorRoom(limit, most int) int {
	const reserved = 128
	return min(max(0, (limit-reserved)/4), most)
}
