package session

import (
	"fmt"
	"github.com/fsguard/fsguard/internal/service/edit"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/service/read"
)

// belief is what a model agent knows of a file: some of its lines, as of
// version ver, learnt only from what fsguard sent it.
type belief struct {
	ver   int
	lines map[int64]string
}

// patch applies a unified diff to what the agent knows. A context or
// removed line the agent does not know, or knows differently, means the
// diff leaned on a line it never held: an error. Lines after the last hunk
// shift by the hunks' net growth.
func (b *belief) patch(unified string) error {
	next := map[int64]string{}
	var delta, oldAt, newAt, copied int64 // copied: old lines below this are placed
	move := func(upTo int64) {            // carry known old lines [copied, upTo) across
		for l, t := range b.lines {
			if l >= copied && l < upTo {
				next[l+delta] = t
			}
		}
		copied = upTo
	}
	for _, ln := range strings.Split(strings.TrimSuffix(unified, "\n"), "\n") {
		switch {
		case strings.HasPrefix(ln, "--- ") || strings.HasPrefix(ln, "+++ "):
		case strings.HasPrefix(ln, "@@ "):
			f := strings.Fields(ln) // @@ -a,b +c,d @@
			oldStart, _ := strconv.ParseInt(strings.Split(f[1][1:], ",")[0], 10, 64)
			newStart, _ := strconv.ParseInt(strings.Split(f[2][1:], ",")[0], 10, 64)
			if !strings.Contains(f[1], ",") || !strings.HasSuffix(f[1], ",0") {
				move(oldStart)
			} else {
				move(oldStart + 1) // an empty old side sits after line oldStart
			}
			oldAt, newAt = oldStart, newStart
			if strings.HasSuffix(f[1], ",0") {
				oldAt++
			}
			if strings.HasSuffix(f[2], ",0") {
				newAt++
			}
			if newAt-oldAt != delta {
				return fmt.Errorf("hunk %s: lines before it moved by %d, the hunk says %d", ln, delta, newAt-oldAt)
			}
		default:
			text := ln[1:]
			switch ln[0] {
			case ' ', '-':
				if got, ok := b.lines[oldAt]; !ok || got != text {
					return fmt.Errorf("the diff leans on old line %d (%q), which the agent holds as %q (held: %v)", oldAt, text, got, ok)
				}
				if ln[0] == ' ' {
					next[newAt] = text
					newAt++
				} else {
					delta--
				}
				oldAt++
			case '+':
				next[newAt] = text
				newAt++
				delta++
			}
			copied = oldAt
		}
	}
	move(1 << 62)
	b.lines = next
	return nil
}

// TestReplayLedger replays an agent-like trace — 160 steps over 12 files
// of 40–2,600 lines, outside edits (changed, inserted and deleted lines)
// between reads, the agent's own exact-text edits, a third of the reads at
// an offset — and reports the bytes the ledger and its diffs saved. A
// model agent learns only from what it is sent: a notice must be about
// lines it holds, as they are now; a diff must apply to what it holds and
// leave it holding only true lines; an edit's answer must leave it holding
// only true lines. Any other answer is untruthful and fails the test.
func TestReplayLedger(t *testing.T) {
	t.Parallel()
	// The same trace without kept content (no diffs, edits only of the
	// version last read) is the baseline the diffs are measured against.
	t.Run("without held content", func(t *testing.T) { replay(t, false) })
	saved, diffs, edits := replay(t, true)
	if saved < 60 {
		t.Errorf("the ledger saved %.1f%% of the bytes, want at least 60%%", saved)
	}
	if diffs == 0 || edits == 0 {
		t.Fatal("the trace produced no diff or no edit: it tests nothing")
	}
}

func replay(t *testing.T, held bool) (saved float64, diffs, edits int64) {
	e := newEnv(t)
	if !held {
		e.svc.Held = nil
	}
	rng := rand.New(rand.NewPCG(12, 160))
	type file struct {
		name  string
		lines []string
		ver   int
		knows belief
	}
	var files []*file
	for i := range 12 {
		f := &file{name: fmt.Sprintf("f%02d.go", i), knows: belief{ver: -1}}
		n := 40 + rng.IntN(2561)
		for l := range n {
			f.lines = append(f.lines, fmt.Sprintf("\t// file %d line %d: %s", i, l+1, strings.Repeat("x", rng.IntN(60))))
		}
		files = append(files, f)
		e.write(f.name, strings.Join(f.lines, "\n")+"\n")
	}
	var sent, full, notices, untruthful, wholeSaved, listings, multi, listingNotices, windowNotices int64
	var heldListing string
	var refused, editBytes, writeBytes int64
	lie := func(step int, f *file, format string, args ...any) {
		untruthful++
		t.Errorf("step %d, %s: "+format, append([]any{step, f.name}, args...)...)
	}
	for step := range 160 {
		// The agent works on a few files at a time, as agents do.
		f := files[(step/20*3+rng.IntN(4))%len(files)]
		if rng.Float64() < 0.12 {
			l := rng.IntN(len(f.lines))
			switch p := rng.Float64(); {
			case p < 0.6:
				f.lines[l] += " // edited"
			case p < 0.8:
				f.lines = append(f.lines[:l], append([]string{fmt.Sprintf("\t// inserted at step %d", step)}, f.lines[l:]...)...)
			default:
				f.lines = append(f.lines[:l], f.lines[l+1:]...)
			}
			f.ver++
			e.write(f.name, strings.Join(f.lines, "\n")+"\n")
			continue
		}
		if k := &f.knows; rng.Float64() < 0.1 && len(k.lines) > 0 {
			// The agent edits a line it holds, by its text.
			known := make([]int64, 0, len(k.lines))
			for n := range k.lines {
				known = append(known, n)
			}
			slices.Sort(known)
			old := k.lines[known[rng.IntN(len(known))]]
			res, err := e.svc.Edit(f.name, e.root, "agent", edit.Edit{Old: old, New: old + " // agent"})
			if err != nil {
				refused++ // stale, or no longer unique: the agent reads again
				continue
			}
			edits++
			out := RenderEdit(res, nil).Stdout
			editBytes += int64(len(old)*2 + len(" // agent") + len(out))
			writeBytes += res.Bytes
			f.lines = strings.Split(strings.TrimSuffix(e.content(f.name), "\n"), "\n")
			f.ver++
			// What the agent knows now: what it held, moved as the answer
			// says, and the lines the answer shows; after changes
			// elsewhere, only the lines shown.
			next := map[int64]string{}
			if !res.Elsewhere {
				for n, t := range k.lines {
					switch {
					case n < res.Start:
						next[n] = t
					case n > res.End-res.Moved:
						next[n+res.Moved] = t
					}
				}
			}
			for _, ln := range strings.Split(strings.TrimSuffix(res.Shown, "\n"), "\n") {
				num, text, _ := strings.Cut(ln, ": ")
				n, _ := strconv.ParseInt(strings.SplitN(num, "#", 2)[0], 10, 64)
				next[n] = text
			}
			*k = belief{ver: f.ver, lines: next}
			for n, text := range k.lines {
				if int(n) > len(f.lines) || f.lines[n-1] != text {
					lie(step, f, "after the edit the agent holds line %d as %q, but it is not", n, text)
					break
				}
			}
			continue
		}
		if p := rng.Float64(); p < 0.1 {
			// The agent lists the directory, now and then after a new
			// file appeared in it.
			if rng.Float64() < 0.3 {
				e.write(fmt.Sprintf("notes-%03d.txt", step), "note\n")
			}
			r, err := e.svc.Read(ReadRequest{Request: read.Request{Path: ".", Cwd: e.root}, Session: "agent"})
			if err != nil {
				t.Fatal(err)
			}
			now := r.Body
			full += int64(len(now))
			listings++
			if r.Notice != "" {
				listingNotices++
				sent += int64(len(r.Notice) + len(r.Footer))
				if heldListing != now {
					untruthful++
					t.Errorf("step %d: a listing notice, but the agent holds another listing:\n%s\nnow:\n%s", step, heldListing, now)
				}
				continue
			}
			sent += int64(len(now))
			heldListing = now
			continue
		} else if p < 0.25 {
			// Several windows of one file in one read.
			var ws []read.Range
			for range 2 + rng.IntN(2) {
				a := 1 + int64(rng.IntN(len(f.lines)))
				ws = append(ws, read.Range{Start: a, End: min(a+20+int64(rng.IntN(60)), int64(len(f.lines)))})
			}
			r, err := e.svc.Read(ReadRequest{Request: read.Request{Path: f.name, Windows: ws, Cwd: e.root}, Session: "agent"})
			if err != nil {
				t.Fatal(err)
			}
			multi++
			k := &f.knows
			parts := r.Parts
			if parts == nil {
				parts = []*read.Result{r.Result} // merged into one window
			}
			if k.ver != f.ver && (r.Notice == "" || r.Diff == nil) {
				*k = belief{ver: f.ver, lines: map[int64]string{}}
			}
			for i, p := range parts {
				full += int64(len(p.Body))
				notice := r.Notice
				if r.Parts != nil && r.PartNotices != nil {
					notice = r.PartNotices[i]
				}
				if r.Parts == nil && r.Diff != nil {
					// One merged window answered with a diff: as a read.
					sent += int64(len(r.Notice) + len(r.Footer))
					if err := k.patch(r.Diff.Unified); err != nil {
						lie(step, f, "%v", err)
					}
					k.ver = f.ver
					break
				}
				if notice != "" {
					windowNotices++
					sent += int64(len(notice) + len(p.Footer))
					for l := p.Range.Start; l <= p.Range.End; l++ {
						if got, ok := k.lines[l]; !ok || got != f.lines[l-1] || k.ver != f.ver {
							lie(step, f, "window notice for lines %d-%d, but the agent does not hold line %d as it is", p.Range.Start, p.Range.End, l)
							break
						}
					}
					continue
				}
				sent += int64(len(p.Body))
				if len(p.Truncation.ClampedLines) == 0 {
					for _, l := range p.Lines {
						k.lines[l.N] = l.Text
					}
				}
			}
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
		a, b := r.Range.Start, r.Range.End
		k := &f.knows
		switch {
		case r.Diff != nil:
			diffs++
			sent += int64(len(r.Notice) + len(r.Footer))
			if err := k.patch(r.Diff.Unified); err != nil {
				lie(step, f, "%v", err)
				continue
			}
			k.ver = f.ver
			for l, text := range k.lines {
				if int(l) > len(f.lines) || f.lines[l-1] != text {
					lie(step, f, "after the diff the agent holds line %d as %q, but it is not", l, text)
					break
				}
			}
			for l := a; l <= b; l++ {
				if _, ok := k.lines[l]; !ok {
					lie(step, f, "after the diff the agent still lacks line %d of its window %d-%d", l, a, b)
					break
				}
			}
		case r.Notice != "":
			notices++
			sent += int64(len(r.Notice) + len(r.Footer))
			if r.Footer == "" { // a whole-file notice, all the first ledger gave
				wholeSaved += int64(len(r.Body) - len(r.Notice))
			}
			if k.ver != f.ver {
				lie(step, f, "notice for lines %d-%d, but the agent holds version %d and the file is at %d", a, b, k.ver, f.ver)
				continue
			}
			for l := a; l <= b; l++ {
				if got, ok := k.lines[l]; !ok || got != f.lines[l-1] {
					lie(step, f, "notice for lines %d-%d, but the agent does not hold line %d as it is", a, b, l)
					break
				}
			}
		default:
			sent += int64(len(r.Body))
			if k.ver != f.ver {
				*k = belief{ver: f.ver, lines: map[int64]string{}}
			}
			if len(r.Truncation.ClampedLines) == 0 {
				for _, l := range r.Lines {
					k.lines[l.N] = l.Text
				}
			}
		}
	}
	saved = 100 * float64(full-sent) / float64(full)
	fmt.Printf("replay (held content %v): 160 steps, %d bytes as lines, %d sent, %.1f%% saved (whole-file notices alone: %.1f%%), %d notices, %d diffs, %d untruthful\n",
		held, full, sent, saved, 100*float64(wholeSaved)/float64(full), notices, diffs, untruthful)
	fmt.Printf("replay (held content %v): %d directory reads (%d notices), %d reads of several windows (%d windows withheld)\n", held, listings, listingNotices, multi, windowNotices)
	if listingNotices == 0 || windowNotices == 0 {
		t.Fatal("the trace withheld no listing or no window: it tests neither")
	}
	fmt.Printf("replay (held content %v): %d edits (%d refused), %d bytes of edit requests and answers against %d bytes of whole-file writes\n", held, edits, refused, editBytes, writeBytes)
	if notices == 0 {
		t.Fatal("the trace produced no notice: it tests nothing")
	}
	return saved, diffs, edits
}
