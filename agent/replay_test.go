package agent

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"fsguard/read"
)

// TestReplayLedger replays an agent-like trace — 160 steps over 12 files
// of 40–2,600 lines, edits between reads, a third of the reads at an
// offset — and reports the bytes the ledger saved. Every notice is checked
// against an independent model of what the session was handed: a notice
// for a line the session does not hold in this version is untruthful, and
// fails the test.
func TestReplayLedger(t *testing.T) {
	e := newEnv(t)
	rng := rand.New(rand.NewPCG(12, 160))
	type file struct {
		name  string
		lines []string
		ver   int
	}
	var files []*file
	for i := range 12 {
		f := &file{name: fmt.Sprintf("f%02d.go", i)}
		n := 40 + rng.IntN(2561)
		for l := range n {
			f.lines = append(f.lines, fmt.Sprintf("\t// file %d line %d: %s", i, l+1, strings.Repeat("x", rng.IntN(60))))
		}
		files = append(files, f)
		e.write(f.name, strings.Join(f.lines, "\n")+"\n")
	}
	// held[name][version] is the set of lines the model knows were sent.
	held := map[string]map[int]map[int64]bool{}
	var sent, full, notices, untruthful, wholeSaved int64
	for step := range 160 {
		// The agent works on a few files at a time, as agents do.
		f := files[(step/20*3+rng.IntN(4))%len(files)]
		if rng.Float64() < 0.12 {
			l := rng.IntN(len(f.lines))
			f.lines[l] += " // edited"
			f.ver++
			e.write(f.name, strings.Join(f.lines, "\n")+"\n")
			continue
		}
		var off, lim int64
		if rng.Float64() < 0.3 {
			off, lim = 1+int64(rng.IntN(len(f.lines))), 50+int64(rng.IntN(150))
		}
		r, err := e.svc.Read(ReadRequest{Request: read.Request{Path: f.name, Offset: off, Limit: lim, Cwd: e.root}, Session: "agent"})
		if err != nil {
			t.Fatal(err)
		}
		full += int64(len(r.Body))
		if held[f.name] == nil {
			held[f.name] = map[int]map[int64]bool{}
		}
		h := held[f.name][f.ver]
		if h == nil {
			h = map[int64]bool{}
			held[f.name][f.ver] = h
		}
		if r.Notice != "" {
			notices++
			sent += int64(len(r.Notice) + len(r.Footer))
			if r.Footer == "" { // a whole-file notice, all the old ledger gave
				wholeSaved += int64(len(r.Body) - len(r.Notice))
			}
			for l := r.Range.Start; l <= r.Range.End; l++ {
				if !h[l] {
					untruthful++
					t.Errorf("step %d: notice for %s lines %d-%d, but line %d of this version was never sent", step, f.name, r.Range.Start, r.Range.End, l)
					break
				}
			}
			continue
		}
		sent += int64(len(r.Body))
		if len(r.Truncation.ClampedLines) == 0 {
			for l := r.Range.Start; l <= r.Range.End; l++ {
				h[l] = true
			}
		}
	}
	saved := 100 * float64(full-sent) / float64(full)
	fmt.Printf("replay: 160 steps, %d bytes without the ledger, %d sent, %.1f%% saved (whole-file notices alone: %.1f%%), %d notices, %d untruthful\n",
		full, sent, saved, 100*float64(wholeSaved)/float64(full), notices, untruthful)
	if saved < 60 {
		t.Errorf("the ledger saved %.1f%% of the bytes, want at least 60%%", saved)
	}
	if notices == 0 {
		t.Fatal("the trace produced no notice: it tests nothing")
	}
}
