package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// parseFlags runs fs.Parse with the flag package's own messages held back:
// --help shows the command's usage; any other mistake is one line on
// stderr that names the flag, suggests the flag it most likely meant,
// and points at --help, instead of the whole usage text.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		usage()
	default:
		fmt.Fprintf(stderr, "Error: %s\n", flagMistake(fs, err))
	}
	return err
}

// flagMistake is the one line for a flag the command does not take or a
// value it cannot use.
func flagMistake(fs *flag.FlagSet, err error) string {
	help := fmt.Sprintf("fsguard %s --help lists its flags", fs.Name())
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !unknown {
		return fmt.Sprintf("%s (%s)", err, help)
	}
	if near := nearFlag(fs, name); near != "" {
		return fmt.Sprintf("fsguard %s has no flag --%s; did you mean --%s? (%s)", fs.Name(), name, near, help)
	}
	return fmt.Sprintf("fsguard %s has no flag --%s (%s)", fs.Name(), name, help)
}

// nearFlag is the command's flag closest to name: one it begins, or one
// within two edits (the usual typo, a letter left out or two swapped);
// "" when none is near enough to be a good guess.
func nearFlag(fs *flag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		d := editDistance(name, f.Name)
		if len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of neighbours each cost
// one. Flag names are short; two rows of ints are all it holds.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
