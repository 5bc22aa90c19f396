package main

import (
	"flag"
	"fmt"
	"io"
)

func runPolicy(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("policy", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: fsguard policy check [FILE]

Validates a policy file (default: $FSGUARD_POLICY, else the embedded
default) and prints the effective policy, defaults filled in. A bad file
is reported with the key and line at fault, and exit status 2.

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
	return 0
}
