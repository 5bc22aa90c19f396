package daemon

import (
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
