package main

import (
	"fmt"
	"io"
	"os"

	"github.com/fsguard/fsguard/internal/door/control"
	"github.com/fsguard/fsguard/internal/service/api"
)

func runCheck(args []string, stdout, stderr io.Writer) int {
	return runPrecondition("check", args, stdout, stderr)
}

func runWrite(args []string, stdout, stderr io.Writer) int {
	return runPrecondition("write", args, stdout, stderr)
}

const checkUsage = `usage: fsguard check PATH --session ID [--policy FILE | --socket SOCK]

Says whether the session may write PATH now: it must have read the
current version. Exit 0: fresh (or a new file); 3: FS_NOT_OBSERVED (never
read in this session); 4: FS_STALE_VERSION (changed since it was read). A
file whose mtime moved but whose content did not is still fresh.

example:
  fsguard check src/main.go --session agent-7
`

const writeUsage = `usage: fsguard write PATH --session ID [--policy FILE | --socket SOCK] < NEW_CONTENT

Replaces PATH with standard input atomically (temp file, fsync, rename,
fsync of the directory), only if 'fsguard check' passes; keeps the mode;
records the written version, so the next write needs no re-read. A new
file needs no read, but its directory must be inside the roots.
Exit statuses as for check.

example:
  gofmt src/main.go | fsguard write src/main.go --session agent-7
`

// readInput reads standard input for cmd, up to what one request to the
// daemon may carry.
func readInput(cmd, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(os.Stdin, control.MaxRequestLine+1))
	if err == nil && len(b) > control.MaxRequestLine {
		err = fmt.Errorf("the %s is larger than %d bytes; fsguard %s takes at most that", what, control.MaxRequestLine, cmd)
	}
	return b, err
}

func runPrecondition(cmd string, args []string, stdout, stderr io.Writer) int {
	usage := writeUsage
	if cmd == "check" {
		usage = checkUsage
	}
	fs := flagSet(cmd, usage, stderr)
	policyFile := fs.String("policy", "", "policy file")
	sessionID := fs.String("session", os.Getenv("FSGUARD_SESSION"), "session id (default: $FSGUARD_SESSION)")
	socket := fs.String("socket", os.Getenv("FSGUARD_SOCKET"), "ask the fsguard daemon at this control socket (default: $FSGUARD_SOCKET)")
	id := fs.String("id", "", "write: record it under this id, to ask 'fsguard status ID' about (default: a random one, through the socket)")
	format := fs.String("format", "text", "text or json")
	name, code, ok := parseOne(fs, args, stderr)
	if !ok {
		return code
	}
	if cmd == "check" && *id != "" {
		fmt.Fprintln(stderr, "Error: check does not take --id (a write does)")
		return exitUsage
	}
	if !validFormat(*format, stderr) {
		return exitUsage
	}
	req := api.Request{Op: cmd, Path: name, Session: *sessionID, ID: *id, Format: *format}
	var content io.Reader
	if cmd == "write" {
		content = os.Stdin // streamed: to the daemon, and into the file
	}
	return perform(req, content, *policyFile, *socket, stdout, stderr)
}

// validFormat accepts --format text or json, and says so otherwise.
func validFormat(f string, stderr io.Writer) bool {
	if err := api.CheckFormat(f); err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return false
	}
	return true
}
