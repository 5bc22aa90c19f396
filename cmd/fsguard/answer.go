package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// answer prints the result of a command that has no envelope of its own
// (version, health, unmount): text on stdout, or with --format json one
// object, fields plus "ok", and "error" with the message when err is not
// nil (exit 1, as in text, where the message goes to stderr instead).
func answer(stdout, stderr io.Writer, format, text string, fields map[string]any, err error) int {
	if format != "json" {
		if err != nil {
			return fail(stderr, err)
		}
		fmt.Fprintln(stdout, text)
		return 0
	}
	out := map[string]any{"ok": err == nil}
	for k, v := range fields {
		out[k] = v
	}
	if err != nil {
		out["error"] = err.Error()
	}
	b, _ := json.Marshal(out)
	fmt.Fprintf(stdout, "%s\n", b)
	if err != nil {
		return exitFail
	}
	return 0
}
