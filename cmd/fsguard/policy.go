package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/fsguard/fsguard/internal/decide/history"
	"github.com/fsguard/fsguard/internal/decide/roots"
)

func runPolicy(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("policy", flag.ContinueOnError)
	format := fs.String("format", "text", "text (the effective policy as TOML) or json")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: fsguard policy check [FILE] [--format text|json]

Validates a policy file (default: $FSGUARD_POLICY, else the embedded
default) and prints the effective policy, defaults filled in, and the
credential families masked ([secrets]). A bad file
is reported with the key and line at fault, and exit status 2. Each git
repository under the roots whose history holds what the view hides (a
denied path, a private key) gets a warning on stderr.

With --format json: one object, {"valid", "source", "policy" (the
effective policy, keys as in the Go type), "secret_families" (the
credential families masked), "warnings"}; a bad file is
{"valid": false, "error"} with exit status 2.

example:
  fsguard policy check /etc/fsguard/policy.toml
`)
		fs.PrintDefaults()
	}
	pos, code, ok := parse(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) < 1 || pos[0] != "check" || len(pos) > 2 {
		fs.Usage()
		return exitUsage
	}
	if !validFormat(*format, stderr) {
		return exitUsage
	}
	file := ""
	if len(pos) == 2 {
		file = pos[1]
	}
	p, err := loadPolicy(file)
	if err != nil {
		if *format == "json" {
			b, _ := json.Marshal(map[string]any{"valid": false, "error": err.Error()})
			fmt.Fprintf(stdout, "%s\n", b)
		} else {
			fmt.Fprintf(stderr, "Error: %v\n", err)
		}
		return exitUsage
	}
	// What the roots' git histories hold that the view hides: warnings,
	// not errors (the policy itself is fine).
	warnings := []string{}
	if g, err := roots.New(p); err == nil {
		reps, err := history.Scan(context.Background(), g, history.Options{Credentials: history.CredentialsUnder(p)})
		g.Close()
		for _, r := range reps {
			warnings = append(warnings, r.Summary())
		}
		if err != nil {
			warnings = append(warnings, "the git history check did not finish: "+err.Error())
		}
	}
	if *format == "json" {
		b, _ := json.MarshalIndent(map[string]any{"valid": true, "source": p.Source, "policy": p, "secret_families": p.Secrets.Families(), "warnings": warnings}, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	io.WriteString(stdout, p.Summary())
	for _, w := range warnings {
		fmt.Fprintf(stderr, "Warning: %s\n", w)
	}
	return 0
}
