package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"github.com/fsguard/fsguard/internal/store/blobs"
	"github.com/fsguard/fsguard/internal/store/journal"
)

const journalUsage = `usage: fsguard journal <query|tail|stats|verify|export> [flags]

  query  [--session S] [--path GLOB] [--since T] [--until T] [--kind KIND] [--process NAME] [--format table|json]
                              KIND: observation, denial, access, eviction, intent, outcome, history
  tail   [-f [--reopen]] [-n N] [--after SEQ] [--jsonl] [--append-to FILE]
                              the last records; -f (--follow) follows new ones, and exits 5 when
                              another journal, or none, is at the path (started anew); with
                              --reopen it follows the new one, saying so in its stream; --after SEQ
                              starts after record SEQ (a shipper's cursor: the last seq it took);
                              --append-to FILE appends JSON lines to FILE, resuming after its
                              last record (killed and restarted, each record lands once)
  stats                       reads, writes, edits, diffs, denials by code, bytes delivered and saved,
                              and per process what it opened through the mount
  verify                      walk the hash chain; exit 1 naming the first bad record
  export --jsonl              every record as one JSON object a line

T is RFC 3339 (2026-12-02T15:00:00Z) or a duration ago (90m, 24h).
The journal is $FSGUARD_JOURNAL, else the policy's journal.path, else
/var/lib/fsguard/journal.db for root (the service's) and
~/.local/state/fsguard/journal.db for anyone else.

An access record says that a process opened a file through the mount;
it is not an observation (no model was shown anything by it), and no
write precondition counts it.

examples:
  fsguard journal query --session agent-7 --path '*.go'
  fsguard journal query --kind access --process python3
  fsguard journal verify
  fsguard journal export --jsonl | gzip > journal.jsonl.gz
`

// journalSub is a journal subcommand: the flags it takes (another's is a
// usage error, not silently ignored) and what it does with the open
// journal.
type journalSub struct {
	takes string
	run   func(c *journalCmd) int
}

var journalSubs = map[string]journalSub{
	"query":  {"policy session path since until kind process after format", (*journalCmd).query},
	"tail":   {"policy session path since until kind process after append-to format f follow reopen n jsonl", (*journalCmd).tail},
	"stats":  {"policy format", (*journalCmd).stats},
	"verify": {"policy format", (*journalCmd).verify},
	"export": {"policy session path since until kind process after jsonl", (*journalCmd).export},
}

// journalCmd is one journal subcommand's flags (all subcommands share one
// set; each takes some of them) and the journal it opened.
type journalCmd struct {
	fs                                                         *flag.FlagSet
	policyFile, session, pathGlob, since, until, kind, process *string
	format, appendTo                                           *string
	follow, jsonl, reopen                                      *bool
	after                                                      *int64
	count                                                      *int
	stdout, stderr                                             io.Writer
	path                                                       string
	j                                                          *journal.Journal
}

func runJournal(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, journalUsage)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	c, code := openJournal(args[0], args[1:], stdout, stderr)
	if c == nil {
		return code
	}
	defer func() { c.j.Close() }() // tail --reopen replaces it
	return journalSubs[args[0]].run(c)
}

// openJournal parses a subcommand's flags, refuses an unknown subcommand
// and another's flags, and opens the policy's journal.
func openJournal(sub string, args []string, stdout, stderr io.Writer) (*journalCmd, int) {
	fs := flag.NewFlagSet("journal "+sub, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(stderr, journalUsage) }
	c := &journalCmd{fs: fs, stdout: stdout, stderr: stderr}
	c.policyFile = fs.String("policy", "", "policy file (for journal.path)")
	c.session = fs.String("session", "", "only this session")
	c.pathGlob = fs.String("path", "", "only paths matching this glob")
	c.since = fs.String("since", "", "only records at or after T")
	c.until = fs.String("until", "", "only records before T")
	c.kind = fs.String("kind", "", "observation, listing, denial, access, eviction, intent, outcome, history or mask")
	c.process = fs.String("process", "", "only records of processes of this name (access, denial)")
	c.format = fs.String("format", "table", "table or json")
	c.follow = fs.Bool("f", false, "follow (tail)")
	c.reopen = fs.Bool("reopen", false, "tail --follow: when another journal is at the path (started anew), follow it, saying so in the stream")
	fs.BoolVar(c.follow, "follow", false, "follow (tail)")
	c.after = fs.Int64("after", 0, "only records after this sequence number (a cursor)")
	c.appendTo = fs.String("append-to", "", "tail: append JSON lines to this file, resuming after its last record (the file is the cursor)")
	c.count = fs.Int("n", 20, "records to show (tail)")
	c.jsonl = fs.Bool("jsonl", false, "JSON lines (export)")
	if _, code, ok := parse(fs, args, stderr); !ok {
		return nil, code
	}
	s, known := journalSubs[sub]
	if !known {
		fmt.Fprintf(stderr, "Error: unknown journal command %q\n", sub)
		fs.Usage()
		return nil, exitUsage
	}
	var foreign string
	fs.Visit(func(fl *flag.Flag) {
		if !slices.Contains(strings.Fields(s.takes), fl.Name) && foreign == "" {
			foreign = fl.Name
		}
	})
	if foreign != "" {
		fmt.Fprintf(stderr, "Error: journal %s does not take -%s (it takes: -%s)\n", sub, foreign, strings.ReplaceAll(s.takes, " ", ", -"))
		return nil, exitUsage
	}
	pol, ok := policyFor(*c.policyFile, stderr)
	if !ok {
		return nil, exitUsage
	}
	c.path = journal.Locate(pol.Journal.Path)
	if onTerminal(stderr) {
		fmt.Fprintf(stderr, "# journal %s\n", c.path) // which file: there may be several
	}
	// Every journal command only reads: it never makes a journal where
	// there is none, and reads a read-only copy.
	j, err := journal.OpenReadOnly(c.path)
	if err != nil {
		return nil, fail(stderr, err)
	}
	c.j = j
	return c, 0
}

// filter is the records the flags select; false after a usage error.
func (c *journalCmd) filter() (journal.Filter, bool) {
	f := journal.Filter{Session: *c.session, Kind: *c.kind, Process: *c.process, AfterSeq: *c.after}
	if *c.pathGlob != "" {
		// The policy's globs: "*" within a segment, "**" across them; a
		// pattern not starting with "/" matches at any depth ("*.go").
		pat := *c.pathGlob
		if !strings.HasPrefix(pat, "/") {
			pat = "**/" + pat
		}
		g, err := policy.CompileGlob(pat)
		if err != nil {
			fmt.Fprintf(c.stderr, "Error: --path: %v\n", err)
			return f, false
		}
		f.PathMatch = func(p string) bool { return g.MatchSplit(strings.Split(strings.Trim(p, "/"), "/")) }
	}
	for _, t := range []struct {
		s   string
		dst *time.Time
	}{{*c.since, &f.Since}, {*c.until, &f.Until}} {
		if t.s == "" {
			continue
		}
		var err error
		if *t.dst, err = parseTime(t.s); err != nil {
			fmt.Fprintf(c.stderr, "Error: %v\n", err)
			return f, false
		}
	}
	return f, true
}

func (c *journalCmd) query() int  { return c.stream(*c.format) }
func (c *journalCmd) export() int { return c.stream("export") }

// stream writes the records the flags select in format; "export" is JSON
// lines, which export asks to be named (--jsonl).
func (c *journalCmd) stream(format string) int {
	f, ok := c.filter()
	if !ok {
		return exitUsage
	}
	if format == "export" {
		if !*c.jsonl {
			fmt.Fprintln(c.stderr, "Error: export needs --jsonl (the only export format)")
			return exitUsage
		}
		format = "jsonl"
	}
	if err := streamRecords(c.stdout, c.j, f, format); err != nil {
		return fail(c.stderr, err)
	}
	return 0
}

func (c *journalCmd) tail() int {
	f, ok := c.filter()
	if !ok {
		return exitUsage
	}
	last, err := c.j.LastSeq()
	if err != nil {
		return fail(c.stderr, err)
	}
	if !given(c.fs, "after") { // --after 0 is a cursor too: from the first record
		f.AfterSeq = max(0, last-int64(*c.count))
	}
	tailFormat := "lines"
	if *c.jsonl || *c.format == "json" {
		tailFormat = "jsonl" // a stream of objects, one per line
	}
	out := c.stdout
	if *c.appendTo != "" {
		if given(c.fs, "after") {
			fmt.Fprintln(c.stderr, "Error: --append-to resumes after the file's last record; it takes no --after")
			return exitUsage
		}
		file, last, err := appendTarget(*c.appendTo)
		if err != nil {
			return fail(c.stderr, err)
		}
		defer file.Close()
		out, f.AfterSeq, tailFormat = file, last.after(c.j.ID()), "jsonl"
	}
	if *c.reopen && !*c.follow {
		fmt.Fprintln(c.stderr, "Error: --reopen follows a new journal at the path: it needs --follow")
		return exitUsage
	}
	was := c.identity()
	for {
		// Looked at before the read: the records read after it are the
		// followed journal's last ones (this process still has its file).
		why := ""
		if *c.follow {
			why = c.moved(was)
		}
		p := newPrinter(out, tailFormat)
		err := c.j.Each(f, func(r *journal.Record) error {
			f.AfterSeq = r.Seq
			return p.record(r)
		})
		p.end()
		if err != nil {
			return fail(c.stderr, err)
		}
		if outputFailed(out) {
			return exitFail // main says why
		}
		if why != "" {
			if !*c.reopen {
				fmt.Fprintf(c.stderr, "Error: journal %s is no longer the journal this follower followed (journal %s): %s — it was moved aside or started anew. Its records up to %d were shown; follow the new one with 'fsguard journal tail --follow --after 0', or use --reopen\n",
					shown(c.path), shown(was.id), why, f.AfterSeq)
				return exitJournalMoved
			}
			if !c.reopenJournal() {
				return 0 // interrupted while waiting for one
			}
			now := c.identity()
			fmt.Fprintln(c.stderr, "# journal "+shown(c.path)+" started anew: following journal "+shown(now.id)+" from its first record")
			if *c.appendTo != "" {
				// The file holds records only (it is its own cursor); each
				// names its journal, so the new one's are told apart.
			} else if tailFormat == "jsonl" {
				b, _ := json.Marshal(map[string]string{"reopened": c.path, "journal": now.id, "was": was.id})
				fmt.Fprintf(out, "%s\n", termsafe.JSON(b))
			} else {
				fmt.Fprintf(out, "# journal %s started anew: journal %s follows journal %s; its records from the first\n", shown(c.path), shown(now.id), shown(was.id))
			}
			was, f.AfterSeq = now, 0
			continue
		}
		if !*c.follow || waitOrInterrupt(250*time.Millisecond) {
			return 0
		}
	}
}

// followed is the journal a follower follows: its id and its file.
type followed struct {
	id       string
	dev, ino uint64
}

func (c *journalCmd) identity() followed {
	var st unix.Stat_t
	unix.Stat(c.path, &st)
	return followed{id: c.j.ID(), dev: st.Dev, ino: st.Ino}
}

// moved says why the journal at c.path is no longer the one followed (was),
// or "". The file is looked at by its path, the id through the open
// journal: a connection SQLite opens anew opens the path.
func (c *journalCmd) moved(was followed) string {
	var st unix.Stat_t
	err := unix.Stat(c.path, &st)
	switch {
	case errors.Is(err, unix.ENOENT):
		return "there is no journal at its path now"
	case err != nil:
		return "" // cannot tell: a later look will
	case st.Dev != was.dev || st.Ino != was.ino:
		return "another file is at its path now"
	}
	if id := c.j.ID(); id != was.id {
		return "another journal (" + shown(id) + ") is at its path now"
	}
	return ""
}

// reopenJournal waits for a journal at c.path and opens it in place of the
// one followed; false when interrupted first.
func (c *journalCmd) reopenJournal() bool {
	for {
		j, err := journal.OpenReadOnly(c.path)
		if err == nil {
			c.j.Close()
			c.j = j
			return true
		}
		if waitOrInterrupt(250 * time.Millisecond) {
			return false
		}
	}
}

func (c *journalCmd) stats() int {
	st, err := c.j.Stats()
	if err != nil {
		return fail(c.stderr, err)
	}
	if *c.format == "json" {
		b, _ := json.MarshalIndent(st, "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", termsafe.JSON(b))
		return 0
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "journal\t%s\n", shown(c.path))
	fmt.Fprintf(tw, "records\t%d\nsessions\t%d\nreads\t%d\nwrites\t%d\nedits\t%d\nledger notices\t%d\ndiffs\t%d\nheld content evicted\t%d\ndenials\t%d\n",
		st.Records, st.Sessions, st.Reads, st.Writes, st.Edits, st.LedgerNotices, st.Diffs, st.Evictions, st.Denials)
	for _, code := range slices.Sorted(maps.Keys(st.DenialsByCode)) {
		fmt.Fprintf(tw, "  %s\t%d\n", shown(code), st.DenialsByCode[code])
	}
	fmt.Fprintf(tw, "bytes delivered\t%d\nbytes saved by the ledger and diffs\t%d\n", st.BytesDelivered, st.BytesSaved)
	tw.Flush()
	if len(st.Accesses) > 0 || st.AccessLost > 0 {
		c.accessStats(st)
	}
	return 0
}

// accessStats prints, per process, what it opened through the mount.
func (c *journalCmd) accessStats(st *journal.Stats) {
	fmt.Fprintln(c.stdout, "\nopened through the mount (access records: opens, not what a model saw):")
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROCESS\tPIDS\tFILES\tVERSIONS\tOPENS")
	for _, name := range slices.Sorted(maps.Keys(st.Accesses)) {
		a := st.Accesses[name]
		if name == "" {
			name = "(exited before named)"
		} else {
			name = shown(name) // a process names itself
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", name, a.Pids, a.Files, a.Versions, a.Opens)
	}
	tw.Flush()
	if st.AccessLost > 0 {
		fmt.Fprintf(c.stdout, "%d records say opens were lost (query --kind access shows ACCESS_LOST)\n", st.AccessLost)
	}
}

func (c *journalCmd) verify() int {
	format := "text"
	if *c.format == "json" {
		format = "json"
	}
	// A journal deleted, emptied or replaced is not a new, empty one.
	if err := blobs.CheckBeside(c.path, c.j.ID()); err != nil {
		return answer(c.stdout, c.stderr, format, "", map[string]any{"journal": c.path}, err)
	}
	start := time.Now()
	n, err := c.j.Verify(func(done, total int64) {
		if total >= 100_000 && onTerminal(c.stderr) {
			const width = 40
			k := int(done * width / total)
			fmt.Fprintf(c.stderr, "\rverifying [%s%s] %d/%d", strings.Repeat("#", k), strings.Repeat(".", width-k), done, total)
			if done == total {
				fmt.Fprintln(c.stderr)
			}
		}
	})
	if err != nil {
		err = fmt.Errorf("journal verify failed at %v (after %d good records)", err, n)
	}
	ms := float64(time.Since(start).Microseconds()) / 1000
	return answer(c.stdout, c.stderr, format, fmt.Sprintf("ok: %s: %d records, chain intact (%.0f ms)", c.path, n, ms),
		map[string]any{"journal": c.path, "records": n, "ms": ms}, err)
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

// streamRecords writes the records matching f as they are read.
func streamRecords(w io.Writer, j *journal.Journal, f journal.Filter, format string) error {
	p := newPrinter(w, format)
	err := j.Each(f, p.record)
	p.end()
	return err
}

// printer writes records one at a time: "json" (one array, written as it
// goes), "jsonl", "table" (with a header) or "lines". Nothing is held but
// the table's last few rows, aligned a block at a time.
type printer struct {
	w      io.Writer
	format string
	tw     *tabwriter.Writer
	n      int
}

func newPrinter(w io.Writer, format string) *printer {
	p := &printer{w: w, format: format}
	if format != "json" && format != "jsonl" {
		p.tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		if format == "table" {
			fmt.Fprintln(p.tw, "SEQ\tTIME\tKIND\tSESSION\tPATH\tDETAIL")
		}
	}
	return p
}

func (p *printer) record(r *journal.Record) error {
	defer func() { p.n++ }()
	switch p.format {
	case "json":
		raw, err := r.Wire()
		if err != nil {
			return err
		}
		var b bytes.Buffer
		json.Indent(&b, termsafe.JSON(raw), "  ", "  ")
		sep := ",\n  "
		if p.n == 0 {
			sep = "[\n  "
		}
		_, err = fmt.Fprintf(p.w, "%s%s", sep, b.Bytes())
		return err
	case "jsonl":
		b, err := r.Wire()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.w, "%s\n", termsafe.JSON(b))
		return err
	}
	detail := r.Code
	switch r.Kind {
	case journal.KindEviction:
		detail = "held content " + r.ContentID[:min(12, len(r.ContentID))] + " evicted: the next changed re-read gets lines"
	case journal.KindAccess:
		if r.Code == "" {
			who := r.Process
			if who == "" {
				who = "?"
			}
			detail = fmt.Sprintf("opened by %s (pid %d, uid %d) %d×", who, r.Pid, r.Uid, r.Opens)
		} else {
			detail = r.Code + ": " + r.Detail
		}
	case journal.KindListing:
		detail = fmt.Sprintf("%s entries %d-%d of %d", r.Origin, r.Start, r.End, r.TotalLines)
	case journal.KindObservation:
		detail = fmt.Sprintf("%s lines %d-%d of %d", r.Origin, r.Start, r.End, r.TotalLines)
		if r.WholeFileVisible {
			detail += " (whole file)"
		}
	case journal.KindDenial:
		if r.Count > 1 {
			detail = fmt.Sprintf("%s %d× by %s (pid %d)", r.Code, r.Count, r.Process, r.Pid)
		}
		if r.Detail != "" {
			detail += ": " + r.Detail
		}
	}
	// Paths, sessions and process names come from whoever made them (a
	// process sets its own name): a control character is shown quoted,
	// never sent raw to the operator's terminal.
	fmt.Fprintf(p.tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Format(time.RFC3339), r.Kind, shown(r.Session), shown(r.Path), shown(detail))
	if p.n%1024 == 1023 {
		return p.tw.Flush() // aligned a block at a time
	}
	return nil
}

func (p *printer) end() {
	switch {
	case p.format == "json" && p.n == 0:
		fmt.Fprintln(p.w, "[]")
	case p.format == "json":
		fmt.Fprintln(p.w, "\n]")
	case p.tw != nil:
		p.tw.Flush()
	}
}

// given reports whether the flag was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// shown is s as it may go to a terminal (termsafe.Quote): quoted when it
// holds a control character (an escape sequence, a tab that would break
// the table's columns, a newline that would forge a row), a bidi override
// or anything else a terminal acts on rather than shows.
func shown(s string) string { return termsafe.Quote(s) }
