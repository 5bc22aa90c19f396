// Command benchjournal measures the journal: `fsguard check` latency with
// 1,000,000 records, append throughput of one and of 8 processes, and what
// the journal adds to one read. Prints a markdown table.
//
//	go run ./scripts/benchjournal
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/service/read"
	"github.com/fsguard/fsguard/internal/service/session"
	"github.com/fsguard/fsguard/internal/store/blobs"
	"github.com/fsguard/fsguard/internal/store/journal"
)

var (
	dir     = flag.String("dir", "/tmp/fsguard-benchjournal", "work directory")
	records = flag.Int("records", 1_000_000, "records in the big journal")
	writer  = flag.String("writer", "", "internal: append to this journal for -seconds")
	seconds = flag.Float64("seconds", 3, "append test duration")
)

func main() {
	flag.Parse()
	if *writer != "" {
		n := appendFor(*writer, time.Duration(*seconds*float64(time.Second)))
		fmt.Println(n)
		return
	}
	os.MkdirAll(*dir, 0o755)
	root := filepath.Join(*dir, "root")
	os.MkdirAll(root, 0o755)
	target := filepath.Join(root, "target.go")
	os.WriteFile(target, []byte(strings.Repeat("package main // a line of code\n", 200)), 0o644)
	bin := filepath.Join(*dir, "fsguard")
	run("go", "build", "-o", bin, "./cmd/fsguard")

	big := filepath.Join(*dir, "big.db")
	if !exists(big) {
		fill(big, *records)
	}
	// The session reads the target once, so check has an observation.
	env := append(os.Environ(), "FSGUARD_JOURNAL="+big, "FSGUARD_SESSION=bench")
	cmd(env, root, bin, "read", "target.go").Run()

	pol, _ := policy.Default(root)
	g, _ := roots.New(pol)
	j, err := journal.Open(big)
	must(err)
	svc := (&session.Service{Guard: g, Journal: j}).Self()
	inproc := sample(1000, func() {
		_, err := svc.Check("target.go", root, "bench")
		must(err)
	})
	process := sample(200, func() { must(cmd(env, root, bin, "check", "target.go").Run()) })

	// What the journal adds to one read: the same read with and without.
	small := filepath.Join(*dir, "small.db")
	os.Remove(small)
	js, err := journal.Open(small)
	must(err)
	with := (&session.Service{Guard: g, Journal: js}).Self()
	without := (&session.Service{Guard: g}).Self()
	req := session.ReadRequest{Request: read.Request{Path: "target.go", Cwd: root}, Session: "bench", NoDedupe: true}
	readWith := sample(500, func() { _, err := with.Read(req); must(err) })
	readWithout := sample(500, func() { _, err := without.Read(req); must(err) })

	// What the held-content store adds: a read of a kept version (a touch),
	// and a re-read after a one-line change, answered with a diff (which
	// also keeps the new version), against the same re-read sent as lines.
	hs, err := blobs.Open(filepath.Join(*dir, "small.held.db"), 256<<20)
	must(err)
	held := (&session.Service{Guard: g, Journal: js, Held: hs}).Self()
	readHeld := sample(500, func() { _, err := held.Read(req); must(err) })
	changed := func(svc *session.Service) []time.Duration {
		sess := fmt.Sprintf("changed-%p", svc)
		v := 0
		write := func() {
			v++
			body := strings.Repeat("package main // a line of code\n", 100) + fmt.Sprintf("// version %d\n", v) + strings.Repeat("package main // a line of code\n", 99)
			must(os.WriteFile(target, []byte(body), 0o644))
		}
		r := session.ReadRequest{Request: read.Request{Path: "target.go", Cwd: root}, Session: sess}
		write()
		_, err := svc.Read(r)
		must(err)
		return sampleAfter(300, write, func() {
			res, err := svc.Read(r)
			must(err)
			if (svc.Held != nil) != (res.Diff != nil) {
				panic("diff expected exactly when content is held")
			}
		})
	}
	diffRead, linesRead := changed(held), changed(with)

	// Append throughput: one record per transaction, as a read appends.
	one := filepath.Join(*dir, "append1.db")
	os.Remove(one)
	n1 := appendFor(one, time.Duration(*seconds*float64(time.Second)))
	eight := filepath.Join(*dir, "append8.db")
	os.Remove(eight)
	if jj, err := journal.Open(eight); err == nil {
		jj.Close()
	}
	var mu sync.Mutex
	var total int
	var wg sync.WaitGroup
	self, _ := os.Executable()
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command(self, "-writer", eight, "-seconds", fmt.Sprint(*seconds)).Output()
			must(err)
			var n int
			fmt.Sscan(string(out), &n)
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()

	fmt.Printf("| measure | p50 | p99 |\n|---|---|---|\n")
	fmt.Printf("| check, in process, %d records | %s | %s |\n", *records, ms(pct(inproc, 50)), ms(pct(inproc, 99)))
	fmt.Printf("| `fsguard check` command, %d records | %s | %s |\n", *records, ms(pct(process, 50)), ms(pct(process, 99)))
	fmt.Printf("| read with journal (in process) | %s | %s |\n", ms(pct(readWith, 50)), ms(pct(readWith, 99)))
	fmt.Printf("| read without journal (in process) | %s | %s |\n", ms(pct(readWithout, 50)), ms(pct(readWithout, 99)))
	fmt.Printf("| journal's cost on one read (p50 difference) | %s | |\n", ms(pct(readWith, 50)-pct(readWithout, 50)))
	fmt.Printf("| read with journal and held-content store, version already kept | %s | %s |\n", ms(pct(readHeld, 50)), ms(pct(readHeld, 99)))
	fmt.Printf("| re-read after a one-line change, answered as a diff (new version kept) | %s | %s |\n", ms(pct(diffRead, 50)), ms(pct(diffRead, 99)))
	fmt.Printf("| the same re-read without the store, answered as lines | %s | %s |\n", ms(pct(linesRead, 50)), ms(pct(linesRead, 99)))
	fmt.Printf("\nappend throughput (one record per transaction, synchronous=FULL): 1 process %.0f records/s; 8 processes %.0f records/s in total\n",
		float64(n1) / *seconds, float64(total) / *seconds)
}

func fill(path string, n int) {
	j, err := journal.Open(path)
	must(err)
	defer j.Close()
	const batch = 10000
	for i := 0; i < n; i += batch {
		recs := make([]*journal.Record, 0, batch)
		for k := i; k < i+batch && k < n; k++ {
			recs = append(recs, &journal.Record{
				Kind: journal.KindObservation, Origin: journal.OriginRead,
				Session: fmt.Sprintf("s%d", k%1000), Path: fmt.Sprintf("/w/p%d.go", k%10000), RealPath: fmt.Sprintf("/w/p%d.go", k%10000),
				ContentID: fmt.Sprintf("%064x", k), Start: 1, End: 100, TotalLines: 100,
			})
		}
		must(j.Append(recs...))
	}
}

func appendFor(path string, d time.Duration) int {
	j, err := journal.Open(path)
	must(err)
	defer j.Close()
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
		must(j.Append(&journal.Record{Kind: journal.KindObservation, Origin: journal.OriginRead, Session: "a", Path: "/p", RealPath: "/p"}))
	}
	return n
}

func sample(n int, f func()) []time.Duration {
	f() // warm
	out := make([]time.Duration, n)
	for i := range out {
		start := time.Now()
		f()
		out[i] = time.Since(start)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// sampleAfter times f n times, running setup untimed before each.
func sampleAfter(n int, setup, f func()) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		setup()
		start := time.Now()
		f()
		out[i] = time.Since(start)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

func pct(d []time.Duration, p int) time.Duration { return d[(len(d)-1)*p/100] }

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000) }

func cmd(env []string, dir, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Env, c.Dir = env, dir
	return c
}

func run(name string, args ...string) {
	c := exec.Command(name, args...)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	must(c.Run())
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchjournal:", err)
		os.Exit(1)
	}
}
