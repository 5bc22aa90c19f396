package mount

import (
	"os"
	"path/filepath"
	"time"
)

// warm walks the mount itself, as a tree walker would, right after it is
// mounted: each directory listed is a READDIRPLUS that puts its names in
// the kernel's cache and has its small files pushed into the page cache
// (see prefetch), so the agent's first grep -r or git status finds the
// view warm instead of paying a round trip per name and per file. It
// lists directories only (it opens no file: the pushes read them, outside
// the journal, which records agents' reads), one at a time, waits while
// the pushes queued are many, and stops at the byte budget, at stop, or
// at the end of the tree. Symbolic links are not followed.
func (s *Server) warm(stop <-chan struct{}, budget int64) {
	start := time.Now()
	queue := []string{s.mp}
	dirs, files := 0, 0
	for len(queue) > 0 && s.v.prefetch.bytes.Load() < budget {
		for s.v.prefetch.busy() {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond): // the workers catch up
			}
		}
		select {
		case <-stop:
			return
		default:
		}
		d := queue[0]
		queue = queue[1:]
		ents, err := os.ReadDir(d)
		if err != nil {
			continue // gone, or hidden meanwhile: nothing to warm
		}
		dirs++
		for _, e := range ents {
			if e.IsDir() {
				queue = append(queue, filepath.Join(d, e.Name()))
			} else {
				files++
			}
		}
	}
	s.log.Info("warm walk done", "dirs", dirs, "files", files, "pushed_bytes", s.v.prefetch.bytes.Load(),
		"budget_bytes", budget, "seconds", time.Since(start).Seconds())
	s.event("warm_walk_done")
}
