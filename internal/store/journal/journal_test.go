package journal

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func openTemp(t *testing.T) (*Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.db")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j, path
}

func fill(t *testing.T, j *Journal, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if err := j.Append(&Record{Kind: KindObservation, Origin: OriginRead, Session: "s", Path: fmt.Sprintf("/flipme-%04d", i), RealPath: "/r", ContentID: "c"}); err != nil {
			t.Fatal(err)
		}
	}
}

// raw opens the database file behind the journal's back, as a tamperer would.
func raw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestChainVerifies(t *testing.T) {
	t.Parallel()
	j, _ := openTemp(t)
	fill(t, j, 100)
	n, err := j.Verify(nil)
	if err != nil || n != 100 {
		t.Fatalf("verify: %d %v", n, err)
	}
}

func TestTamperingIsDetected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tamper func(t *testing.T, db *sql.DB, path string)
		// where the damage must be reported: at open, or by verify
		atOpen bool
		want   string
	}{
		{"altered body", func(t *testing.T, db *sql.DB, _ string) {
			db.Exec(`UPDATE records SET body = replace(body, 'flipme-0050', 'flipme-9999') WHERE seq = 50`)
		}, false, "record 50: its hash does not match"},
		{"altered indexed column", func(t *testing.T, db *sql.DB, _ string) {
			db.Exec(`UPDATE records SET session = 'other' WHERE seq = 20`)
		}, false, "record 20: its indexed columns disagree"},
		{"deleted row in the middle", func(t *testing.T, db *sql.DB, _ string) {
			db.Exec(`DELETE FROM records WHERE seq = 30`)
		}, false, "record 30: missing"},
		{"deleted last row", func(t *testing.T, db *sql.DB, _ string) {
			db.Exec(`DELETE FROM records WHERE seq = 100`)
		}, true, "the head says record 100 but the last record is 99"},
		{"torn tail", func(t *testing.T, db *sql.DB, path string) {
			db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
			db.Close()
			fi, _ := os.Stat(path)
			os.Truncate(path, fi.Size()-4096)
		}, true, "damaged"},
		{"flipped byte in the file", func(t *testing.T, db *sql.DB, path string) {
			db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
			db.Close()
			b, _ := os.ReadFile(path)
			i := bytes.LastIndex(b, []byte("flipme-0042")) // the copy in the body, after the path column
			if i < 0 {
				t.Fatal("record text not found in the file")
			}
			b[i+7] ^= 0x01
			os.WriteFile(path, b, 0o600)
		}, false, "record 42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, path := openTemp(t)
			fill(t, j, 100)
			j.Close()
			db := raw(t, path)
			tt.tamper(t, db, path)
			db.Close()
			j2, err := Open(path)
			if tt.atOpen {
				var de *DamageError
				if !errors.As(err, &de) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("open: %v, want damage %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer j2.Close()
			if tt.name == "altered body" || tt.name == "flipped byte in the file" {
				// Reading the altered record at all reports it.
				if _, qerr := j2.Query(Filter{}); qerr == nil || !strings.Contains(qerr.Error(), "damaged") {
					t.Errorf("query over an altered record: %v", qerr)
				}
			}
			_, err = j2.Verify(nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("verify: %v, want %q", err, tt.want)
			}
		})
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	j, path := openTemp(t)
	j.Close()
	raw(t, path).Exec(`UPDATE meta SET value = '99' WHERE key = 'schema_version'`)
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "newer than this fsguard") {
		t.Fatalf("open of a newer schema: %v", err)
	}
}

func TestCovers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spans    [][2]int64
		from, to int64
		want     bool
	}{
		{[][2]int64{{1, 10}}, 1, 10, true},
		{[][2]int64{{1, 5}, {6, 10}}, 1, 10, true},
		{[][2]int64{{6, 10}, {1, 5}}, 1, 10, true},
		{[][2]int64{{1, 5}, {7, 10}}, 1, 10, false},
		{[][2]int64{{1, 5}, {7, 10}}, 7, 9, true},
		{[][2]int64{{1, 5}, {3, 8}}, 2, 8, true},
		{[][2]int64{{2, 10}}, 1, 10, false},
		{[][2]int64{{1, 10}}, 5, 4, false},
		{nil, 1, 3, false},
	}
	for _, tt := range tests {
		var h Held
		for _, s := range tt.spans {
			h.Add(s[0], s[1])
		}
		if got := h.Covers(tt.from, tt.to); got != tt.want {
			t.Errorf("%v covers %d-%d = %v (merged %v)", tt.spans, tt.from, tt.to, got, h.Spans)
		}
	}
	if got := SpansOf(9, func(n int64) bool { return n != 4 && n < 8 }); fmt.Sprint(got) != "[[1 3] [5 7]]" {
		t.Errorf("SpansOf = %v", got)
	}
}

// The crash test re-runs this test binary as writer processes.
func TestMain(m *testing.M) {
	if path := os.Getenv("FSGUARD_TEST_WRITER"); path != "" {
		os.Exit(writer(path))
	}
	if path := os.Getenv("FSGUARD_TEST_HOLDER"); path != "" {
		os.Exit(holder(path))
	}
	os.Exit(m.Run())
}

// writer appends 10,000 records in batches of 50, printing the last
// sequence number of each batch once its commit returned.
func writer(path string) int {
	j, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer j.Close()
	id := os.Getenv("FSGUARD_TEST_WRITER_ID")
	out := bufio.NewWriter(os.Stdout)
	for b := 0; b < 200; b++ {
		batch := make([]*Record, 50)
		for i := range batch {
			batch[i] = &Record{Kind: KindObservation, Origin: OriginRead, Session: "w" + id, Path: fmt.Sprintf("/w%s/%d", id, b*50+i), RealPath: "/r"}
		}
		if err := j.Append(batch...); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for _, r := range batch {
			fmt.Fprintf(out, "%d\n", r.Seq)
		}
		out.Flush()
	}
	return 0
}

// TestConcurrentWritersSurviveKill9: 8 processes append 10,000 records
// each while one is killed with SIGKILL mid-stream. The chain verifies and
// every record any writer reported committed is there.
func TestConcurrentWritersSurviveKill9(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns 8 writer processes")
	}
	path := filepath.Join(t.TempDir(), "j.db")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	var mu sync.Mutex
	reported := map[int64]bool{}
	var wg sync.WaitGroup
	var cmds []*exec.Cmd
	for w := 0; w < 8; w++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "FSGUARD_TEST_WRITER="+path, "FSGUARD_TEST_WRITER_ID="+strconv.Itoa(w))
		stdout, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		victim := w == 3
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(stdout)
			n := 0
			for sc.Scan() {
				seq, _ := strconv.ParseInt(sc.Text(), 10, 64)
				mu.Lock()
				reported[seq] = true
				mu.Unlock()
				if n++; victim && n == 2000 {
					cmd.Process.Signal(syscall.SIGKILL)
				}
			}
			err := cmd.Wait()
			if !victim && err != nil {
				t.Errorf("writer failed: %v: %s", err, stderr.String())
			}
		}()
	}
	wg.Wait()
	if st := cmds[3].ProcessState; st == nil || st.Success() {
		t.Fatal("the victim was not killed mid-stream")
	}
	j, err = Open(path)
	if err != nil {
		t.Fatalf("open after kill -9: %v", err)
	}
	defer j.Close()
	n, err := j.Verify(nil)
	if err != nil {
		t.Fatalf("verify after kill -9: %v", err)
	}
	present := map[int64]bool{}
	recs, _ := j.Query(Filter{})
	for _, r := range recs {
		present[r.Seq] = true
	}
	missing := 0
	for seq := range reported {
		if !present[seq] {
			missing++
		}
	}
	t.Logf("%d records verified, %d reported committed, %d missing", n, len(reported), missing)
	if missing > 0 {
		t.Fatalf("%d committed records are missing", missing)
	}
	if n < 7*10000 {
		t.Fatalf("only %d records: the survivors' 70,000 are not all there", n)
	}
}

// TestMigratesSchema1: a journal written before sessions had owners opens,
// keeps and verifies its records, and its old sessions hold nothing for
// anyone (they had no owner), so no precondition passes on their word.
func TestMigratesSchema1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	r := &Record{Seq: 1, Kind: KindObservation, Session: "s", Path: "/p", RealPath: "/p", ContentID: "c", Origin: OriginRead, Start: 1, End: 1, TotalLines: 1, PrevHash: Genesis}
	body, hash := r.seal()
	for _, q := range []string{
		`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`CREATE TABLE records (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, time_ns INTEGER NOT NULL, session TEXT NOT NULL, path TEXT NOT NULL,
			real_path TEXT NOT NULL, content_id TEXT NOT NULL, origin TEXT NOT NULL, code TEXT NOT NULL, body TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)`,
		`CREATE INDEX records_by_file ON records(session, real_path, seq)`,
		`CREATE INDEX records_by_time ON records(time_ns)`,
		`INSERT INTO meta VALUES ('schema_version', '1'), ('head_seq', '1'), ('head_hash', '` + hash + `')`,
		`INSERT INTO records VALUES (1, 'observation', 0, 's', '/p', '/p', 'c', 'read', '', '` + body + `', '` + Genesis + `', '` + hash + `')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	j, err := Open(path)
	if err != nil {
		t.Fatalf("opening a schema 1 journal: %v", err)
	}
	defer j.Close()
	if n, err := j.Verify(nil); err != nil || n != 1 {
		t.Fatalf("verify after migration: %d records, %v", n, err)
	}
	var v string
	j.db.QueryRow(`SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&v)
	if v != strconv.Itoa(SchemaVersion) {
		t.Errorf("schema_version %s after migration, want %d", v, SchemaVersion)
	}
	if last, err := j.LastObservation(Session{ID: "s", Owner: "uid:0 pidns:1"}, "/p"); err != nil || last != nil {
		t.Errorf("an ownerless old session passed for an owner: %v %v", last, err)
	}
	if err := j.Append(&Record{Kind: KindObservation, Session: "s", Owner: "uid:0 pidns:1", Path: "/p", RealPath: "/p", ContentID: "c", Origin: OriginRead, Start: 1, End: 1, TotalLines: 1}); err != nil {
		t.Fatal(err)
	}
	if h, err := j.Holding(Session{ID: "s", Owner: "uid:0 pidns:1"}, "/p", "c", 1, false); err != nil || !h.Window(1, 1, 1) {
		t.Errorf("a new record of the owner is not held: %v %v", h, err)
	}
	if n, err := j.Verify(nil); err != nil || n != 2 {
		t.Fatalf("verify after an append: %d records, %v", n, err)
	}
}

// TestHoldingFollowsAppends: what a session holds is remembered between
// questions, and every record appended since — by this handle or another
// process's — is folded in; another owner's records never are.
func TestHoldingFollowsAppends(t *testing.T) {
	t.Parallel()
	j, path := openTemp(t)
	other, err := Open(path) // a second writer, as another process would be
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	s := Session{ID: "s", Owner: "uid:1 pidns:1"}
	read := func(j *Journal, owner string, a, b int64) {
		t.Helper()
		if err := j.Append(&Record{Kind: KindObservation, Origin: OriginRead, Session: "s", Owner: owner, RealPath: "/f", ContentID: "c", Start: a, End: b, TotalLines: 100}); err != nil {
			t.Fatal(err)
		}
	}
	holds := func(a, b int64) bool {
		t.Helper()
		h, err := j.Holding(s, "/f", "c", 100, false)
		if err != nil {
			t.Fatal(err)
		}
		return h.Covers(a, b)
	}
	read(j, s.Owner, 1, 10)
	if !holds(1, 10) || holds(1, 20) {
		t.Fatal("after lines 1-10")
	}
	read(j, s.Owner, 11, 20)
	if !holds(1, 20) {
		t.Fatal("a record appended after the last question was not folded in")
	}
	read(other, s.Owner, 21, 30)
	if !holds(1, 30) {
		t.Fatal("another writer's record was not folded in")
	}
	read(other, "uid:2 pidns:1", 31, 40)
	if holds(31, 40) {
		t.Fatal("another owner's record counted")
	}
}

// TestAddAgreesWithASet: spans merged in place hold exactly the lines a
// plain set of line numbers holds, sorted, disjoint and non-adjacent.
func TestAddAgreesWithASet(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		var h Held
		set := map[int64]bool{}
		for range 1 + rng.IntN(12) {
			a := 1 + rng.Int64N(40)
			b := a + rng.Int64N(8)
			h.Add(a, b)
			for n := a; n <= b; n++ {
				set[n] = true
			}
		}
		want := SpansOf(60, func(n int64) bool { return set[n] })
		if fmt.Sprint(h.Spans) != fmt.Sprint(want) {
			t.Fatalf("trial %d: spans %v, want %v", trial, h.Spans, want)
		}
	}
}

// TestVerifyReportsAnIntentWithoutOutcome: a write recorded as intended but
// never as done (killed between the rename and the record) is reported by
// verify, not passed over; its outcome closes it.
func TestVerifyReportsAnIntentWithoutOutcome(t *testing.T) {
	t.Parallel()
	j, _ := openTemp(t)
	intent := &Record{Kind: KindIntent, Session: "s", RealPath: "/srv/a.txt", ContentID: "c"}
	if err := j.Append(intent); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Verify(nil); err == nil || !strings.Contains(err.Error(), "/srv/a.txt") {
		t.Fatalf("verify with an open intent: %v", err)
	}
	if err := j.Append(&Record{Kind: KindObservation, Origin: OriginWrite, Session: "s", RealPath: "/srv/a.txt", ContentID: "c", Intent: intent.Seq}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Verify(nil); err != nil {
		t.Fatalf("verify once the outcome is recorded: %v", err)
	}
}

// TestDamagedIndexIsFound: an index entry altered in place (the table
// intact) makes the index forget a read. The write precondition does not
// take "never read" from it — it says the journal is damaged — and verify
// reports it, instead of "ok".
func TestDamagedIndexIsFound(t *testing.T) {
	t.Parallel()
	j, path := openTemp(t)
	s := Session{ID: "s1", Owner: "uid:7 pidns:7"}
	if err := j.Append(&Record{Kind: KindObservation, Origin: OriginRead, Session: s.ID, Owner: s.Owner, RealPath: "/srv/p/fileQ", ContentID: "c", Start: 1, End: 1, TotalLines: 1}); err != nil {
		t.Fatal(err)
	}
	var root, pageSize int64
	j.db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'records_by_owner_file'`).Scan(&root)
	j.db.QueryRow(`PRAGMA page_size`).Scan(&pageSize)
	j.Close()
	data, err := os.ReadFile(path)
	if err != nil || root == 0 {
		t.Fatalf("read the file: %v (root page %d)", err, root)
	}
	page := data[(root-1)*pageSize : root*pageSize]
	i := bytes.Index(page, []byte("/srv/p/fileQ"))
	if i < 0 {
		t.Fatal("the index entry is not on its root page")
	}
	page[i+len("/srv/p/fileQ")-1] = 'R' // the index now says fileR
	os.WriteFile(path, data, 0o644)
	j2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if _, err := j2.LastObservation(s, "/srv/p/fileQ"); !errors.As(err, new(*DamageError)) {
		t.Errorf("a read the index lost: %v, want the journal reported damaged", err)
	}
	if _, err := j2.Verify(nil); err == nil || !strings.Contains(err.Error(), "integrity") {
		t.Errorf("verify of a damaged index: %v", err)
	}
}

// TestOpenNamesTheCause: what stops a journal opening is said, each in its
// own words, not as SQLite's "unable to open database file".
func TestOpenNamesTheCause(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "adir.db"), 0o755)
	os.WriteFile(filepath.Join(dir, "afile"), []byte("x"), 0o644)
	for path, want := range map[string]string{
		filepath.Join(dir, "adir.db"):       "is a directory",
		filepath.Join(dir, "afile", "j.db"): "is not a directory",
	} {
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s): %v, want %q", path, err, want)
		}
	}
	if os.Geteuid() == 0 {
		return // root may write anywhere: the permission case needs a user
	}
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o555)
	if _, err := Open(filepath.Join(ro, "j.db")); err == nil || !strings.Contains(err.Error(), "may not write") {
		t.Errorf("a read-only directory: %v", err)
	}
}

// TestDeletedDatabaseIsRescued: the journal file deleted under a process
// that holds it: the next append refuses, naming a copy that holds every
// record committed before.
func TestDeletedDatabaseIsRescued(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var told error
	lost := make(chan struct{})
	if err := j.HoldFiles(func(err error) { told = err; close(lost) }); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := j.Append(&Record{Kind: KindDenial, Path: fmt.Sprintf("/x%d", i), Code: "DENIED"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	err = j.Append(&Record{Kind: KindDenial, Path: "/after", Code: "DENIED"})
	var lf *LostFilesError
	if !errors.As(err, &lf) || lf.What != "database" || !strings.HasPrefix(lf.Rescued, path+".rescued-") {
		t.Fatalf("append after the file was deleted: %v", err)
	}
	<-lost
	if told == nil {
		t.Fatal("onLost was not told")
	}
	r, err := Open(lf.Rescued)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, err := r.Verify(nil); err != nil || n != 5 {
		t.Fatalf("the rescued copy: %d records, %v", n, err)
	}
}

// TestReplacedJournalIsNotNew: a journal deleted (or emptied) is reported
// on the next open, from the id remembered beside it, whether or not a
// held-content store is there to say so; removing the id starts anew.
func TestReplacedJournalIsNotNew(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"deleted", "emptied"} {
		path := filepath.Join(t.TempDir(), "j.db")
		j, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		j.Append(&Record{Kind: KindDenial, Path: "/x", Code: "DENIED"})
		j.Close()
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if how == "deleted" || suffix != "" {
				os.Remove(path + suffix)
			} else {
				os.Truncate(path, 0)
			}
		}
		_, err = Open(path)
		var re *ReplacedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "deleted, emptied or replaced") {
			t.Fatalf("%s: open said %v", how, err)
		}
		os.Remove(IDFile(path))
		j, err = Open(path)
		if err != nil {
			t.Fatalf("%s: after removing the id: %v", how, err)
		}
		j.Close()
	}
}

// TestWireHasEveryKey: on the JSON stream every record has every key, in
// one order, whatever its kind; absent values are null (false for flags),
// present ones as in the record.
func TestWireHasEveryKey(t *testing.T) {
	t.Parallel()
	for _, r := range []*Record{
		{Seq: 1, Kind: KindDenial, Path: "/.env", Code: "DENIED", PrevHash: Genesis, Hash: "h"},
		{Seq: 2, Kind: KindObservation, Origin: OriginRead, Path: "/a", WholeFileVisible: true, Start: 1, End: 3, Held: [][2]int64{{1, 3}}},
		{Seq: 3, Kind: KindAccess, Path: "/b", Process: "cat", Opens: 2},
	} {
		b, err := r.Wire()
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if len(m) != len(WireKeys) {
			t.Fatalf("%d keys, want %d: %s", len(m), len(WireKeys), b)
		}
		for _, k := range WireKeys {
			if _, ok := m[k]; !ok {
				t.Fatalf("key %q missing: %s", k, b)
			}
		}
		var back Record
		if err := json.Unmarshal(b, &back); err != nil || back.Path != r.Path || back.Kind != r.Kind || back.Opens != r.Opens || back.WholeFileVisible != r.WholeFileVisible {
			t.Fatalf("round trip: %v %+v", err, back)
		}
		if r.Kind == KindDenial && (m["wholeFileVisible"] != false || m["statId"] != nil || m["code"] != "DENIED") {
			t.Fatalf("a denial's absent keys: %s", b)
		}
	}
}

// TestDanglingReadsOnlyWrites: the intents without an outcome are found
// through the writes' index, on a journal migrated from schema 2 too: an
// intent resolved by an outcome, by a write's or by an edit's observation
// is not dangling, and no other record is read (one altered in place
// does not stop the answer; verify still reports it).
func TestDanglingReadsOnlyWrites(t *testing.T) {
	t.Parallel()
	j, path := openTemp(t)
	// A journal of schema 2: without the writes' index.
	db := raw(t, path)
	for _, q := range []string{`DROP INDEX records_writes`, `UPDATE meta SET value = '2' WHERE key = 'schema_version'`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	j, err := Open(path)
	if err != nil {
		t.Fatalf("opening a schema 2 journal: %v", err)
	}
	defer j.Close()
	appendAll := func(rs ...*Record) {
		for _, r := range rs {
			if err := j.Append(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	intent := func(p string) *Record {
		return &Record{Kind: KindIntent, Session: "s", Path: p, RealPath: p, ContentID: "c"}
	}
	fill(t, j, 3)
	appendAll(intent("/a"), intent("/b"), intent("/c"), intent("/d")) // seq 4..7
	fill(t, j, 3)
	appendAll(
		&Record{Kind: KindOutcome, Intent: 5, Session: "s", Path: "/b", RealPath: "/b", Code: "NOT_WRITTEN"},
		&Record{Kind: KindObservation, Origin: OriginWrite, Intent: 6, Session: "s", Path: "/c", RealPath: "/c", ContentID: "c"},
		&Record{Kind: KindObservation, Origin: OriginEdit, Intent: 7, Session: "s", Path: "/d", RealPath: "/d", ContentID: "c"},
	)
	if _, err := raw(t, path).Exec(`UPDATE records SET body = replace(body, 'flipme', 'flopme') WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	left, err := j.Dangling()
	if err != nil {
		t.Fatalf("Dangling read a record that is not a write's: %v", err)
	}
	if len(left) != 1 || left[0].Seq != 4 || left[0].Path != "/a" {
		t.Fatalf("dangling: %+v, want only the intent of /a (seq 4)", left)
	}
	// The altered record is still found by whoever reads it: verify.
	if _, err := j.Verify(nil); err == nil {
		t.Error("verify passed a journal with a record altered in place")
	}
}

// holder is a long-lived writer, as the daemon is (HoldFiles): four
// goroutines append records one by one, printing each sequence number
// once its append returned, until the process is killed.
func holder(path string) int {
	j, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := j.HoldFiles(nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				r := &Record{Kind: KindObservation, Origin: OriginRead, Session: "h", Path: fmt.Sprintf("/h%d/%d", g, i), RealPath: "/r"}
				if err := j.Append(r); err != nil {
					mu.Lock()
					fmt.Fprintln(out, "stopped") // the files were lost: nothing more is acknowledged
					out.Flush()
					mu.Unlock()
					return
				}
				mu.Lock()
				fmt.Fprintf(out, "%d\n", r.Seq)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	select {}
}

// TestDeletedWALUnderLoadLosesNoAcknowledgedRecord: the WAL of a
// long-lived writer deleted while four goroutines append, and the writer
// killed at once with SIGKILL. Every record it acknowledged is in the
// journal, or verify says that acknowledged records are missing; never
// "intact" with records gone. The next long-lived writer records the gap
// in the chain, so it is not forgotten once the journal grows.
func TestDeletedWALUnderLoadLosesNoAcknowledgedRecord(t *testing.T) {
	t.Parallel()
	for run := range 3 {
		t.Run(strconv.Itoa(run), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "j.db")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "FSGUARD_TEST_HOLDER="+path)
			stdout, _ := cmd.StdoutPipe()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			reported := map[int64]bool{}
			sc := bufio.NewScanner(stdout)
			for len(reported) < 300+run*300 && sc.Scan() {
				seq, _ := strconv.ParseInt(sc.Text(), 10, 64)
				reported[seq] = true
			}
			if err := os.Remove(path + "-wal"); err != nil {
				t.Fatal(err)
			}
			// Some more appends (or all four writers stopped) before the
			// kill, in the later runs.
			for more, stopped := 0, 0; more < run*50 && stopped < 4 && sc.Scan(); more++ {
				if sc.Text() == "stopped" {
					stopped++
					continue
				}
				seq, _ := strconv.ParseInt(sc.Text(), 10, 64)
				reported[seq] = true
			}
			cmd.Process.Signal(syscall.SIGKILL)
			for sc.Scan() {
				if seq, err := strconv.ParseInt(sc.Text(), 10, 64); err == nil {
					reported[seq] = true
				}
			}
			cmd.Wait()
			if len(reported) < 300 {
				t.Fatalf("the writer acknowledged only %d records: %s", len(reported), stderr.String())
			}
			j, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			present := map[int64]bool{}
			recs, _ := j.Query(Filter{})
			for _, r := range recs {
				present[r.Seq] = true
			}
			missing := 0
			for seq := range reported {
				if !present[seq] {
					missing++
				}
			}
			_, verr := j.Verify(nil)
			t.Logf("%d acknowledged, %d missing, verify: %v", len(reported), missing, verr)
			if missing > 0 && (verr == nil || !strings.Contains(verr.Error(), "acknowledged")) {
				t.Fatalf("%d acknowledged records are missing and verify says %v", missing, verr)
			}
			if missing == 0 && verr != nil {
				t.Fatalf("nothing is missing, but verify says %v", verr)
			}
			if err := j.HoldFiles(nil); err != nil {
				t.Fatal(err)
			}
			if (missing > 0) != (j.Lost() != nil) {
				t.Fatalf("the next writer found a gap: %v; %d records are missing", j.Lost(), missing)
			}
			fill(t, j, 3)
			if _, err := j.Verify(nil); (err != nil) != (missing > 0) {
				t.Fatalf("verify once the journal grew past the mark: %v (%d missing)", err, missing)
			}
		})
	}
}
