package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/metrics"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/store/journal"
	"github.com/fsguard/fsguard/internal/testenv"
	"github.com/fsguard/fsguard/internal/view/mount"
	"github.com/fsguard/fsguard/internal/view/warm"
)

// TestMain runs the test binary as a lister child when a mount started it
// as one (see warm.ListerMain), or runs the tests.
func TestMain(m *testing.M) {
	if status, ok := warm.ListerMain(); ok {
		os.Exit(status)
	}
	os.Exit(m.Run())
}

func loadPolicy(t *testing.T, dir, text string) *policy.Policy {
	t.Helper()
	p := filepath.Join(dir, "policy.toml")
	os.WriteFile(p, []byte(text), 0o644)
	pol, err := policy.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// TestDaemonLifecycle: the composition root, driven as the CLI drives it —
// start, a denial through the mount reaching the journal (asynchronously),
// a reload taking effect, a stop that unmounts and leaves a journal that
// verifies.
func TestDaemonLifecycle(t *testing.T) {
	t.Parallel()
	testenv.RequireFUSE(t)
	base := t.TempDir()
	root, mp := filepath.Join(base, "root"), filepath.Join(base, "mnt")
	os.MkdirAll(root, 0o755)
	os.MkdirAll(mp, 0o755)
	os.WriteFile(filepath.Join(root, ".env"), []byte("TOKEN=1\n"), 0o644)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
	jpath := filepath.Join(base, "journal.db")
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	d, err := Start(Config{Policy: loadPolicy(t, base, "[[root]]\npath = \""+root+"\"\n[metrics]\nlisten = \"127.0.0.1:0\"\n"), MountPoint: mp, JournalPath: jpath, Socket: filepath.Join(base, "ctl.sock"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			d.Stop()
		}
	}()
	if _, err := os.Stat(filepath.Join(mp, ".env")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat .env through the mount: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(mp, "a.txt")); err != nil || string(b) != "a\n" {
		t.Fatalf("a.txt: %q %v", b, err)
	}
	j, err := journal.Open(jpath)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var recs []*journal.Record
	testenv.Within(t, testenv.HangGuard, "the mount's denial in the journal", func() error {
		recs, err = j.Query(journal.Filter{Kind: journal.KindDenial})
		if err != nil {
			t.Fatal(err)
		}
		// The path where the refused process saw it (this process sees
		// the mount at mp), and the real one.
		if len(recs) > 0 && recs[0].Path == filepath.Join(mp, ".env") && recs[0].RealPath == filepath.Join(root, ".env") && recs[0].Code == string(refusal.Denied) {
			return nil
		}
		return fmt.Errorf("denials %+v", recs)
	})
	// Prometheus can scrape it over TCP: the mount's denial is there, by
	// source and code, with the build.
	resp, err := http.Get("http://" + d.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`fsguard_denials_total{source="mount",code="DENIED"} 1`, `fsguard_build_info{`, "go_goroutines "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics over TCP lacks %q:\n%s", want, body)
		}
	}
	if err := d.Reload(loadPolicy(t, base, "[[root]]\npath = \""+root+"\"\n[deny]\nglobs = [\"a.txt\"]\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(filepath.Join(mp, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after a reload denying a.txt: %v", err)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	var st syscall.Statfs_t
	if syscall.Statfs(mp, &st); st.Type == 0x65735546 { // FUSE_SUPER_MAGIC
		t.Error("still mounted after Stop")
	}
	if n, err := j.Verify(nil); err != nil || n == 0 {
		t.Errorf("journal after stop: %d records, %v", n, err)
	}
}

// TestDenialSinkNeverDropsSilently: a flood of denials larger than the
// queue, from more (process, directory) pairs than an interval names,
// ends up in the journal, each one named in a record's count or counted in
// a DENIALS_OVERFLOW or DENIALS_DROPPED record, in a bounded number of
// records, and a denial never waits for the disk.
func TestDenialSinkNeverDropsSilently(t *testing.T) {
	t.Parallel()
	j, err := journal.Open(filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	m := metrics.New()
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	s := newDenialSink(&recorder{j: j, log: log, m: m}, log, m, nil, "")
	s.every = time.Hour // one interval: the bound below does not depend on the machine's speed
	const n = 3 * queueLen
	for i := range n {
		s.Denial(mount.Denial{Time: time.Now(), Path: fmt.Sprintf("/d%d/.env", i%(2*maxDenialKeys)), Pid: uint32(1 + i%3), Code: refusal.Denied})
	}
	s.close()
	recs, err := j.Query(journal.Filter{Kind: journal.KindDenial})
	if err != nil {
		t.Fatal(err)
	}
	sum, codes := int64(0), map[string]int{}
	for _, r := range recs {
		sum += max(r.Count, 1)
		codes[r.Code]++
	}
	if sum != n || len(recs) > maxDenialKeys+2 {
		t.Fatalf("%d records (%v) counting %d denials, want %d in at most %d", len(recs), codes, sum, n, maxDenialKeys+2)
	}
	if codes["DENIALS_OVERFLOW"] != 1 {
		t.Errorf("records %v: want one DENIALS_OVERFLOW for the pairs beyond %d", codes, maxDenialKeys)
	}
	if got := denialMetric(m); got != n {
		t.Errorf("metrics count %d denials, want %d", got, n)
	}
	t.Logf("%d denials in %d records: %v", n, len(recs), codes)
}

// denialMetric is the mount's DENIED count in m.
func denialMetric(m *metrics.Set) int {
	var b strings.Builder
	m.Write(&b)
	var n int
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, `fsguard_denials_total{source="mount",code="DENIED"} `); ok {
			fmt.Sscan(v, &n)
		}
	}
	return n
}

// TestDenialFloodCostsBoundedJournal: one process looking up 20,000
// distinct denied names through a real mount costs the journal and the
// log a record an interval, not a record a denial; the records' counts add
// up to every denial, and so do the metrics.
func TestDenialFloodCostsBoundedJournal(t *testing.T) {
	t.Parallel()
	testenv.RequireFUSE(t)
	base := t.TempDir()
	root, mp := filepath.Join(base, "root"), filepath.Join(base, "mnt")
	os.MkdirAll(root, 0o755)
	os.MkdirAll(mp, 0o755)
	jpath := filepath.Join(base, "journal.db")
	var logged lockedBuffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	d, err := Start(Config{Policy: loadPolicy(t, base, "[[root]]\npath = \""+root+"\"\n"), MountPoint: mp, JournalPath: jpath, Log: log, Denials: mount.LogLines{Log: log}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			d.Stop()
		}
	}()
	const n = 20_000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf(".env.%d", i)
	}
	// One process (stat is single-threaded), each name looked up once.
	start := time.Now()
	stat := exec.Command("stat", append([]string{"-c", "%n"}, names...)...)
	stat.Dir = mp
	if out, err := stat.CombinedOutput(); err == nil || bytes.Count(out, []byte("No such file")) != n {
		t.Fatalf("stat of %d denied names: %v, %d refused", n, err, bytes.Count(out, []byte("No such file")))
	}
	testenv.Within(t, testenv.HangGuard, "every denial counted in the metrics", func() error {
		if got := denialMetric(d.Metrics); got != n {
			return fmt.Errorf("%d of %d", got, n)
		}
		return nil
	})
	stopped = true
	if err := d.Stop(); err != nil { // writes what is pending
		t.Fatal(err)
	}
	intervals := int(time.Since(start)/denialInterval) + 2
	j, err := journal.Open(jpath)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	recs, err := j.Query(journal.Filter{Kind: journal.KindDenial})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, r := range recs {
		sum += max(r.Count, 1)
		// The path is in stat's view while stat runs, and relative to the
		// mount's top once it has exited before its last denials were taken.
		inView := strings.HasPrefix(r.Path, filepath.Join(mp, ".env.")) || strings.HasPrefix(r.Path, "/.env.")
		if r.Code == string(refusal.Denied) && (r.Pid != uint32(stat.Process.Pid) || r.Process != "stat" || !inView) {
			t.Errorf("record %+v: want stat's denial of a .env.N", r)
		}
	}
	// Per interval: this process's one record, an overflow and a count
	// of what the queue dropped, at most.
	if sum != n || len(recs) > 3*intervals {
		t.Fatalf("%d records counting %d denials; want %d denials in at most %d records (%d intervals)", len(recs), sum, n, 3*intervals, intervals)
	}
	if lines := strings.Count(logged.String(), `"msg":"denied"`); lines > 3*intervals {
		t.Errorf("%d log lines for %d denials in %d intervals", lines, n, intervals)
	}
	st, err := j.Stats()
	if err != nil || st.Denials != n {
		t.Errorf("journal stats: %d denials, %v; want %d", st.Denials, err, n)
	}
	t.Logf("%d denials: %d records in %d intervals", n, len(recs), intervals)
}

// lockedBuffer is a log destination that goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRequiredJournalKeepsTheDaemonDown: with [journal] required = true the
// daemon does not start when its journal cannot be opened, and says why.
func TestRequiredJournalKeepsTheDaemonDown(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	os.MkdirAll(root, 0o755)
	os.WriteFile(filepath.Join(base, "blocker"), []byte("x"), 0o644)
	pol := loadPolicy(t, base, "[[root]]\npath = \""+root+"\"\n[journal]\nrequired = true\n")
	_, err := Start(Config{Policy: pol, MountPoint: filepath.Join(base, "mnt"), JournalPath: filepath.Join(base, "blocker", "j.db"),
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "required = true") {
		t.Fatalf("Start with an unopenable required journal: %v", err)
	}
}

// TestCloseWaitsForItsJobs: the daemon's background jobs (the git history
// check, the save of verdicts) end before the journal closes: close ends
// their context and waits for them, so a job that appends what it found
// once its context ends still appends to an open journal, never after
// Close. No job starts once close began.
func TestCloseWaitsForItsJobs(t *testing.T) {
	t.Parallel()
	j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"))
	testenv.Must(t, err)
	d := &Daemon{rec: &recorder{j: j}, log: slog.New(slog.DiscardHandler)}
	d.bg, d.stopBg = context.WithCancel(context.Background())
	started, appended := make(chan struct{}), make(chan error, 1)
	d.job(func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		appended <- j.Append(&journal.Record{Kind: journal.KindHistory, Path: "/r", Code: "HISTORY_EXPOSES", Detail: "found before the stop"})
	})
	<-started
	d.close()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatalf("the job's append, made as its context ended: %v", err)
		}
	default:
		t.Fatal("close returned while a job still ran")
	}
	ran := false
	d.job(func(context.Context) { ran = true })
	d.jobs.Wait()
	if ran {
		t.Fatal("a job started after close")
	}
}

// TestHistoryLooksWhereItWalks: of the directories the mount's warm walk
// met or left unlisted, the history check is handed only those it looks
// in itself: none inside node_modules, none inside a .git directory.
func TestHistoryLooksWhereItWalks(t *testing.T) {
	t.Parallel()
	var ds []warm.Dir
	for _, rel := range []string{".", "a/b", "node_modules/x", "a/node_modules", "a/b/.git/modules/m", "x/.git", "w"} {
		ds = append(ds, warm.Dir{Rel: rel})
	}
	var got []string
	for _, r := range lookedIn(ds) {
		got = append(got, r.Rel)
	}
	if want := []string{".", "a/b", "w"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("handed %q, want %q", got, want)
	}
}

// TestOpenedPathIsWhereTheFileIs: an open's path as the kernel names it
// after the mount had it drop the name (" (deleted)" appended) is the
// file's path when the file is still there under that name; a file deleted
// since, one whose own name ends so, or one known under another name keep
// what the kernel said.
func TestOpenedPathIsWhereTheFileIs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path     string
		unlinked bool
		rel      string
		want     string
	}{
		{"/mnt/conf/a.yaml (deleted)", false, "conf/a.yaml", "/mnt/conf/a.yaml"},
		{"/mnt/conf/a.yaml", false, "conf/a.yaml", "/mnt/conf/a.yaml"},
		{"/mnt/conf/a.yaml (deleted)", true, "conf/a.yaml", "/mnt/conf/a.yaml (deleted)"},
		{"/mnt/a (deleted)", false, "a (deleted)", "/mnt/a (deleted)"},
		{"/mnt/a (deleted) (deleted)", false, "a (deleted)", "/mnt/a (deleted)"},
		{"/mnt/old.txt (deleted)", false, "new.txt", "/mnt/old.txt (deleted)"},
	} {
		if got := openedPath(c.path, c.unlinked, c.rel); got != c.want {
			t.Errorf("openedPath(%q, %v, %q) = %q, want %q", c.path, c.unlinked, c.rel, got, c.want)
		}
	}
}
