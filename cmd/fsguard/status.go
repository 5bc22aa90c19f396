package main

// The commands that ask the daemon: status (what it is doing; or, given
// an id, did a write sent under it happen) and health (does it answer: a
// probe).

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fsguard/fsguard/internal/door/control"
	"github.com/fsguard/fsguard/internal/service/api"
)

const statusUsage = `usage: fsguard status [--socket SOCK] [--format json]
       fsguard status ID [--policy FILE | --socket SOCK]

With no ID, says what the fsguard daemon at SOCK is doing: its version and
uptime, the policy file in force and its SHA-256, the roots, the mount
point, open mode, watch backend and warm walk, the journal and its head
(last sequence number), the sessions it served and the connections open,
and the git history scan: each repository it checked, whether the check
was complete, what it found (as the mount's log words it) and when it ran.
Root and the daemon's own user see everything; any other uid sees only the
roots and repositories it can read itself, and its own sessions.

With an ID, says whether the write or edit you sent under ID happened: exit 0 when it
did, 1 with NOT_WRITTEN or IN_PROGRESS when it did not (or not yet). A
write records its intent before it replaces anything, so a write with no
record did not happen. Only your own writes are found. fsguard asks this
itself when the connection to the daemon is lost before an answer.

examples:
  fsguard status --socket /run/fsguard/fsguard.sock
  fsguard status --format json
  fsguard status 9f2c4e1a7b3d5f60 --socket /run/fsguard/fsguard.sock
`

func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("status", statusUsage, stderr)
	policyFile := fs.String("policy", "", "policy file")
	socket := fs.String("socket", os.Getenv("FSGUARD_SOCKET"), "ask the fsguard daemon at this control socket (default: $FSGUARD_SOCKET)")
	format := fs.String("format", "text", "text or json")
	pos, code, ok := parse(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		fs.Usage()
		return exitUsage
	}
	if !validFormat(*format, stderr) {
		return exitUsage
	}
	if len(pos) == 0 {
		if *socket == "" {
			fmt.Fprintln(stderr, "Error: status with no id asks a running daemon: pass --socket SOCK or set FSGUARD_SOCKET")
			return exitUsage
		}
		return perform(api.Request{Op: "state", Format: *format}, nil, "", *socket, stdout, stderr)
	}
	id := pos[0]
	return perform(api.Request{Op: "status", ID: id, Format: *format}, nil, *policyFile, *socket, stdout, stderr)
}

const healthUsage = `usage: fsguard health [--socket SOCK] [--format text|json]

Exits 0 when the fsguard daemon at SOCK answers, 1 (with the reason)
when it does not within 10 s: a liveness or readiness probe.

example:
  fsguard health --socket /run/fsguard/fsguard.sock
`

func runHealth(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("health", healthUsage, stderr)
	socket := fs.String("socket", os.Getenv("FSGUARD_SOCKET"), "the fsguard daemon's control socket (default: $FSGUARD_SOCKET)")
	format := fs.String("format", "text", "text or json")
	if _, code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	if !validFormat(*format, stderr) {
		return exitUsage
	}
	if *socket == "" {
		fmt.Fprintln(stderr, "Error: health needs --socket (or FSGUARD_SOCKET)")
		return exitUsage
	}
	err := control.Health(*socket, 10*time.Second)
	return answer(stdout, stderr, *format, "ok", map[string]any{"socket": *socket}, err)
}
