package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"fsguard/history"
	"fsguard/roots"
)

func runPolicy(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("policy", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: fsguard policy check [FILE]

Validates a policy file (default: $FSGUARD_POLICY, else the embedded
default) and prints the effective policy, defaults filled in. A bad file
is reported with the key and line at fault, and exit status 2. Each git
repository under the roots whose history holds what the view hides (a
denied path, a private key) gets a warning on stderr.

example:
  fsguard policy check /etc/fsguard/policy.toml
`)
	}
	pos, code, ok := parse(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) < 1 || pos[0] != "check" || len(pos) > 2 {
		fs.Usage()
		return exitUsage
	}
	file := ""
	if len(pos) == 2 {
		file = pos[1]
	}
	p, err := loadPolicy(file)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return exitUsage
	}
	io.WriteString(stdout, p.Summary())
	// What the roots' git histories hold that the view hides: warnings,
	// not errors (the policy itself is fine).
	if g, err := roots.New(p); err == nil {
		reps, err := history.Scan(context.Background(), g, history.Options{})
		g.Close()
		for _, r := range reps {
			fmt.Fprintf(stderr, "Warning: %s\n", r.Summary())
		}
		if err != nil {
			fmt.Fprintf(stderr, "Warning: the git history check did not finish: %v\n", err)
		}
	}
	return 0
}
