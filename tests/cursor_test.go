package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/store/journal"
)

// TestTailCursorResumesExactlyOnce: a shipper following the journal is
// killed mid-stream and restarted with --after the last sequence number
// it took; across both runs every record arrives exactly once, in order.
func TestTailCursorResumesExactlyOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	add := func(from, to int) {
		for i := from; i < to; i++ {
			if err := j.Append(&journal.Record{Kind: journal.KindDenial, Path: fmt.Sprintf("/r%03d", i), Code: "DENIED"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(0, 30)
	follow := func(after int64) (*exec.Cmd, *bufio.Scanner) {
		cmd := exec.Command(binary, "journal", "tail", "--follow", "--jsonl", "--after", fmt.Sprint(after))
		cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+path, "FSGUARD_POLICY=")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, bufio.NewScanner(out)
	}
	var got []int64
	take := func(sc *bufio.Scanner, n int) {
		t.Helper()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for len(got) < n && sc.Scan() {
				var r struct{ Seq int64 }
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Errorf("line %q: %v", sc.Text(), err)
					return
				}
				got = append(got, r.Seq)
			}
		}()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("the follower gave %d of %d records", len(got), n)
		}
	}
	cmd, sc := follow(0)
	take(sc, 20)
	cmd.Process.Kill() // mid-stream, as a crashed shipper
	cmd.Wait()
	add(30, 50) // records written while no one follows
	cmd, sc = follow(got[len(got)-1])
	add(50, 60) // and while the new follower runs
	take(sc, 60)
	cmd.Process.Kill()
	for i, seq := range got {
		if seq != int64(i+1) {
			t.Fatalf("record %d arrived as seq %d: %v", i+1, seq, got)
		}
	}
}
