package main

// The commands that ask after the fact: status (did a write sent under an
// id happen) and health (does the daemon answer: a probe).

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fsguard/fsguard/internal/door/control"
	"github.com/fsguard/fsguard/internal/service/api"
)

const statusUsage = `usage: fsguard status ID [--policy FILE | --socket SOCK]

Says whether the write or edit you sent under ID happened: exit 0 when it
did, 1 with NOT_WRITTEN or IN_PROGRESS when it did not (or not yet). A
write records its intent before it replaces anything, so a write with no
record did not happen. Only your own writes are found. fsguard asks this
itself when the connection to the daemon is lost before an answer.

example:
  fsguard status 9f2c4e1a7b3d5f60 --socket /run/fsguard/fsguard.sock
`

func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("status", statusUsage, stderr)
	policyFile := fs.String("policy", "", "policy file")
	socket := fs.String("socket", os.Getenv("FSGUARD_SOCKET"), "ask the fsguard daemon at this control socket (default: $FSGUARD_SOCKET)")
	format := fs.String("format", "text", "text or json")
	id, code, ok := parseOne(fs, args, stderr)
	if !ok {
		return code
	}
	if !validFormat(*format, stderr) {
		return exitUsage
	}
	return perform(api.Request{Op: "status", ID: id, Format: *format}, nil, *policyFile, *socket, stdout, stderr)
}

const healthUsage = `usage: fsguard health [--socket SOCK]

Exits 0 when the fsguard daemon at SOCK answers, 1 (with the reason)
when it does not within 10 s: a liveness or readiness probe.

example:
  fsguard health --socket /run/fsguard/fsguard.sock
`

func runHealth(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("health", healthUsage, stderr)
	socket := fs.String("socket", os.Getenv("FSGUARD_SOCKET"), "the fsguard daemon's control socket (default: $FSGUARD_SOCKET)")
	if _, code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	if *socket == "" {
		fmt.Fprintln(stderr, "Error: health needs --socket (or FSGUARD_SOCKET)")
		return exitUsage
	}
	if err := control.Health(*socket, 10*time.Second); err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintln(stdout, "ok")
	return 0
}
