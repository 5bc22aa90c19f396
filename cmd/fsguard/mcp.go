package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/fsguard/fsguard/internal/concept/metrics"
	"github.com/fsguard/fsguard/internal/door/mcp"
)

func runMCP(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	policyFile := fs.String("policy", "", "policy file (direct mode)")
	socket := fs.String("socket", os.Getenv("FSGUARD_SOCKET"), "ask the fsguard daemon at this control socket (default: $FSGUARD_SOCKET)")
	session := fs.String("session", os.Getenv("FSGUARD_SESSION"), "session id for this connection (default: $FSGUARD_SESSION, else a fresh random id)")
	resume := fs.Bool("resume", false, "with --session: this connection holds what earlier ones of the session were shown (default: it starts holding nothing)")
	maxFrame := fs.Int("max-frame", mcp.MaxFrame, "the longest message line taken, in bytes; a longer one is answered with an error and skipped")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: fsguard mcp [--policy FILE | --socket SOCK] [--session ID]

Serves the Model Context Protocol over stdin/stdout with five tools:
read {path, offset?, limit?, anchors?}, check {path}, write {path,
content} and edit {path, replace?|insert_after?|delete?, text?} or
{path, old_string, new_string}, and forget {}.
Tool results are exactly the text of fsguard read; refusals are tool
errors "CODE: message". The connection is one session: a fresh one, or
--session's, which this connection starts holding nothing of unless
--resume (a new model has been shown nothing). The forget tool drops what
the session holds, for a client that compacted its context. A line that is
not JSON gets a JSON-RPC parse error (-32700), one longer than
--max-frame an invalid-request error (-32600); the session goes on.

example (an MCP client's server command):
  fsguard mcp --socket /run/fsguard.sock
`)
		fs.PrintDefaults()
	}
	pos, code, ok := parse(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		fs.Usage()
		return exitUsage
	}
	do, done, code := performer(*policyFile, *socket, stderr)
	if do == nil {
		return code
	}
	defer done()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mcp.New(version(), *session, *resume, do).Run(ctx, &mcp.Transport{In: os.Stdin, Out: stdout, Max: *maxFrame}); err != nil && ctx.Err() == nil {
		return fail(stderr, err)
	}
	return 0
}

const versionUsage = `usage: fsguard version [--format text|json]

Prints the build's version: the release's, or 0.0.0~git<date>.<hash> for
a build of an untagged commit (the same string as --version, the
fsguard_build_info metric and the MCP server's serverInfo).
`

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("version", versionUsage, stderr)
	format := fs.String("format", "text", "text or json")
	pos, code, ok := parse(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "Error: fsguard version takes no argument, got %q (fsguard version --help)\n", pos[0])
		return exitUsage
	}
	if !validFormat(*format, stderr) {
		return exitUsage
	}
	return answer(stdout, stderr, *format, "fsguard "+version(), map[string]any{"version": version()}, nil)
}

// version is the build's version (the same string /metrics reports).
func version() string { return metrics.Version() }
