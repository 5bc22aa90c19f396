package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/door/control"
	"github.com/fsguard/fsguard/internal/service/api"
)

// scrape reads /metrics from the daemon's control socket, on a connection
// of its own that it closes: a connection left open counts against the
// uid's share of the socket's connections until the daemon drops it.
func scrape(t *testing.T, sock string) string {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err := c.Get("http://fsguard/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// counters are the samples of a scrape's counters (and histogram counts
// and sums, which only rise too), by series.
func counters(text string) map[string]float64 {
	kinds := map[string]string{}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		ln := sc.Text()
		if f := strings.Fields(ln); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			kinds[f[2]] = f[3]
			continue
		}
		if ln == "" || ln[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(ln, ' ')
		series, val := ln[:i], ln[i+1:]
		name, _, _ := strings.Cut(series, "{")
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
		if kinds[name] == "counter" || kinds[base] == "histogram" {
			v, _ := strconv.ParseFloat(val, 64)
			out[series] = v
		}
	}
	return out
}

// TestMetricsRiseAndPassPromtool: over 1,000 reads through the socket,
// tiny and empty files among them (whose ledger notice would be longer
// than their lines), denials and refusals mixed in, no counter ever goes
// down, and the exposition passes promtool's check.
func TestMetricsRiseAndPassPromtool(t *testing.T) {
	t.Parallel()
	e := newPrivEnv(t, "")
	for i := range 20 {
		writeFile(t, filepath.Join(e.root, "tiny", fmt.Sprintf("t%02d.txt", i)), strings.Repeat("x", i%3), 0o644)
	}
	writeFile(t, filepath.Join(e.root, ".env"), "K=1\n", 0o644)
	names := []string{"rootfile.txt", ".env", "missing.txt", "agent/repo/.git/config"}
	for i := range 20 {
		names = append(names, fmt.Sprintf("tiny/t%02d.txt", i))
	}
	last := counters(scrape(t, e.sock))
	for i := range 1000 {
		control.Call(e.sock, api.Request{Op: "read", Path: names[i%len(names)], Cwd: e.mp, Session: fmt.Sprintf("s%d", i%3)}, nil)
		if i%100 != 99 {
			continue
		}
		now := counters(scrape(t, e.sock))
		for series, v := range last {
			if now[series] < v {
				t.Fatalf("after %d reads %s went down: %v -> %v", i+1, series, v, now[series])
			}
		}
		last = now
	}
	if last[`fsguard_reads_total{origin="read"}`] == 0 || last[`fsguard_denials_total{source="socket",code="DENIED"}`] == 0 {
		t.Fatalf("reads or denials not counted: %v", last)
	}
	// What the held-content store holds is a gauge: the files read are in it.
	if !regexp.MustCompile(`(?m)^fsguard_held_content_bytes [1-9][0-9]*$`).MatchString(scrape(t, e.sock)) {
		t.Fatalf("no held-content size:\n%s", scrape(t, e.sock))
	}
	cmd := exec.Command(requireTool(t, "promtool"), "check", "metrics")
	cmd.Stdin = strings.NewReader(scrape(t, e.sock))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
