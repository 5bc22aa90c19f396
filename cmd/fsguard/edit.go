package main

import (
	"flag"
	"fmt"
	"github.com/fsguard/fsguard/internal/service/edit"
	"io"
	"os"

	"github.com/fsguard/fsguard/internal/service/api"
)

const editUsage = `usage: fsguard edit PATH --session ID EDIT [--policy FILE | --socket SOCK]

Changes lines of PATH atomically, as fsguard write does, checking only
the lines the edit touches: they must be lines this session was shown,
unchanged since. Changes elsewhere in the file are kept. EDIT is one of:

  --replace N#hh[..M#hh] --text TEXT   replace lines N-M with TEXT
  --insert-after N#hh --text TEXT      insert TEXT after line N (0: before line 1)
  --delete N#hh[..M#hh]                delete lines N-M
  --old TEXT --new TEXT                replace the one occurrence of TEXT

N#hh are anchors, as 'fsguard read --anchors' shows them; they name lines
of the version this session last read. --text - reads TEXT from stdin.
New lines take the file's line endings (a CRLF file stays CRLF). The
answer shows the changed lines with their new anchors, so a further edit
needs no re-read. Exit 3: FS_NOT_OBSERVED (a touched line was never
shown); 4: FS_STALE_VERSION (a touched line changed since); 1 with
FS_EDIT_NO_MATCH or FS_EDIT_AMBIGUOUS when --old matches no or several
places.

examples:
  fsguard read src/main.go --anchors --session agent-7
  fsguard edit src/main.go --session agent-7 --replace 12#a3 --text '	return nil'
  fsguard edit src/main.go --session agent-7 --old 'x := 1' --new 'x := 2'
`

func runEdit(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("edit", editUsage, stderr)
	policyFile := fs.String("policy", "", "policy file")
	sessionID := fs.String("session", os.Getenv("FSGUARD_SESSION"), "session id (default: $FSGUARD_SESSION)")
	format := fs.String("format", "text", "text or json")
	socket := fs.String("socket", os.Getenv("FSGUARD_SOCKET"), "ask the fsguard daemon at this control socket (default: $FSGUARD_SOCKET)")
	fs.String("replace", "", "anchor or anchor range N#hh..M#hh to replace")
	fs.String("insert-after", "", "anchor of the line to insert after (0: before line 1)")
	fs.String("delete", "", "anchor or anchor range to delete")
	fs.String("text", "", "the new lines (- reads them from stdin)")
	fs.String("old", "", "exact text to replace (must occur once)")
	fs.String("new", "", "its replacement")
	name, code, ok := parseOne(fs, args, stderr)
	if !ok {
		return code
	}
	set := map[string]*string{}
	fs.Visit(func(f *flag.Flag) {
		v := f.Value.String()
		set[f.Name] = &v
	})
	spec := edit.Spec{Replace: set["replace"], InsertAfter: set["insert-after"], Delete: set["delete"], Text: set["text"], Old: set["old"], New: set["new"]}
	if spec.Text != nil && *spec.Text == "-" {
		b, err := readInput("edit", "new text")
		if err != nil {
			return fail(stderr, err)
		}
		text := string(b)
		spec.Text = &text
	}
	ed, err := spec.Edit()
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v (see fsguard edit --help)\n", err)
		return exitUsage
	}
	if !validFormat(*format, stderr) {
		return exitUsage
	}
	return perform(api.Request{Op: "edit", Path: name, Session: *sessionID, Edit: &ed, Format: *format}, nil, *policyFile, *socket, stdout, stderr)
}
