package mcp

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/service/api"
	"github.com/fsguard/fsguard/internal/service/session"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestInputErrorsInFsguardsWords: arguments the input schema refuses are
// answered "INVALID_INPUT: <argument>: <what to send>", checked by fsguard
// itself (never in a schema validator's words), and the tool never runs.
func TestInputErrorsInFsguardsWords(t *testing.T) {
	t.Parallel()
	ran := 0
	srv := New("test", "s", false, func(api.Request, io.Reader) session.Output {
		ran++
		return session.Output{Stdout: "ok"}
	})
	ran = 0 // the bound session's mark at start
	ctx := context.Background()
	cs := connect(t, srv)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read", map[string]any{"path": "a", "offset": 0}, "INVALID_INPUT: offset: must be at least 1 (a positive integer; 1 is the first line)"},
		{"read", map[string]any{"path": "a", "limit": -3}, "INVALID_INPUT: limit: must be at least 1"},
		{"read", map[string]any{}, "INVALID_INPUT: path: is required"},
		{"read", map[string]any{"path": "  "}, "INVALID_INPUT: path: is not in the expected form (a non-blank file path without NUL bytes)"},
		{"read", map[string]any{"path": "a", "offset": "ten"}, "INVALID_INPUT: offset: has the wrong type"},
		{"read", map[string]any{"path": "a", "colour": "red"}, "INVALID_INPUT: colour: is not an argument of this tool"},
		{"edit", map[string]any{"path": "a", "replace": "two", "text": "x"}, "INVALID_INPUT: replace: is not in the expected form (an anchor N#hh or a range"},
		{"edit", map[string]any{"path": "a", "old_string": "", "new_string": "x"}, "INVALID_INPUT: old_string: must not be empty"},
		{"read", map[string]any{"path": "a", "offset": 1.5}, "INVALID_INPUT: offset: has the wrong type"},
		{"read", map[string]any{"path": "a", "around": "5"}, "INVALID_INPUT: around: is not in the expected form (an anchor N#hh from a read with anchors: true)"},
		{"read", map[string]any{"path": "a", "windows": []any{map[string]any{"start": 0, "end": 1}}}, "INVALID_INPUT: start: must be at least 1"},
		{"read", map[string]any{"path": "a", "windows": []any{map[string]any{"start": 1}}}, "INVALID_INPUT: end: is required"},
		{"read", map[string]any{"path": "a", "windows": make([]any, 17)}, "INVALID_INPUT: windows: must have at most 16 items"},
		{"read", map[string]any{"path": "a", "full": "yes"}, "INVALID_INPUT: full: has the wrong type"},
		{"write", map[string]any{"path": "a"}, "INVALID_INPUT: content: is required"},
		{"forget", map[string]any{"all": true}, "INVALID_INPUT: all: is not an argument of this tool"},
	} {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s %v: %v", tc.tool, tc.args, err)
		}
		text := r.Content[0].(*mcp.TextContent).Text
		if !r.IsError || !strings.HasPrefix(text, tc.want) || strings.Contains(text, "validating") {
			t.Errorf("%s %v: %q, want it to start with %q", tc.tool, tc.args, text, tc.want)
		}
	}
	if ran != 0 {
		t.Errorf("a tool ran %d times on arguments its schema refuses", ran)
	}
}

// connect is a client session with srv over in-memory transports, closed
// when the test ends.
func connect(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
