// Command benchsession measures whether a read's cost grows with the
// session: 2,000 reads of one file in one session, each of a new window (so
// each adds to what the session holds), through the same service the
// daemon uses, with a real journal and held-content store. It prints the
// p50 of the first and the last 100 reads.
//
//	go run ./scripts/benchsession
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/service/read"
	"github.com/fsguard/fsguard/internal/service/session"
	"github.com/fsguard/fsguard/internal/store/blobs"
	"github.com/fsguard/fsguard/internal/store/journal"
)

func main() {
	dir, err := os.MkdirTemp("", "fsguard-benchsession")
	must(err)
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	must(os.MkdirAll(root, 0o755))
	const reads, window = 2000, 10
	var b strings.Builder
	for i := range reads * window {
		fmt.Fprintf(&b, "line %d of a long file\n", i)
	}
	must(os.WriteFile(filepath.Join(root, "big.txt"), []byte(b.String()), 0o644))
	pol, err := policy.Default(root)
	must(err)
	g, err := roots.New(pol)
	must(err)
	j, err := journal.Open(filepath.Join(dir, "journal.db"))
	must(err)
	h, err := blobs.Open(filepath.Join(dir, "journal.held.db"), 256<<20)
	must(err)
	svc := (&session.Service{Guard: g, Journal: j, Held: h}).Self()
	took := make([]time.Duration, reads)
	for i := range reads {
		start := time.Now()
		_, err := svc.Read(session.ReadRequest{Request: read.Request{Path: "big.txt", Cwd: root, Offset: int64(i*window + 1), Limit: window}, Session: "bench"})
		must(err)
		took[i] = time.Since(start)
	}
	p50 := func(d []time.Duration) time.Duration {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
		return s[len(s)/2]
	}
	for i := 0; i < reads; i += 500 {
		fmt.Printf("reads %d-%d p50 %v\n", i+1, i+100, p50(took[i:i+100]))
	}
	first, last := p50(took[:100]), p50(took[reads-100:])
	fmt.Printf("reads 1-100 p50 %v; reads %d-%d p50 %v; last/first %.2f\n", first, reads-99, reads, last, float64(last)/float64(first))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
