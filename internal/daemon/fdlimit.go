package daemon

import (
	"os"
	"sync"

	"github.com/fsguard/fsguard/internal/decide/roots"

	"golang.org/x/sys/unix"
)

// The daemon's descriptors are bounded by RLIMIT_NOFILE. It raises the
// soft limit to the hard one at start (the Go runtime does so too; done
// here so the figure logged is the one in force), the mount's descriptor
// cache is sized from it, and an open that finds the table full all the
// same relieves the caches and is retried (roots.OnDescriptorPressure):
// logged once, counted in fsguard_descriptor_limit_hits_total.

// raiseDescriptorLimit raises the soft descriptor limit to the hard one
// and returns the limit in force (0 when it cannot be read).
func raiseDescriptorLimit() uint64 {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	return lim.Cur
}

// watchDescriptorLimit logs the first time an open finds the descriptor
// table full (each later time is only counted).
func (d *Daemon) watchDescriptorLimit(limit uint64) {
	var once sync.Once
	roots.OnDescriptorLimit(func() {
		once.Do(func() {
			d.log.Warn("descriptor limit reached: kept descriptors are closed and the open retried; raise the limit (LimitNOFILE=, ulimit -n) if this recurs",
				"limit", limit, "metric", "fsguard_descriptor_limit_hits_total")
		})
	})
	d.Metrics.DescriptorHits = roots.DescriptorLimitHits
}

// The control socket's bounds come from the descriptors the limit leaves
// once the daemon's own are open (the journal's pool, the held store, the
// watch, the FUSE device, the runtime: counted, not guessed), less a
// margin for what the mount opens while it serves and for the mount's
// descriptor cache (roots.DescriptorRoom). Each connection holds one
// descriptor; each request in service a few more (the caller's mountinfo,
// the file, its directory, /proc reads). A client past the connections
// waits in the listen backlog; past the requests, on its connection.
const (
	perRequest    = 4   // descriptors a request opens while it is served
	fewestConns   = 4   // root keeps one, and three are shared
	mostConns     = 256 // the socket's own bound when descriptors abound
	socketMargin  = 16  // the least kept for the mount's requests
	marginDivisor = 8   // ... or this share of the limit, if more
)

// socketBounds returns the control socket's connection and request bounds
// under a descriptor limit of limit (0: unknown) with open descriptors
// open now; requests is at most maxRequests (the policy's).
func socketBounds(limit uint64, open, maxRequests int) (conns, requests int) {
	if limit == 0 || open <= 0 {
		return mostConns, maxRequests
	}
	lim := int(min(limit, 1<<30))
	room := lim - open - max(socketMargin, lim/marginDivisor) - roots.DescriptorRoom(lim, lim)
	// A third of the room for connections, the rest for requests.
	conns = min(max(room/3, fewestConns), mostConns)
	requests = min(max((room-conns)/perRequest, 1), maxRequests)
	return conns, requests
}

// openDescriptors counts the descriptors open now (0 when it cannot).
func openDescriptors() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents) - 1 // the directory's own, closed again
}
