package warm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/testenv"

	"golang.org/x/sys/unix"
)

// fake is a Target without a mount: the guard and admission are real,
// the kernel is not there (nothing is pushed), and the count of changes
// is the test's.
type fake struct {
	g       *roots.Guard
	dec     *admit.Decider
	changes atomic.Int64
	ctx     context.Context
	wg      sync.WaitGroup
}

func newFake(t *testing.T, root string) *fake {
	t.Helper()
	pol, err := policy.Parse([]byte("[[root]]\npath = \"" + root + "\"\n"))
	testenv.Must(t, err)
	g, err := roots.New(pol)
	testenv.Must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	f := &fake{g: g, dec: admit.New(1 << 10), ctx: ctx}
	t.Cleanup(func() { cancel(); f.wg.Wait(); g.Close() })
	return f
}

func (f *fake) Push(Node, fileid.Identity, []byte, []byte, bool) (int, string) { return 0, "" }
func (f *fake) Warming() bool                                                  { return true }
func (f *fake) Policy() *policy.Policy                                         { return f.g.Policy() }
func (f *fake) Changes() int64                                                 { return f.changes.Load() }
func (f *fake) Root(name string) (*roots.Guard, *roots.Root) {
	for _, r := range f.g.Roots() {
		if r.Name == name {
			return f.g, r
		}
	}
	return f.g, nil
}
func (f *fake) Shown(g *roots.Guard, dir roots.Path, list []roots.DirEntry, keep *admit.Keep) []roots.DirEntry {
	return f.dec.Shown(g, dir, list, func(string) bool { return false }, keep)
}
func (f *fake) Busy(st *unix.Stat_t) bool {
	return time.Since(time.Unix(st.Mtim.Unix())) < 2*time.Second
}
func (f *fake) Backing(string) (Dir, bool)    { return Dir{}, false }
func (f *fake) WarmIndexes() int              { return 0 }
func (f *fake) StartLister() (*Lister, error) { return nil, errors.New("no mount") }
func (f *fake) Go(fn func(context.Context)) bool {
	f.wg.Go(func() { fn(f.ctx) })
	return true
}

// listedAhead lists the directories rels (beneath the fake's root) ahead
// and returns each list once made.
func listedAhead(t *testing.T, e *Engine, f *fake, rels ...string) map[string]*Ahead {
	t.Helper()
	r := f.g.Roots()[0]
	var dirs []AheadDir
	for _, rel := range rels {
		dirs = append(dirs, AheadDir{Name: rel})
	}
	e.ListAhead(r.At("."), dirs)
	out := map[string]*Ahead{}
	for _, rel := range rels {
		e.ahead.mu.Lock()
		x := e.ahead.lists[aheadKey{r.Name, rel}]
		e.ahead.mu.Unlock()
		if x == nil {
			t.Fatalf("%s was not queued to be listed ahead", rel)
		}
		select {
		case <-x.done:
		case <-time.After(30 * time.Second): // a hang guard
			t.Fatalf("%s: never listed ahead", rel)
		}
		out[rel] = x
	}
	return out
}

// quietDir makes dir and dates it an hour back once fill has written in
// it: a directory unchanged for a while is listed ahead.
func quietDir(t *testing.T, dir string, fill func()) {
	t.Helper()
	testenv.Must(t, os.MkdirAll(dir, 0o755))
	fill()
	old := time.Now().Add(-time.Hour)
	testenv.Must(t, os.Chtimes(dir, old, old))
}

const testKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"

// TestListedAheadStaleAfterEachChange: a list made ahead stands for its
// directory only while nothing it stands for changed. The attacker
// changes a directory after it was listed ahead and before the walker
// lists it: a file rewritten in place (to other text of the same size, or
// to a private key), a file created, removed or renamed, a subdirectory's
// mode changed (the listing's stat of it answers its LOOKUP), the
// directory swapped for a link to one outside the root. Each must be
// caught by the list's own checks even with a watch that has not
// reported the change yet (the count of changes has not moved); the
// untouched one stays current. (The walker's view of each, through the
// mount, is the mount's TestListedAheadOnlyWhileCurrent.)
func TestListedAheadStaleAfterEachChange(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	text := func(dir, name, v string) string { return dir + "/" + name + ", version " + v + " of ordinary text\n" }
	cases := []string{"untouched", "inplace", "keyed", "created", "removed", "renamed", "swapped"}
	old := time.Now().Add(-time.Hour)
	for _, c := range cases {
		dir := filepath.Join(root, c)
		quietDir(t, dir, func() {
			for _, name := range []string{"a.txt", "b.txt", "c.txt"} {
				p := filepath.Join(dir, name)
				testenv.Must(t, os.WriteFile(p, []byte(text(c, name, "1")), 0o644))
				testenv.Must(t, os.Chtimes(p, old, old))
			}
		})
	}
	dirmode := filepath.Join(root, "dirmode")
	quietDir(t, dirmode, func() { testenv.Must(t, os.Mkdir(filepath.Join(dirmode, "s"), 0o755)) })
	f := newFake(t, root)
	e := New(f, Config{Budget: 1 << 30})
	made := listedAhead(t, e, f, append([]string{"dirmode"}, cases...)...)

	dir := func(c string) string { return filepath.Join(root, c) }
	rewrite := func(p, content string) {
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		testenv.Must(t, err)
		_, err = fh.WriteString(content)
		testenv.Must(t, err)
		testenv.Must(t, fh.Close())
	}
	rewrite(filepath.Join(dir("inplace"), "b.txt"), text("inplace", "b.txt", "2")) // same size, same inode
	rewrite(filepath.Join(dir("keyed"), "b.txt"), testKey)
	testenv.Must(t, os.WriteFile(filepath.Join(dir("created"), "d.txt"), []byte(text("created", "d.txt", "1")), 0o644))
	testenv.Must(t, os.Remove(filepath.Join(dir("removed"), "b.txt")))
	testenv.Must(t, os.Rename(filepath.Join(dir("renamed"), "b.txt"), filepath.Join(dir("renamed"), "e.txt")))
	outside := t.TempDir()
	testenv.Must(t, os.Rename(dir("swapped"), dir("swapped")+".old"))
	testenv.Must(t, os.Symlink(outside, dir("swapped")))
	testenv.Must(t, os.Chmod(filepath.Join(dirmode, "s"), 0o700))
	g, r := f.g, f.g.Roots()[0]
	for c, x := range made {
		// The stat as the mount's listing takes it.
		var now *unix.Stat_t
		if e, err := g.Entry(r, c); err == nil {
			now = &e.Stat
		}
		if cur := x.current(f, g, r, now); cur != (c == "untouched") {
			t.Errorf("%s: counts as current %v after it was listed ahead", c, cur)
		}
	}
}

// TestListedAheadNotTooBig: a directory of more than maxAheadEntries
// entries is not listed ahead: a list holds a stat for each of its files
// until the walker comes, which it may never do.
func TestListedAheadNotTooBig(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	big := filepath.Join(root, "big")
	quietDir(t, big, func() {
		for i := range maxAheadEntries + 1 {
			testenv.Must(t, os.WriteFile(filepath.Join(big, fmt.Sprintf("f%05d", i)), nil, 0o644))
		}
	})
	f := newFake(t, root)
	e := New(f, Config{Budget: 1 << 30})
	if x := listedAhead(t, e, f, "big")["big"]; x.ok || x.list != nil {
		t.Errorf("a directory of %d entries was listed ahead (%d held)", maxAheadEntries+1, len(x.list))
	}
}

// TestListedAheadWithinItsBudget: the content kept by lists made ahead
// and not yet taken stays within maxAheadBytes, whatever the lists'
// sizes. Three directories of 6 MiB of small files each are listed ahead
// and none is taken: the third must keep at most what the first two left
// of the budget (a check of the total before each listing let it keep
// all 6 MiB: 18 held).
func TestListedAheadWithinItsBudget(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const dirs, files = 3, 48 // of maxPush bytes each: 6 MiB a directory
	body := strings.Repeat("ordinary text, kept for a push\n", maxPush/31+1)[:maxPush]
	var rels []string
	for d := range dirs {
		rel := fmt.Sprintf("d%d", d)
		rels = append(rels, rel)
		dir := filepath.Join(root, rel)
		quietDir(t, dir, func() {
			for f := range files {
				testenv.Must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", f)), []byte(body), 0o644))
			}
		})
	}
	f := newFake(t, root)
	e := New(f, Config{Budget: 1 << 30})
	e.parked.reads.Store(true) // an agent that reads what it lists: lists made ahead read its files
	held := 0
	for _, x := range listedAhead(t, e, f, rels...) {
		held += x.held.keptBytes
	}
	if held > maxAheadBytes || held < maxAheadBytes-maxPush {
		t.Errorf("lists made ahead hold %d bytes, want at most %d and the budget filled", held, maxAheadBytes)
	}
	if got := e.ahead.bytes.Load(); got != int64(held) {
		t.Errorf("the budget counts %d bytes, the lists hold %d", got, held)
	}
}
