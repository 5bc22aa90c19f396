package tests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/fsguard/fsguard/internal/store/journal"
	"github.com/fsguard/fsguard/internal/testenv"
)

// TestFleetAuditInPostgres: the fleet's audit in a real central store.
// Debian's PostgreSQL and rsyslog run here; the journal's stream
// (`journal tail --follow --append-to FILE`) goes through rsyslog's imfile
// and ompgsql into a table keyed by (journal identity, seq). The writer,
// the follower and rsyslog are each killed with SIGKILL mid-stream and
// started again, and the journal is started anew (moved aside, a new one
// at its path) twice: while no follower runs, and while one runs with
// --reopen. PostgreSQL then holds every record of the three journals
// exactly once, with its host and journal.
func TestFleetAuditInPostgres(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t, "runs PostgreSQL as its own user")
	pgbin, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(pgbin) == 0 {
		requireTool(t, "initdb", "/usr/lib/postgresql") // skips, or fails in CI, naming it
	}
	bin := pgbin[len(pgbin)-1]
	ompgsql, _ := filepath.Glob("/usr/lib/*/rsyslog/ompgsql.so")
	rsyslogd := requireTool(t, "rsyslogd", append(ompgsql, "/usr/lib/rsyslog-pgsql")[0]) // rsyslog-pgsql's module
	pg, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("no postgres user (the postgresql package makes it): %v", err)
	}
	pgUID, _ := strconv.Atoi(pg.Uid)
	pgGID, _ := strconv.Atoi(pg.Gid)
	asPG := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(pgUID), Gid: uint32(pgGID)}, Pdeathsig: syscall.SIGKILL}

	work := t.TempDir()
	os.Chmod(work, 0o755)
	os.Chmod(filepath.Dir(work), 0o755) // PostgreSQL's user walks to its data
	data, sock := filepath.Join(work, "pgdata"), filepath.Join(work, "pgsock")
	for _, d := range []string{data, sock} {
		os.Mkdir(d, 0o700)
		os.Chown(d, pgUID, pgGID)
	}
	pgRun := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.SysProcAttr, cmd.Dir = asPG, data
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	pgRun("initdb", "-D", data, "-A", "trust", "-U", "fsguard", "-N")
	server := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", sock, "-c", "listen_addresses=", "-F")
	server.SysProcAttr = asPG
	var pglog strings.Builder
	server.Stdout, server.Stderr = &pglog, &pglog
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Signal(syscall.SIGINT); server.Wait() })
	testenv.Within(t, testenv.HangGuard, "PostgreSQL accepting connections", func() error {
		if out, err := exec.Command(filepath.Join(bin, "pg_isready"), "-h", sock, "-U", "fsguard", "-d", "postgres").CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s %s", err, out, pglog.String())
		}
		return nil
	})
	psql := func(db, sql string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(bin, "psql"), "-h", sock, "-U", "fsguard", "-d", db, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql).CombinedOutput()
		if err != nil {
			t.Fatalf("psql %q: %v\n%s", sql, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	psql("postgres", "CREATE DATABASE audit")
	psql("audit", `CREATE TABLE journal (journal text NOT NULL, seq bigint NOT NULL, host text NOT NULL, record jsonb NOT NULL,
		arrived timestamptz NOT NULL DEFAULT clock_timestamp(), PRIMARY KEY (journal, seq))`)

	jpath := filepath.Join(work, "state", "journal.db")
	os.Mkdir(filepath.Dir(jpath), 0o700)
	stream := filepath.Join(work, "log", "journal.jsonl")
	os.Mkdir(filepath.Dir(stream), 0o700)
	rsdir := filepath.Join(work, "rs")
	os.Mkdir(rsdir, 0o700)
	conf := filepath.Join(work, "rsyslog.conf")
	// The table's key takes a record once, however often rsyslog sends
	// it again after a restart (imfile resumes from the offset it last
	// saved, and saves it only when it stops cleanly).
	writeFile(t, conf, fmt.Sprintf(`global(workDirectory=%q maxMessageSize="256k")
module(load="imfile")
module(load="mmjsonparse")
module(load="ompgsql")
template(name="row" type="string" option.stdsql="on"
  string="INSERT INTO journal (journal, seq, host, record) VALUES ('%%$!journal%%', %%$!seq%%, '%%hostname%%', '%%msg%%') ON CONFLICT (journal, seq) DO NOTHING")
ruleset(name="ship") {
  action(type="mmjsonparse" cookie="")
  if $parsesuccess == "OK" then {
    action(type="ompgsql" server=%q db="audit" user="fsguard" template="row" action.resumeRetryCount="-1")
  }
}
input(type="imfile" File=%q Tag="fsguard" ruleset="ship")
`, rsdir, sock, stream), 0o644)
	var rslog strings.Builder
	rsyslog := func() *exec.Cmd {
		cmd := exec.Command(rsyslogd, "-n", "-f", conf, "-i", filepath.Join(work, "rs.pid"))
		cmd.Stdout, cmd.Stderr = &rslog, &rslog
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	follower := func() *exec.Cmd {
		cmd := exec.Command(binary, "journal", "tail", "--follow", "--reopen", "--append-to", stream)
		cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+jpath, "FSGUARD_POLICY=")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	// The writer: a process appending records, as the daemon does.
	written := 0
	write := func(n int) {
		t.Helper()
		j, err := journal.Open(jpath)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		for range n {
			written++
			if err := j.Append(&journal.Record{Kind: journal.KindDenial, Path: fmt.Sprintf("/w%04d", written), Code: "DENIED", Process: "writer"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows := func() int {
		n, _ := strconv.Atoi(psql("audit", "SELECT count(*) FROM journal"))
		return n
	}
	waitRows := func(want int) {
		t.Helper()
		testenv.Within(t, 2*testenv.HangGuard, fmt.Sprintf("%d rows in PostgreSQL", want), func() error {
			if got := rows(); got < want {
				b, _ := os.ReadFile(stream)
				return fmt.Errorf("%d rows; %d bytes streamed; rsyslog said: %s", got, len(b), rslog.String())
			}
			return nil
		})
	}

	write(100)
	rs := rsyslog()
	f := follower()
	waitRows(50)
	write(100)
	f.Process.Kill() // the follower, mid-stream
	f.Wait()
	write(50)
	f = follower()
	waitRows(200)
	rs.Process.Kill() // rsyslog, mid-stream
	rs.Wait()
	write(50)
	rsyslog()
	waitRows(300)
	// Started anew, as docs/operations.md says: every file of the journal
	// moved away together; the next writer makes a new one at the path.
	anew := func(n int) {
		t.Helper()
		old := filepath.Join(work, fmt.Sprintf("old%d", n))
		os.Mkdir(old, 0o700)
		files, _ := filepath.Glob(filepath.Join(filepath.Dir(jpath), "journal.*"))
		for _, f := range files {
			if err := os.Rename(f, filepath.Join(old, filepath.Base(f))); err != nil {
				t.Fatal(err)
			}
		}
		written = 0
	}
	first := psql("audit", "SELECT DISTINCT journal FROM journal")
	// While no follower runs: the one started next resumes from its file,
	// whose last record is the old journal's, at the new one's first.
	f.Process.Kill()
	f.Wait()
	anew(1)
	write(50)
	follower()
	waitRows(350)
	// While the follower runs: --reopen follows the new journal.
	anew(2)
	write(50)
	waitRows(400)

	ctx, cancel := context.WithTimeout(context.Background(), testenv.HangGuard)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "psql"), "-h", sock, "-U", "fsguard", "-d", "audit", "-At", "-F", " ",
		"-c", "SELECT journal, seq, host, record->>'path' FROM journal ORDER BY arrived, journal, seq").Output()
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	perJournal := map[string][]int{}
	var order []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[2] != host {
			t.Fatalf("row %q: want journal, seq, host %s, path", sc.Text(), host)
		}
		seq, _ := strconv.Atoi(f[1])
		if len(perJournal[f[0]]) == 0 {
			order = append(order, f[0])
		}
		perJournal[f[0]] = append(perJournal[f[0]], seq)
		if want := fmt.Sprintf("/w%04d", seq); f[3] != want {
			t.Errorf("record %s/%d has path %s, want %s", f[0], seq, f[3], want)
		}
	}
	if len(order) != 3 || order[0] != first {
		t.Fatalf("journals in PostgreSQL %v, want the first (%s) then the two started anew", order, first)
	}
	for i, want := range []int{300, 50, 50} {
		seqs := perJournal[order[i]]
		if len(seqs) != want {
			t.Errorf("journal %s: %d records, want %d", order[i], len(seqs), want)
		}
		seen := map[int]bool{}
		for _, s := range seqs {
			seen[s] = true
		}
		for s := 1; s <= want; s++ {
			if !seen[s] {
				t.Errorf("journal %s: record %d never arrived", order[i], s)
			}
		}
	}
}
