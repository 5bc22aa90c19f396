package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"fsguard/refusal"
)

// Exit statuses of fsguard check and write, distinct per precondition.
const (
	exitNotObserved = 3
	exitStale       = 4
)

func preconditionExit(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "Error: %s\n", err)
	switch refusal.CodeOf(err) {
	case refusal.NotObserved:
		return exitNotObserved
	case refusal.StaleVersion:
		return exitStale
	}
	return exitFail
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	return runPrecondition("check", args, stdout, stderr)
}

func runWrite(args []string, stdout, stderr io.Writer) int {
	return runPrecondition("write", args, stdout, stderr)
}

func runPrecondition(cmd string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	policyFile := fs.String("policy", "", "policy file")
	session := fs.String("session", os.Getenv("FSGUARD_SESSION"), "session id (default: $FSGUARD_SESSION)")
	fs.Usage = func() {
		if cmd == "check" {
			fmt.Fprint(stderr, `usage: fsguard check PATH --session ID [--policy FILE]

Says whether the session may write PATH now: it must have read the
current version. Exit 0: fresh (or a new file); 3: FS_NOT_OBSERVED (never
read in this session); 4: FS_STALE_VERSION (changed since it was read). A
file whose mtime moved but whose content did not is still fresh.

example:
  fsguard check src/main.go --session agent-7
`)
		} else {
			fmt.Fprint(stderr, `usage: fsguard write PATH --session ID [--policy FILE] < NEW_CONTENT

Replaces PATH with standard input atomically (temp file, fsync, rename,
fsync of the directory), only if 'fsguard check' passes; keeps the mode;
records the written version, so the next write needs no re-read. A new
file needs no read, but its directory must be inside the roots.
Exit statuses as for check.

example:
  gofmt src/main.go | fsguard write src/main.go --session agent-7
`)
		}
		fs.PrintDefaults()
	}
	arg, code, ok := parseOne(fs, args, stderr)
	if !ok {
		return code
	}
	pol, ok := policyFor(*policyFile, stderr)
	if !ok {
		return exitUsage
	}
	svc, closeSvc, err := openService(pol)
	if err != nil {
		return fail(stderr, err)
	}
	defer closeSvc()
	cwd, err := os.Getwd()
	if err != nil {
		return fail(stderr, err)
	}
	if cmd == "check" {
		f, err := svc.Check(arg, cwd, *session)
		if err != nil {
			return preconditionExit(stderr, err)
		}
		if f.NewFile {
			fmt.Fprintf(stdout, "fresh: %q does not exist yet; it may be created\n", f.Path)
		} else {
			fmt.Fprintf(stdout, "fresh: %q is the version this session read\n", f.Path)
		}
		return 0
	}
	res, err := svc.Write(arg, cwd, *session, os.Stdin)
	if err != nil {
		return preconditionExit(stderr, err)
	}
	verb := "replaced"
	if res.Created {
		verb = "created"
	}
	fmt.Fprintf(stdout, "%s %q: %d bytes, %d lines\n", verb, res.Path, res.Bytes, res.TotalLines)
	return 0
}
