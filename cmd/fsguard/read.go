package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"github.com/fsguard/fsguard/internal/door/control"
	"github.com/fsguard/fsguard/internal/door/mcp"
	"github.com/fsguard/fsguard/internal/service/api"
	"github.com/fsguard/fsguard/internal/service/read"
	"github.com/fsguard/fsguard/internal/service/session"
)

func runRead(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("read", flag.ContinueOnError)
	offset := fs.String("offset", "1", "first line to show (1-based)")
	limit := fs.String("limit", "", "most lines to show (default: the policy's max_lines)")
	format := fs.String("format", "text", "output format: text or json")
	policyFile := fs.String("policy", "", "policy file (default: $FSGUARD_POLICY, else the current directory as the only root)")
	sessionID := fs.String("session", os.Getenv("FSGUARD_SESSION"), "session id for the journal (default: $FSGUARD_SESSION)")
	noDedupe := fs.Bool("no-dedupe", false, "always show the lines, even when the session already holds them or a diff would do")
	anchors := fs.Bool("anchors", false, "show each line as N#hh: text, with the anchor fsguard edit names it by")
	socket := fs.String("socket", os.Getenv("FSGUARD_SOCKET"), "ask the fsguard daemon at this control socket (default: $FSGUARD_SOCKET)")
	var windows []string
	fs.Func("window", "a window START:END of lines; repeat for several in one answer", func(v string) error {
		windows = append(windows, v)
		return nil
	})
	around := fs.String("around", "", "the window centred on the line an N#hh anchor names")
	radius := fs.String("radius", "", fmt.Sprintf("lines either side of --around's line (default %d)", read.DefaultRadius))
	block := fs.String("block", "", "the smallest block by indentation that encloses line N")
	pages := fs.String("pages", "", fmt.Sprintf("a document's (PDF's) pages to show, N or A-B, at most %d (default: the first %d)", read.MaxPages, read.MaxPages))
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: fsguard read PATH [--offset N] [--limit N] [--window A:B ...] [--around N#hh [--radius R]] [--block N] [--pages A-B]
                  [--format text|json] [--anchors] [--session ID] [--no-dedupe] [--policy FILE | --socket SOCK]

Shows a line-numbered window of a text file inside the allowed roots (UTF-8,
or UTF-16/UTF-32 with a byte order mark, shown decoded; writes keep the
encoding). A directory is listed: its admitted entries, sorted, "/" after
a directory, paged by --offset and --limit. A Jupyter notebook (.ipynb) is
shown as cells with their text outputs, paged by cells. A PDF (known by its
content) is shown as the text of its pages, each after "--- page N ---",
at most 20 pages a call (--pages A-B), parsed in a sandbox with bounds on
size, time and memory; credentials in its text are masked, and one whose
text holds a private key is refused.
The footer says exactly how to continue. Each read is recorded in the
journal; with a session, a re-read of lines the session already holds in
this version answers with a short notice instead, and a re-read of a file
changed since with a unified diff against the version it holds, when that
is smaller. --anchors shows N#hh: text, for fsguard edit. With --socket (or
$FSGUARD_SOCKET) the daemon reads and records, and PATH is in this
process's view of the mount; otherwise the journal is $FSGUARD_JOURNAL,
else the policy's journal.path; with a policy file and no path there,
/var/lib/fsguard/journal.db for root and ~/.local/state/fsguard/journal.db
for anyone else; with no policy file, ~/.local/state/fsguard/journal.db,
root's too (a try-out never writes into the service's journal).

examples:
  fsguard read README.md
  fsguard read src/main.go --offset 120 --limit 80
  fsguard read src/                           # the directory's entries
  fsguard read src/main.go --window 1:20 --window 300:340
  fsguard read src/main.go --around 120#3f --radius 5
  fsguard read src/main.go --block 131        # the function around line 131
  fsguard read analysis.ipynb
  fsguard read design.pdf --pages 21-40
  fsguard read src/main.go --format json
  fsguard read src/main.go --anchors --session agent-7
  FSGUARD_SOCKET=/run/fsguard.sock fsguard read /workspace/src/main.go

flags:
`)
		fs.PrintDefaults()
	}
	name, code, ok := parseOne(fs, args, stderr)
	if !ok {
		return code
	}
	if !validFormat(*format, stderr) {
		return exitUsage
	}
	req := api.Request{Op: "read", Path: name, Session: *sessionID, Format: *format, NoDedupe: *noDedupe, Anchors: *anchors, Around: *around, Pages: *pages}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if bad := readFlags(&req, windows, map[read.Arg]string{read.ArgOffset: *offset, read.ArgLimit: *limit, read.ArgRadius: *radius, read.ArgBlock: *block}, set); bad != nil {
		// A bad flag value is a usage error, as everywhere.
		emit(stdout, stderr, session.RenderRead(name, nil, bad.Refusal(), *format))
		return exitUsage
	}
	return perform(req, nil, *policyFile, *socket, stdout, stderr)
}

// perform runs one request (content: a write's, else nil) and prints its
// output.
func perform(req api.Request, content io.Reader, policyFile, socket string, stdout, stderr io.Writer) int {
	do, done, code := performer(policyFile, socket, stderr)
	if do == nil {
		return code
	}
	defer done()
	return emit(stdout, stderr, do(req, content))
}

// performer returns a function that runs requests through the daemon when
// a socket is given, and directly otherwise; either way the output is
// rendered the same way. Requests get this process's cwd.
func performer(policyFile, socket string, stderr io.Writer) (mcp.Perform, func(), int) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, nil, fail(stderr, err)
	}
	if socket != "" {
		return func(req api.Request, content io.Reader) session.Output {
			req.Cwd = cwd
			if req.Via == "" {
				req.Via = "cli"
			}
			out, err := control.Call(socket, req, content)
			if err != nil {
				msg := termsafe.Escape(err.Error())
				return session.Output{Stderr: "Error: " + msg + "\n", Exit: session.ExitFail, Message: msg}
			}
			return out
		}, func() {}, 0
	}
	pol, ok := policyFor(policyFile, stderr)
	if !ok {
		return nil, nil, exitUsage
	}
	svc, closeSvc, err := openService(pol)
	if err != nil {
		return nil, nil, fail(stderr, err)
	}
	return func(req api.Request, content io.Reader) session.Output {
		req.Cwd = cwd
		return api.Do(svc, req, content)
	}, closeSvc, 0
}

func emit(stdout, stderr io.Writer, out session.Output) int {
	io.WriteString(stdout, out.Stdout)
	io.WriteString(stderr, out.Stderr)
	return out.Exit
}

// readFlags maps read's window flags onto req (counts: each flag's text,
// "" when not given; set: the flags given) and checks them by read's one
// rule.
func readFlags(req *api.Request, windows []string, counts map[read.Arg]string, set map[string]bool) *read.InputError {
	for _, v := range windows {
		w, bad := read.ParseWindow(v, req.Path)
		if bad != nil {
			return bad
		}
		req.Windows = append(req.Windows, w)
	}
	for _, c := range []struct {
		arg read.Arg
		dst *int64
	}{{read.ArgOffset, &req.Offset}, {read.ArgLimit, &req.Limit}, {read.ArgRadius, &req.Radius}, {read.ArgBlock, &req.Block}} {
		if s := counts[c.arg]; s != "" && set[string(c.arg)] {
			v, bad := read.ParseCount(c.arg, s, req.Path)
			if bad != nil {
				return bad
			}
			*c.dst = v
		}
	}
	return req.Read().Check()
}
