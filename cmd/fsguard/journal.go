package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"fsguard/journal"
)

func runJournal(args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprint(stderr, `usage: fsguard journal <query|tail|stats|verify|export> [flags]

  query  [--session S] [--path GLOB] [--since T] [--until T] [--kind observation|denial|eviction] [--format table|json]
  tail   [-f] [-n N]          the last records; -f follows new ones
  stats                       reads, writes, edits, diffs, denials by code, bytes delivered and saved
  verify                      walk the hash chain; exit 1 naming the first bad record
  export --jsonl              every record as one JSON object a line

T is RFC 3339 (2026-12-02T15:00:00Z) or a duration ago (90m, 24h).
The journal is $FSGUARD_JOURNAL, else the policy's journal.path, else
~/.local/state/fsguard/journal.db.

examples:
  fsguard journal query --session agent-7 --path '*.go'
  fsguard journal verify
  fsguard journal export --jsonl | gzip > journal.jsonl.gz
`)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage()
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("journal "+sub, flag.ContinueOnError)
	fs.Usage = usage
	policyFile := fs.String("policy", "", "policy file (for journal.path)")
	session := fs.String("session", "", "only this session")
	pathGlob := fs.String("path", "", "only paths matching this glob")
	since := fs.String("since", "", "only records at or after T")
	until := fs.String("until", "", "only records before T")
	kind := fs.String("kind", "", "observation, denial or eviction")
	format := fs.String("format", "table", "table or json")
	follow := fs.Bool("f", false, "follow (tail)")
	count := fs.Int("n", 20, "records to show (tail)")
	jsonl := fs.Bool("jsonl", false, "JSON lines (export)")
	if _, code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	pol, ok := policyFor(*policyFile, stderr)
	if !ok {
		return exitUsage
	}
	path := journal.Locate(pol.Journal.Path)
	if onTerminal(stderr) {
		fmt.Fprintf(stderr, "# journal %s\n", path) // which file: there may be several
	}
	j, err := journal.Open(path)
	if err != nil {
		return fail(stderr, err)
	}
	defer j.Close()
	f := journal.Filter{Session: *session, PathGlob: *pathGlob, Kind: *kind}
	for _, t := range []struct {
		s   string
		dst *time.Time
	}{{*since, &f.Since}, {*until, &f.Until}} {
		if t.s == "" {
			continue
		}
		if *t.dst, err = parseTime(t.s); err != nil {
			fmt.Fprintf(stderr, "Error: %v\n", err)
			return exitUsage
		}
	}
	switch sub {
	case "query":
		recs, err := j.Query(f)
		if err != nil {
			return fail(stderr, err)
		}
		printRecords(stdout, recs, *format)
	case "tail":
		last, err := j.LastSeq()
		if err != nil {
			return fail(stderr, err)
		}
		f.AfterSeq = max(0, last-int64(*count))
		for {
			recs, err := j.Query(f)
			if err != nil {
				return fail(stderr, err)
			}
			printRecords(stdout, recs, "lines")
			if len(recs) > 0 {
				f.AfterSeq = recs[len(recs)-1].Seq
			}
			if !*follow {
				return 0
			}
			if waitOrInterrupt(250 * time.Millisecond) {
				return 0
			}
		}
	case "stats":
		st, err := j.Stats()
		if err != nil {
			return fail(stderr, err)
		}
		if *format == "json" {
			b, _ := json.MarshalIndent(st, "", "  ")
			fmt.Fprintf(stdout, "%s\n", b)
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "journal\t%s\n", path)
		fmt.Fprintf(tw, "records\t%d\nsessions\t%d\nreads\t%d\nwrites\t%d\nedits\t%d\nledger notices\t%d\ndiffs\t%d\nheld content evicted\t%d\ndenials\t%d\n",
			st.Records, st.Sessions, st.Reads, st.Writes, st.Edits, st.LedgerNotices, st.Diffs, st.Evictions, st.Denials)
		for code, n := range st.DenialsByCode {
			fmt.Fprintf(tw, "  %s\t%d\n", code, n)
		}
		fmt.Fprintf(tw, "bytes delivered\t%d\nbytes saved by the ledger and diffs\t%d\n", st.BytesDelivered, st.BytesSaved)
		tw.Flush()
	case "verify":
		start := time.Now()
		n, err := j.Verify(func(done, total int64) {
			if total >= 100_000 && onTerminal(stderr) {
				const width = 40
				k := int(done * width / total)
				fmt.Fprintf(stderr, "\rverifying [%s%s] %d/%d", strings.Repeat("#", k), strings.Repeat(".", width-k), done, total)
				if done == total {
					fmt.Fprintln(stderr)
				}
			}
		})
		if err != nil {
			return fail(stderr, fmt.Errorf("journal verify failed at %v (after %d good records)", err, n))
		}
		fmt.Fprintf(stdout, "ok: %s: %d records, chain intact (%.0f ms)\n", path, n, float64(time.Since(start).Microseconds())/1000)
	case "export":
		if !*jsonl {
			fmt.Fprintln(stderr, "Error: export needs --jsonl (the only export format)")
			return exitUsage
		}
		recs, err := j.Query(f)
		if err != nil {
			return fail(stderr, err)
		}
		printRecords(stdout, recs, "jsonl")
	default:
		fmt.Fprintf(stderr, "Error: unknown journal command %q\n", sub)
		usage()
		return exitUsage
	}
	return 0
}

func parseTime(s string) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, fmt.Errorf("time %q is neither RFC 3339 nor a duration like 90m", s)
	}
	return t, nil
}

func waitOrInterrupt(d time.Duration) bool {
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	defer signal.Stop(c)
	select {
	case <-c:
		return true
	case <-time.After(d):
		return false
	}
}

// exported is a record with its chain fields, for JSON output.
type exported struct {
	*journal.Record
	PrevHash string `json:"prevHash"`
	Hash     string `json:"hash"`
}

func printRecords(w io.Writer, recs []*journal.Record, format string) {
	switch format {
	case "json":
		out := make([]exported, len(recs))
		for i, r := range recs {
			out[i] = exported{r, r.PrevHash, r.Hash}
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(w, "%s\n", b)
	case "jsonl":
		for _, r := range recs {
			b, _ := json.Marshal(exported{r, r.PrevHash, r.Hash})
			fmt.Fprintf(w, "%s\n", b)
		}
	default:
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		if format == "table" {
			fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tSESSION\tPATH\tDETAIL")
		}
		for _, r := range recs {
			detail := r.Code
			switch r.Kind {
			case journal.KindEviction:
				detail = "held content " + r.ContentID[:min(12, len(r.ContentID))] + " evicted: the next changed re-read gets lines"
			case journal.KindObservation:
				detail = fmt.Sprintf("%s lines %d-%d of %d", r.Origin, r.Start, r.End, r.TotalLines)
				if r.WholeFileVisible {
					detail += " (whole file)"
				}
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Format(time.RFC3339), r.Kind, r.Session, r.Path, detail)
		}
		tw.Flush()
	}
}
