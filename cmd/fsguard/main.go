// Command fsguard is the CLI: each subcommand parses its flags and calls
// the packages that do the work (roots, read, mount, journal).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"github.com/fsguard/fsguard/internal/service/session"
	"github.com/fsguard/fsguard/internal/view/warm"
)

// The CLI's names for session's exit statuses (session.ExitStatuses is
// the one table of them).
const (
	exitFail  = session.ExitFail
	exitUsage = session.ExitUsage

	exitJournalMoved = session.ExitJournalMoved
)

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

var commands []command

func init() {
	commands = []command{
		{"read", "show a line-numbered window of a text file", runRead},
		{"check", "say whether a session may write a file (it read the current version)", runCheck},
		{"write", "replace a file from stdin, atomically, if the check passes", runWrite},
		{"edit", "change lines named by their anchors (or exact text), atomically", runEdit},
		{"status", "say what the daemon is doing; with an id, whether a write sent under it happened", runStatus},
		{"health", "exit 0 when the daemon at a socket answers (a probe)", runHealth},
		{"journal", "audit the journal: query, tail, stats, verify, export", runJournal},
		{"policy", "check a policy file and print the effective policy (TOML or JSON)", runPolicy},
		{"mcp", "serve the read, check, write and edit tools over the Model Context Protocol (stdio)", runMCP},
		{"version", "print the version", runVersion},
		{"completion", "print a bash, zsh or fish completion script", runCompletion},
		{"mount", "serve a guarded read-only FUSE view of the roots", runMount},
		{"unmount", "unmount an fsguard mount", runUnmount},
	}
}

func main() {
	if status, ok := warm.ListerMain(); ok {
		// A child the mount started to list itself (see warm.ListerMain).
		os.Exit(status)
	}
	out := &checkedWriter{w: os.Stdout}
	status := run(os.Args[1:], out, os.Stderr)
	if out.err != nil {
		fmt.Fprintf(os.Stderr, "Error: the output could not be written (%v): what was written is incomplete; write it somewhere with room, then retry\n", out.err)
		if status == 0 {
			status = exitFail
		}
	}
	os.Exit(status)
}

// checkedWriter is stdout as every command writes it. It keeps the first
// write error, so that a command whose output could not be written (a
// full disk, /dev/full) exits non-zero whether or not it looked at the
// error itself; later writes fail at once.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

// Err is the first write error.
func (c *checkedWriter) Err() error { return c.err }

// outputFailed reports whether w (a command's stdout) has failed a write: a
// command that runs on (a follower) stops then.
func outputFailed(w io.Writer) bool {
	c, ok := w.(interface{ Err() error })
	return ok && c.Err() != nil
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr) // asked for nothing: a usage error
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			// help CMD is CMD --help, on stdout.
			return run([]string{args[1], "--help"}, stdout, stdout)
		}
		usage(stdout) // asked for: stdout, exit 0
		return 0
	case "--version", "-version":
		return runVersion(nil, stdout, stderr)
	}
	for _, c := range commands {
		if c.name == args[0] {
			if wantsHelp(args[1:]) {
				stderr = stdout // asked-for help goes to stdout
			}
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "Error: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

// wantsHelp reports whether a command's arguments ask for its help (before
// any "--", which ends the flags).
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: fsguard <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'fsguard <command> --help' for a command's flags and examples.")
	fmt.Fprint(w, "\nexit status:\n")
	for _, s := range session.ExitStatuses {
		// The README has this table too.
		fmt.Fprintf(w, "  %d  %s\n", s.Exit, strings.ReplaceAll(s.Means, "\n", "\n     "))
	}
}

// parse parses flags that may come before or after positional arguments
// (`fsguard read FILE --offset 10`), which the flag package alone does not.
// "--" ends flag parsing.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, int, bool) {
	var pos []string
	for {
		if err := parseFlags(fs, args, stderr); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, exitUsage, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, 0, true
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), 0, true
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseOne parses flags around exactly one positional argument; anything
// else is a usage error.
func parseOne(fs *flag.FlagSet, args []string, stderr io.Writer) (string, int, bool) {
	pos, code, ok := parse(fs, args, stderr)
	if !ok {
		return "", code, false
	}
	if len(pos) != 1 {
		fs.Usage()
		return "", exitUsage, false
	}
	return pos[0], 0, true
}

// policyFor loads the policy for a command; a bad policy is a usage error
// (exit 2), reported with its key and line.
func policyFor(file string, stderr io.Writer) (*policy.Policy, bool) {
	p, err := loadPolicy(file)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return nil, false
	}
	return p, true
}

// loadPolicy finds the policy: --policy, then FSGUARD_POLICY, then the
// embedded default rooted at the current directory.
func loadPolicy(file string) (*policy.Policy, error) {
	if file == "" {
		file = os.Getenv("FSGUARD_POLICY")
	}
	if file != "" {
		return policy.Load(file)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return policy.Default(cwd)
}

func fail(stderr io.Writer, err error) int {
	msg := termsafe.Escape(err.Error()) // errors name paths, which others name
	fmt.Fprintf(stderr, "Error: %s\n", strings.TrimPrefix(msg, "Error: "))
	return exitFail
}

// flagSet is a subcommand's flag set whose usage is text, then its flags.
func flagSet(name, text string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(stderr, text)
		fs.PrintDefaults()
	}
	return fs
}
