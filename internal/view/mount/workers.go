package mount

import (
	"context"
	"runtime/pprof"
	"sync"
)

// workers are the goroutines a mount starts for its own work: the push
// workers, the listings made ahead, the refill's rounds, the warm walk and
// its lister, the watch of the roots' paths. Each runs under ctx, and
// Server.Unmount cancels it and waits for every one before the mount goes,
// so none outlives the mount: none pushes into a mount that is gone, reads
// a guard that is closed, or keeps a lister child. Once stopped, none
// starts. Each carries the profiler label MountLabel, the mount point: a
// profile tells one mount's work from another's, and a goroutine that
// outlived its mount would be seen.
type workers struct {
	label   string
	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// MountLabel is the profiler label on a mount's goroutines (see workers);
// its value is the mount point.
const MountLabel = "fsguard_mount"

func newWorkers(mp string) *workers {
	w := &workers{label: mp}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	return w
}

// Go runs f on a goroutine of the mount's, with the context that ends when
// the mount is unmounted; false (f not run) once it was.
func (w *workers) Go(f func(ctx context.Context)) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return false
	}
	w.wg.Go(func() { pprof.Do(w.ctx, pprof.Labels(MountLabel, w.label), f) })
	return true
}

// stop ends the workers' context and waits for all of them to return.
func (w *workers) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
}
