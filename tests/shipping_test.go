package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/store/journal"
	"github.com/fsguard/fsguard/internal/testenv"
)

// TestRsyslogShipsEveryRecordOnce: the fleet pattern with a real log
// agent. A follower (`journal tail --follow --append-to FILE`) writes the
// journal's stream to a file, rsyslog's imfile reads the file and its
// omfile writes what it shipped. The follower is killed with SIGKILL in
// the middle of the stream and started again while records keep coming;
// every record arrives at the far end exactly once, in order.
func TestRsyslogShipsEveryRecordOnce(t *testing.T) {
	t.Parallel()
	rsyslogd := requireTool(t, "rsyslogd")
	work := t.TempDir()
	jpath := filepath.Join(work, "j.db")
	j, err := journal.Open(jpath)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	n := 0
	add := func(k int) {
		for range k {
			n++
			if err := j.Append(&journal.Record{Kind: journal.KindDenial, Path: fmt.Sprintf("/r%04d", n), Code: "DENIED"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	stream, shipped := filepath.Join(work, "stream.jsonl"), filepath.Join(work, "shipped.jsonl")
	conf := filepath.Join(work, "rsyslog.conf")
	os.Mkdir(filepath.Join(work, "rs"), 0o700)
	writeFile(t, conf, fmt.Sprintf(`global(workDirectory=%q maxMessageSize="64k")
module(load="imfile")
template(name="line" type="string" string="%%msg%%\n")
ruleset(name="ship") { action(type="omfile" file=%q template="line") }
input(type="imfile" File=%q Tag="fsguard" ruleset="ship")
`, filepath.Join(work, "rs"), shipped, stream), 0o644)
	rs := exec.Command(rsyslogd, "-n", "-f", conf, "-i", filepath.Join(work, "rs.pid"))
	var rslog strings.Builder
	rs.Stdout, rs.Stderr = &rslog, &rslog
	if err := rs.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { rs.Process.Kill(); rs.Wait() }()

	follow := func() *exec.Cmd {
		cmd := exec.Command(binary, "journal", "tail", "--follow", "--append-to", stream)
		cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+jpath, "FSGUARD_POLICY=")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	lines := func(path string) []string {
		b, _ := os.ReadFile(path)
		var out []string
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			out = append(out, sc.Text())
		}
		return out
	}
	add(100)
	f := follow()
	testenv.Within(t, 60*time.Second, "the first records shipped", func() error {
		if got := len(lines(shipped)); got < 30 {
			return fmt.Errorf("%d shipped (rsyslog: %s)", got, rslog.String())
		}
		return nil
	})

	add(100)         // while the follower runs
	f.Process.Kill() // mid-stream, SIGKILL
	f.Wait()
	add(100) // while nothing follows
	follow() // resumes after the file's last record
	add(100) // while the new follower runs
	testenv.Within(t, 60*time.Second, "all 400 records shipped", func() error {
		if got := len(lines(shipped)); got < 400 {
			return fmt.Errorf("%d of 400 shipped", got)
		}
		return nil
	})

	got := lines(shipped)
	if len(got) != 400 {
		t.Fatalf("%d records shipped for 400", len(got))
	}
	for i, ln := range got {
		var r struct {
			Seq  int64
			Path string
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(ln)), &r); err != nil || r.Seq != int64(i+1) {
			t.Fatalf("shipped line %d: seq %d (%v): %q", i+1, r.Seq, err, ln)
		}
	}
}

// TestAppendToCutsATornLine: a follower killed in the middle of writing a
// line leaves half a record; the next one cuts it off and resumes after
// the last whole record, so the file holds each record once.
func TestAppendToCutsATornLine(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	jpath := filepath.Join(work, "j.db")
	j, err := journal.Open(jpath)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		j.Append(&journal.Record{Kind: journal.KindDenial, Path: fmt.Sprintf("/r%d", i), Code: "DENIED"})
	}
	j.Close()
	stream := filepath.Join(work, "stream.jsonl")
	env := []string{"FSGUARD_JOURNAL=" + jpath, "FSGUARD_POLICY="}
	if _, errs, code, _ := runBinary(t, work, env, "", "journal", "tail", "--append-to", stream); code != 0 {
		t.Fatal(errs)
	}
	b, _ := os.ReadFile(stream)
	os.WriteFile(stream, append(b, `{"seq":6,"kind":"den`...), 0o640) // a torn last line
	if _, errs, code, _ := runBinary(t, work, env, "", "journal", "tail", "--append-to", stream); code != 0 {
		t.Fatal(errs)
	}
	b, _ = os.ReadFile(stream)
	var seqs []int64
	for _, ln := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var r struct{ Seq int64 }
		if err := json.Unmarshal([]byte(ln), &r); err != nil {
			t.Fatalf("line %q: %v", ln, err)
		}
		seqs = append(seqs, r.Seq)
	}
	if fmt.Sprint(seqs) != "[1 2 3 4 5]" {
		t.Fatalf("records in the file: %v", seqs)
	}
}
