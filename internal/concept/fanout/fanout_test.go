package fanout

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestEachCallsEveryIndexOnce: every index exactly once, whatever the
// split, including none and fewer items than workers.
func TestEachCallsEveryIndexOnce(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 3, 100, 1000} {
		for _, workers := range []int{1, 2, 8} {
			seen := make([]atomic.Int32, n)
			Each(n, workers, 4, func(i int) { seen[i].Add(1) })
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("n=%d workers=%d: index %d called %d times", n, workers, i, c)
				}
			}
		}
	}
}

// TestEachRunsAtOnce: with several workers, items run concurrently: each
// of the first two waits for the other to start, which one goroutine
// alone never lets happen (30 s is the hang guard).
func TestEachRunsAtOnce(t *testing.T) {
	t.Parallel()
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one CPU: Each runs on one goroutine")
	}
	started := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var met atomic.Int32
	Each(2, 2, 1, func(i int) {
		close(started[i])
		select {
		case <-started[1-i]:
			met.Add(1)
		case <-time.After(30 * time.Second):
		}
	})
	if met.Load() != 2 {
		t.Fatal("the two items did not run at once")
	}
}
