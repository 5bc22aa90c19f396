package read

import (
	"testing"

	"github.com/fsguard/fsguard/internal/concept/refusal"
)

// TestInputErrorsInEachDoorsWords: one check's refusal names the options
// as flags at the CLI and the socket, and as tool arguments at MCP.
func TestInputErrorsInEachDoorsWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e        InputError
		cli, mcp string
	}{
		{InputError{Why: NotPositive, Args: []Arg{ArgLimit}, Got: "0"},
			`invalid input: --limit must be a positive integer, got "0"`,
			`invalid input: limit must be a positive integer, got "0"`},
		{InputError{Why: BadWindow, Args: []Arg{ArgWindow}, Got: "9:3"},
			`invalid input: --window "9:3": give START:END line numbers, 1 <= START <= END (e.g. --window 10:40)`,
			`invalid input: windows "9:3": give START:END line numbers, 1 <= START <= END (e.g. windows 10:40)`},
		{InputError{Why: TooManyWindows, Got: "17"},
			`invalid input: 17 windows; at most 16 in one read`, `invalid input: 17 windows; at most 16 in one read`},
		{InputError{Why: NotAnchor, Args: []Arg{ArgAround}, Got: "5"},
			`invalid input: --around "5" is not an anchor; use N#hh as an --anchors read shows it (e.g. 12#a3)`,
			`invalid input: around "5" is not an anchor; use N#hh as a read with anchors: true shows it (e.g. 12#a3)`},
		{InputError{Why: NoLine, Args: []Arg{ArgAround}, Got: "0#00"},
			`invalid input: --around "0#00" names no line`, `invalid input: around "0#00" names no line`},
		{InputError{Why: Conflict, Args: []Arg{ArgOffset, ArgAround}},
			`invalid input: --offset and --around ask for windows in different ways; give one of --offset, --window, --around and --block`,
			`invalid input: offset and around ask for windows in different ways; give one of offset, windows, around and block`},
		{InputError{Why: Alone, Args: []Arg{ArgRadius, ArgAround}},
			`invalid input: --radius goes with --around N#hh`, `invalid input: radius goes with around N#hh`},
	} {
		r := tc.e.Refusal()
		if r.Code != refusal.InvalidInput {
			t.Errorf("%v: code %s", tc.e, r.Code)
		}
		if got := r.Render(refusal.CLI); got != tc.cli || r.Render(refusal.Socket) != got {
			t.Errorf("CLI:\n got %s\nwant %s", got, tc.cli)
		}
		if got := r.Render(refusal.MCP); got != tc.mcp {
			t.Errorf("MCP:\n got %s\nwant %s", got, tc.mcp)
		}
	}
}
