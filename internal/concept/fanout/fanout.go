// Package fanout runs one function over the indices of a batch on a few
// goroutines: the shape of a cold listing's decisions and of an index's,
// where each item costs an open, a read and a sniff and the caller waits
// for all of them.
package fanout

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// cpus is the CPUs the process may use, as the runtime counted them at
// start (the machine's, or its cgroup's limit), before a daemon raised
// GOMAXPROCS above it for its blocked system calls: work that wants CPU
// gains nothing from more goroutines than that.
var cpus = runtime.GOMAXPROCS(0)

// Each calls fn(i) for every i in [0, n), on at most workers goroutines
// (never more than the CPUs, nor more than one per minPer items, the
// calling goroutine being one of them), and returns when all have
// returned. Items are handed out one at a time, so a slow one holds up
// no other.
func Each(n, workers, minPer int, fn func(i int)) {
	var next atomic.Int64
	work := func() {
		for k := next.Add(1) - 1; k < int64(n); k = next.Add(1) - 1 {
			fn(int(k))
		}
	}
	var wg sync.WaitGroup
	for range min(workers, cpus, n/max(minPer, 1)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}
