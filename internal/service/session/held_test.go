package session

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/service/read"
	"github.com/fsguard/fsguard/internal/store/blobs"
	"github.com/fsguard/fsguard/internal/store/journal"
)

func numbered(n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := edit[i]; ok {
			if s != "" {
				b.WriteString(s + "\n")
			}
			continue
		}
		fmt.Fprintf(&b, "line %d of the file\n", i)
	}
	return b.String()
}

// knows returns a model agent that was sent all of content.
func knows(content string) *belief {
	k := &belief{lines: map[int64]string{}}
	for i, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		k.lines[int64(i+1)] = l
	}
	return k
}

// appliesTo checks that r's diff, applied to what the agent holds, gives
// exactly the file's new content.
func appliesTo(t *testing.T, k *belief, r *ReadResult, now string) {
	t.Helper()
	if r.Diff == nil {
		t.Fatalf("no diff: %q", r.Text())
	}
	if err := k.patch(r.Diff.Unified); err != nil {
		t.Fatalf("%v\n%s", err, r.Diff.Unified)
	}
	want := knows(now)
	if fmt.Sprint(k.lines) != fmt.Sprint(want.lines) {
		t.Fatalf("the diff does not bring the agent up to date:\n%s", r.Diff.Unified)
	}
}

func TestDiffOnChangedReread(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v1 := numbered(200, nil)
	e.write("d.txt", v1)
	e.read("d.txt", 0, 0)
	v2 := numbered(200, map[int]string{100: "line 100, changed"})
	e.write("d.txt", v2)
	r := e.read("d.txt", 0, 0)
	appliesTo(t, knows(v1), r, v2)
	txt := r.Text()
	for _, want := range []string{
		"(Changed since your last read - the diff below, against the version you hold, brings you up to date. Use --no-dedupe to see the lines.)\n--- " + r.Path + "\t(the version you hold)\n+++ " + r.Path + "\t(now, 200 lines)\n@@ -97,7 +97,7 @@\n",
		"-line 100 of the file\n+line 100, changed\n",
		"\n(End of file - total 200 lines)\n</content>\n",
	} {
		if !strings.Contains(txt, want) {
			t.Fatalf("answer lacks %q:\n%s", want, txt)
		}
	}
	js := string(r.JSON())
	if !strings.Contains(js, `"diff":{"against":"`) || !strings.Contains(js, `@@ -97,7 +97,7 @@`) || strings.Contains(js, `"lines":[`) {
		t.Fatalf("JSON form: %s", js)
	}
	// After the diff the session holds the new version whole: a re-read is
	// a notice, and a write needs no re-read.
	if r := e.read("d.txt", 0, 0); !strings.HasPrefix(r.Notice, "(Unchanged since your last read - you already hold all 200 lines.") {
		t.Fatalf("re-read after a diff: %q", r.Notice)
	}
	if c := e.check("d.txt"); c != "" {
		t.Fatalf("check after a diff: %s", c)
	}
	recs, _ := e.svc.Journal.Query(journal.Filter{Session: "s1"})
	if d := recs[1]; d.Origin != journal.OriginDiff || fmt.Sprint(d.Held) != "[[1 200]]" || d.Saved <= 0 || d.Delivered != int64(len(r.Notice)+len(r.Footer)) {
		t.Fatalf("diff record: %+v", d)
	}
}

func TestDiffWithShiftsAndSeveralHunks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v1 := numbered(300, nil)
	e.write("d.txt", v1)
	e.read("d.txt", 0, 0)
	k := knows(v1)
	// An insertion near the top shifts every later line; a deletion and a
	// change further down are separate hunks.
	v2 := numbered(300, map[int]string{10: "line 10 of the file\ninserted", 150: "", 280: "line 280, changed"})
	e.write("d.txt", v2)
	r := e.read("d.txt", 0, 0)
	appliesTo(t, k, r, v2)
	if n := strings.Count(r.Diff.Unified, "\n@@ "); n != 3 {
		t.Fatalf("want 3 hunks, got %d:\n%s", n, r.Diff.Unified)
	}
}

// A file changed where the session holds nothing, or changed wholesale,
// or whose old version is no longer kept, is sent as lines — never as
// "unchanged".
func TestChangedRereadSendsLines(t *testing.T) {
	t.Parallel()
	t.Run("held window, edit elsewhere", func(t *testing.T) {
		e := newEnv(t)
		e.write("d.txt", numbered(200, nil))
		e.read("d.txt", 1, 50)
		e.write("d.txt", numbered(200, map[int]string{150: "line 150, changed"}))
		if r := e.read("d.txt", 1, 50); r.Notice != "" || !strings.Contains(r.Text(), "1: line 1 of the file") {
			t.Fatalf("got %q", r.Notice)
		}
	})
	t.Run("edit inside the held window", func(t *testing.T) {
		e := newEnv(t)
		v1 := numbered(200, nil)
		e.write("d.txt", v1)
		e.read("d.txt", 1, 50)
		v2 := numbered(200, map[int]string{20: "line 20, changed"})
		e.write("d.txt", v2)
		r := e.read("d.txt", 1, 50)
		k := knows(strings.Join(strings.SplitAfter(v1, "\n")[:50], ""))
		if err := k.patch(r.Diff.Unified); err != nil {
			t.Fatal(err)
		}
		if k.lines[20] != "line 20, changed" || len(k.lines) != 50 {
			t.Fatalf("after the diff: %d lines, line 20 %q", len(k.lines), k.lines[20])
		}
	})
	t.Run("context reaches past what is held", func(t *testing.T) {
		e := newEnv(t)
		e.write("d.txt", numbered(200, nil))
		e.read("d.txt", 1, 50)
		e.write("d.txt", numbered(200, map[int]string{49: "line 49, changed"}))
		if r := e.read("d.txt", 1, 50); r.Notice != "" {
			t.Fatalf("a diff leaning on unheld line 51-52: %q", r.Notice)
		}
	})
	t.Run("diff larger than the file", func(t *testing.T) {
		e := newEnv(t)
		e.write("d.txt", "a\nb\nc\nd\ne\n")
		e.read("d.txt", 0, 0)
		e.write("d.txt", "v\nw\nx\ny\nz\n")
		if r := e.read("d.txt", 0, 0); r.Notice != "" || r.Diff != nil || !strings.Contains(r.Text(), "1: v\n") {
			t.Fatalf("got %q", r.Text())
		}
	})
	t.Run("another session", func(t *testing.T) {
		e := newEnv(t)
		e.write("d.txt", numbered(200, nil))
		e.read("d.txt", 0, 0, "s1")
		e.write("d.txt", numbered(200, map[int]string{100: "changed"}))
		if r := e.read("d.txt", 0, 0, "s2"); r.Notice != "" {
			t.Fatalf("a session that never read the file got %q", r.Notice)
		}
		if r := e.read("d.txt", 0, 0, "s1"); r.Diff == nil {
			t.Fatal("the session that read it got no diff")
		}
	})
	t.Run("anchored read", func(t *testing.T) {
		e := newEnv(t)
		e.write("d.txt", numbered(200, nil))
		e.read("d.txt", 0, 0)
		e.write("d.txt", numbered(200, map[int]string{100: "changed"}))
		r, err := e.svc.Read(ReadRequest{Request: read.Request{Path: "d.txt", Cwd: e.root, Anchors: true}, Session: "s1"})
		if err != nil || r.Notice != "" || !strings.Contains(r.Text(), "\n100#") {
			t.Fatalf("anchored re-read: %v %q", err, r.Notice)
		}
	})
}

// The store's cap evicts the least recently used version, the journal
// records it, and a session holding only the evicted version gets lines.
func TestEvictedVersionGetsLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.svc.Held.Close()
	h, err := blobs.Open(filepath.Join(t.TempDir(), "small.held.db"), 64<<10) // keeps files up to 16 KiB
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	e.svc.Held = h
	v1 := numbered(300, nil) // ~6 KiB, ~1.5 KiB packed
	e.write("a.txt", v1)
	e.read("a.txt", 0, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 40; i++ { // ~6 KiB packed each: a.txt is pushed out
		var b strings.Builder
		for range 190 {
			fmt.Fprintf(&b, "%016x%016x%016x%016x\n", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64())
		}
		e.write(fmt.Sprintf("b%d.txt", i), b.String())
		e.read(fmt.Sprintf("b%d.txt", i), 0, 0)
	}
	evictions, _ := e.svc.Journal.Query(journal.Filter{Kind: journal.KindEviction})
	var found bool
	for _, ev := range evictions {
		found = found || strings.HasSuffix(ev.Path, "a.txt")
	}
	if !found {
		t.Fatalf("a.txt's version was not recorded as evicted (%d evictions)", len(evictions))
	}
	e.write("a.txt", numbered(300, map[int]string{150: "changed"}))
	if r := e.read("a.txt", 0, 0); r.Notice != "" || r.Diff != nil {
		t.Fatalf("diff against an evicted version: %q", r.Notice)
	}
}
