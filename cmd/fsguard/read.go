package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"fsguard/agent"
	"fsguard/read"
	"fsguard/refusal"
)

func runRead(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("read", flag.ContinueOnError)
	offset := fs.String("offset", "1", "first line to show (1-based)")
	limit := fs.String("limit", "", "most lines to show (default: the policy's max_lines)")
	format := fs.String("format", "text", "output format: text or json")
	policyFile := fs.String("policy", "", "policy file (default: $FSGUARD_POLICY, else the current directory as the only root)")
	session := fs.String("session", os.Getenv("FSGUARD_SESSION"), "session id for the journal (default: $FSGUARD_SESSION)")
	noDedupe := fs.Bool("no-dedupe", false, "always show the lines, even when the session already holds this version")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: fsguard read PATH [--offset N] [--limit N] [--format text|json] [--policy FILE] [--session ID] [--no-dedupe]

Shows a line-numbered window of a UTF-8 text file inside the allowed roots.
The footer says exactly how to continue. Each read is recorded in the
journal ($FSGUARD_JOURNAL, the policy's journal.path, or
~/.local/state/fsguard/journal.db); with a session, a re-read of a version
the session already holds whole answers with a short notice instead.

examples:
  fsguard read README.md
  fsguard read src/main.go --offset 120 --limit 80
  fsguard read src/main.go --format json

flags:
`)
		fs.PrintDefaults()
	}
	name, code, ok := parseOne(fs, args, stderr)
	if !ok {
		return code
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(stderr, "Error: --format must be text or json, got %q\n", *format)
		return exitUsage
	}
	report := func(err error) int {
		if *format == "json" {
			stdout.Write(read.ErrorJSON(name, err, nil))
			return exitFail
		}
		return fail(stderr, err)
	}
	req := read.Request{Path: name}
	var err error
	if req.Offset, err = count("offset", *offset, name); err != nil {
		return report(err)
	}
	if *limit != "" {
		if req.Limit, err = count("limit", *limit, name); err != nil {
			return report(err)
		}
	}
	pol, ok := policyFor(*policyFile, stderr)
	if !ok {
		return exitUsage
	}
	svc, closeSvc, err := openService(pol)
	if err != nil {
		return report(err)
	}
	defer closeSvc()
	if req.Cwd, err = os.Getwd(); err != nil {
		return report(err)
	}
	res, err := svc.Read(agent.ReadRequest{Request: req, Session: *session, NoDedupe: *noDedupe})
	if err != nil {
		return report(err)
	}
	if *format == "json" {
		stdout.Write(res.JSON())
		return 0
	}
	io.WriteString(stdout, res.Text())
	for _, n := range res.Notes {
		fmt.Fprintf(stderr, "Note: %s\n", n)
	}
	return 0
}

// count parses a positive line count given on the command line.
func count(name, s, path string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 {
		return 0, refusal.New(refusal.InvalidInput, path, "invalid input: --%s must be a positive integer, got %q", name, s)
	}
	return v, nil
}
