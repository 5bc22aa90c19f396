package tests

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/door/control"
	"github.com/fsguard/fsguard/internal/service/api"
	"github.com/fsguard/fsguard/internal/testenv"
)

// socketMetric reads one series of the daemon's /metrics (0 when absent).
func socketMetric(t *testing.T, sock, series string) float64 {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET /metrics HTTP/1.0\r\n\r\n")
	b, _ := io.ReadAll(c)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// rootRead reads a file through the socket as this process (root) and
// fails t if no answer comes within the hang guard.
func rootRead(t *testing.T, e *privEnv, rel string, guard time.Duration) {
	t.Helper()
	type result struct {
		exit int
		err  error
		msg  string
	}
	done := make(chan result, 1)
	go func() {
		out, err := control.Call(e.sock, api.Request{Op: "read", Path: rel, Cwd: e.mp, NoDedupe: true}, nil)
		done <- result{out.Exit, err, out.Stderr}
	}()
	select {
	case r := <-done:
		if r.err != nil || r.exit != 0 {
			t.Fatalf("root's read of %s: exit %d, %v %s", rel, r.exit, r.err, r.msg)
		}
	case <-time.After(guard):
		t.Fatalf("root's read of %s not answered in %v (a hang guard)", rel, guard)
	}
}

// TestSocketRefusedFloodLocksNoOneOut: a uid the policy does not allow
// connects in a loop and keeps its connections open and silent. Each is
// answered and closed at once, so the daemon's descriptors stay bounded
// whatever the attacker holds, root and the allowed agent are served
// throughout, and the refusals are counted but logged a line per interval.
func TestSocketRefusedFloodLocksNoOneOut(t *testing.T) {
	t.Parallel()
	e := newPrivEnv(t, fmt.Sprintf("[control]\nallow_uids = [%d]\n", agentUID))
	pid := e.d.cmd.Process.Pid
	base := fdCount(t, pid)
	flood := startHelper(t, "flood", e.sock, otherUID)
	e.d.log.waitFor(t, `"msg":"control connection refused"`, 1, testenv.HangGuard)

	var peak int
	var mu sync.Mutex
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
				mu.Lock()
				peak = max(peak, len(ents))
				mu.Unlock()
			}
			select {
			case <-stopWatch:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	for i := range 10 {
		rootRead(t, e, "rootfile.txt", testenv.HangGuard)
		if out, errs, code := e.agent(t, "", "read", "rootfile.txt", "--no-dedupe"); code != 0 || !strings.Contains(out, "readable by all") {
			t.Fatalf("the agent's read %d during the flood: exit %d\n%s%s", i, code, out, errs)
		}
	}
	close(stopWatch)
	<-watched
	n, _ := strconv.Atoi(strings.TrimSpace(flood.stop()))
	lines := strings.Count(e.d.log.String(), `"msg":"control connection refused"`)
	refused := socketMetric(t, e.sock, `fsguard_socket_refused_total{reason="uid"}`)
	t.Logf("the flood made %d connections; daemon descriptors %d before, %d at the peak; %d refusal log lines; refused_total %g", n, base, peak, lines, refused)
	if n < 1000 {
		t.Fatalf("the flood made only %d connections: not a flood", n)
	}
	if peak > base+100 {
		t.Errorf("the daemon held %d descriptors at the flood's peak (%d before): refused connections are held", peak, base)
	}
	if lines > 10 {
		t.Errorf("%d refusal log lines for one uid's flood: not rate-limited", lines)
	}
	if refused < float64(lines) || refused < 100 {
		t.Errorf("fsguard_socket_refused_total{reason=\"uid\"} is %g for a flood of %d connections", refused, n)
	}
}

// TestSocketRefusalAnsweredAtOnce: a refused peer that sends nothing is
// answered with the reason at once and closed, not held waiting for it.
func TestSocketRefusalAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	e := newPrivEnv(t, "")
	probe := startHelper(t, "probe", e.sock, otherUID)
	var answered, closed int
	fmt.Sscan(probe.line(t), &answered, &closed)
	answer := probe.stop()
	if !strings.Contains(answer, "403 Forbidden") || !strings.Contains(answer, "allow_uids") {
		t.Fatalf("a silent refused peer got %q (stderr %s)", answer, probe.errs.String())
	}
	t.Logf("answered after %d ms, closed after %d ms", answered, closed)
	// A hang guard far above the answer's typical few milliseconds, and
	// below the seconds a refusal that waits for the request first takes.
	if answered > 2500 {
		t.Errorf("a silent refused peer was answered after %d ms: held, not refused at once", answered)
	}
}

// TestSocketSlotsSharedPerUid: an allowed uid opens as many requests as
// there are slots and sends no body, then as many writes whose request
// line comes but whose content never does. No slot is taken before a
// request's line arrives, no uid holds more than its share, so root and
// another allowed uid are still answered at once.
func TestSocketSlotsSharedPerUid(t *testing.T) {
	t.Parallel()
	e := newPrivEnv(t, fmt.Sprintf("[control]\nallow_uids = [%d, %d]\n", agentUID, otherUID))
	bodiless := startHelper(t, "hold", e.sock, agentUID, "FSGUARD_HELPER_N=16")
	if s := bodiless.line(t); s != "held" {
		t.Fatalf("helper: %q", s)
	}
	lined := startHelper(t, "hold", e.sock, agentUID, "FSGUARD_HELPER_N=16", "FSGUARD_HELPER_LINE=1")
	if s := lined.line(t); s != "held" {
		t.Fatalf("helper: %q", s)
	}
	// A hang guard far above a read's typical milliseconds, and below the
	// minute a request waits for a slot before it is told the daemon is busy.
	const guard = 20 * time.Second
	for range 3 {
		rootRead(t, e, "rootfile.txt", guard)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		out, errs, code := e.as(t, otherUID, otherUID, nil, "", "read", "rootfile.txt")
		if code != 0 || !strings.Contains(out, "readable by all") {
			t.Errorf("another allowed uid's read while uid %d holds requests: exit %d\n%s%s", agentUID, code, out, errs)
		}
	}()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatalf("another allowed uid's read not answered in %v (a hang guard)", guard)
	}
}

// TestJournalFilesArePrivate: whatever the daemon's umask, and in a
// journal directory that already exists world-readable, every file fsguard
// keeps (journal, WAL, held content, ids, verdicts) is its user's
// alone, the directory is made private and the log says so, and another
// uid cannot read what root was shown of a root-only file.
func TestJournalFilesArePrivate(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, needsRoot)
	for _, umask := range []string{"000", "022"} {
		t.Run("umask"+umask, func(t *testing.T) {
			t.Parallel()
			base := openDir(t)
			root, mp, state := filepath.Join(base, "root"), filepath.Join(base, "mnt"), filepath.Join(base, "state")
			for _, d := range []string{root, mp, state} {
				testenv.Must(t, os.Mkdir(d, 0o755))
				testenv.Must(t, os.Chmod(d, 0o755))
			}
			const secret = "root-only-secret-7f3a9c\n"
			writeFile(t, filepath.Join(root, "private.txt"), secret, 0o600)
			writePolicy(t, filepath.Join(base, "policy.toml"), []string{root}, "")
			sock := filepath.Join(base, "ctl.sock")
			jpath := filepath.Join(state, "journal.db")
			d := startMountVia(t, []string{"/bin/sh", "-c", "umask " + umask + ` && exec "$@"`, "sh"}, mp,
				[]string{"FSGUARD_JOURNAL=" + jpath}, "--policy", filepath.Join(base, "policy.toml"), "--socket", sock)
			out, err := control.Call(sock, api.Request{Op: "read", Path: "private.txt", Cwd: mp, Session: "s"}, nil)
			if err != nil || out.Exit != 0 || !strings.Contains(out.Stdout, "root-only-secret") {
				t.Fatalf("root's read: %v %+v", err, out)
			}
			// While the daemon runs: the WAL and shared-memory files too.
			private := func(when string) []string {
				ents, err := os.ReadDir(state)
				testenv.Must(t, err)
				var names []string
				for _, en := range ents {
					names = append(names, en.Name())
					if st := stat(t, filepath.Join(state, en.Name())); st.Mode&0o077 != 0 {
						t.Errorf("%s: %s is mode %04o under umask %s: readable or writable by others", when, en.Name(), st.Mode&0o7777, umask)
					}
				}
				t.Logf("%s, under umask %s: %s", when, umask, strings.Join(names, " "))
				return names
			}
			if names := private("running"); !slices.Contains(names, "journal.db-wal") {
				t.Errorf("no WAL while the daemon runs: %v", names)
			}
			d.stop()
			if !strings.Contains(d.log.String(), "journal directory made private") {
				t.Errorf("the daemon did not say it made %s private:\n%s", state, d.log.String())
			}
			if st := stat(t, state); st.Mode&0o777 != 0o700 {
				t.Errorf("journal directory %s is mode %04o, want 0700", state, st.Mode&0o777)
			}
			names := private("stopped")
			for _, want := range []string{"journal.db", "journal.held.db", "journal.db.id"} {
				if _, err := os.Lstat(filepath.Join(state, want)); err != nil {
					t.Errorf("no %s after a run: %v", want, err)
				}
			}
			// The attacker: another uid, even with the directory opened
			// back up, reads none of it.
			testenv.Must(t, os.Chmod(state, 0o755))
			for _, n := range names {
				cmd := testenv.As(exec.Command("cat", filepath.Join(state, n)), otherUID, otherUID)
				if b, err := cmd.Output(); err == nil {
					t.Errorf("uid %d read %s (%d bytes)", otherUID, n, len(b))
				}
			}
		})
	}
}

// TestSocketLongLinesHoldSlots: an allowed uid opens its whole share of
// connections, each sending a request line of nearly MaxRequestLine that
// never ends. Lines are read before a request holds a slot only up to a
// small bound; past it each needs a slot of the uid's share, so the
// daemon's memory stays within the per-request budget times the slots,
// not times the connections, and root is still served.
func TestSocketLongLinesHoldSlots(t *testing.T) {
	t.Parallel()
	e := newPrivEnv(t, fmt.Sprintf("[control]\nallow_uids = [%d]\n", agentUID))
	pid := e.d.cmd.Process.Pid
	resetPeak(t, pid)
	h := startHelper(t, "lines", e.sock, agentUID, "FSGUARD_HELPER_N=64", fmt.Sprintf("FSGUARD_HELPER_BYTES=%d", control.MaxRequestLine-(1<<20)))
	if s := h.line(t); s != "sent" {
		t.Fatalf("helper: %q", s)
	}
	const guard = 20 * time.Second // a hang guard far above a read's milliseconds
	rootRead(t, e, "rootfile.txt", guard)
	if peak := vmHWM(t, pid); peak > peakBudget {
		t.Errorf("64 connections of one uid sending long request lines took the daemon to %d MiB resident: more than %d MiB", peak>>20, peakBudget>>20)
	}
}
