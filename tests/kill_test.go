package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/store/journal"
	"github.com/fsguard/fsguard/internal/testenv"
)

// TestKilledMidWriteLeavesWholeWritesOnly: the daemon is killed with
// SIGKILL while writes run through its socket (after some were
// acknowledged, during the next ones), then started again. Every write is
// either there whole, with its journal record, or absent; every
// acknowledged one is there; no temporary file is left; no intent dangles;
// and `journal verify` passes.
func TestKilledMidWriteLeavesWholeWritesOnly(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	f := newFixture(t)
	out := filepath.Join(f.root, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(f.base, "ctl.sock")
	d := startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	content := func(name string) string {
		return strings.Repeat("the content of "+name+", whole\n", 8<<10) // about 256 KiB
	}
	const writers, each, killAfter = 4, 40, 12
	var acked atomic.Int64
	var killed atomic.Bool
	var mu sync.Mutex
	var tried, ok []string
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				name := fmt.Sprintf("w%d-%02d.txt", g, i)
				mu.Lock()
				tried = append(tried, name)
				mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), testenv.HangGuard)
				cmd := exec.CommandContext(ctx, binary, "write", filepath.Join(f.mp, "out", name))
				cmd.Dir = f.mp
				cmd.Env = append(os.Environ(), "FSGUARD_SOCKET="+sock, fmt.Sprintf("FSGUARD_SESSION=k%d", g))
				cmd.Stdin = strings.NewReader(content(name))
				err := cmd.Run()
				cancel()
				if err != nil {
					if killed.Load() {
						return // the daemon is gone: this writer is done
					}
					t.Errorf("write %s before the kill: %v", name, err)
					return
				}
				mu.Lock()
				ok = append(ok, name)
				mu.Unlock()
				if acked.Add(1) == killAfter && killed.CompareAndSwap(false, true) {
					d.cmd.Process.Kill() // during the other writers' next writes
				}
			}
		}()
	}
	wg.Wait()
	if !killed.Load() {
		t.Fatal("the daemon was never killed")
	}
	select {
	case <-d.done:
	case <-time.After(testenv.HangGuard):
		t.Fatal("the daemon did not die of SIGKILL")
	}
	d2 := startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	jq, errs, code, _ := runBinary(t, f.base, []string{"FSGUARD_JOURNAL=" + d2.journal, "FSGUARD_POLICY="}, "", "journal", "query", "--kind", "observation", "--format", "json")
	if code != 0 {
		t.Fatalf("journal query: %s", errs)
	}
	var recs []map[string]any
	if err := json.Unmarshal([]byte(jq), &recs); err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, r := range recs {
		if p, _ := r["realPath"].(string); p != "" {
			recorded[filepath.Base(p)] = true
		}
	}
	acks := map[string]bool{}
	for _, name := range ok {
		acks[name] = true
	}
	there := 0
	for _, name := range tried {
		b, err := os.ReadFile(filepath.Join(out, name))
		switch {
		case err == nil && string(b) != content(name):
			t.Errorf("%s is there, but not whole: %d bytes of %d", name, len(b), len(content(name)))
		case err == nil && !recorded[name]:
			t.Errorf("%s is there, and the journal has no record of its write", name)
		case err != nil && acks[name]:
			t.Errorf("%s was acknowledged, and is not there: %v", name, err)
		case err != nil && !os.IsNotExist(err):
			t.Errorf("%s: %v", name, err)
		}
		if err == nil {
			there++
		}
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if roots.IsTemp(e.Name()) || strings.Contains(e.Name(), roots.TempMark) {
			t.Errorf("a temporary file is left after the restart: %s", e.Name())
		}
	}
	d2.stop()
	j, err := journal.OpenReadOnly(d2.journal)
	if err != nil {
		t.Fatal(err)
	}
	left, err := j.Dangling()
	j.Close()
	if err != nil || len(left) != 0 {
		t.Errorf("%d intents dangle after the restart (%v)", len(left), err)
	}
	if o, e, c, _ := runBinary(t, f.base, []string{"FSGUARD_JOURNAL=" + d2.journal, "FSGUARD_POLICY="}, "", "journal", "verify"); c != 0 {
		t.Errorf("journal verify after the kill and the restart: exit %d %s%s", c, o, e)
	}
	t.Logf("%d writes tried, %d acknowledged, %d there after the kill and restart", len(tried), len(ok), there)
}
