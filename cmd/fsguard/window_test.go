package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/door/mcp"
	"github.com/fsguard/fsguard/internal/service/api"
	"github.com/fsguard/fsguard/internal/service/session"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOneWindowRule: the CLI and the MCP read tool refuse the same bad
// window options with the same code and, but for what each calls the
// option (--window, windows), the same message; neither performs the read.
func TestOneWindowRule(t *testing.T) {
	t.Parallel()
	srv := mcp.New("test", "s", true, func(req api.Request, _ io.Reader) session.Output {
		t.Errorf("performed %+v", req)
		return session.Output{}
	})
	ct, st := sdk.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	win := func(a, b int) map[string]any { return map[string]any{"start": a, "end": b} }
	many := make([]any, 17)
	for i := range many {
		many[i] = win(i+1, i+1)
	}
	for _, c := range []struct {
		cli  []string
		mcp  map[string]any
		same bool // the tool answers (not its input schema): the same message
	}{
		{[]string{"--window", "5:2"}, map[string]any{"windows": []any{win(5, 2)}}, true},
		{[]string{"--offset", "3", "--around", "5#00"}, map[string]any{"offset": 3, "around": "5#00"}, true},
		{[]string{"--block", "4", "--window", "1:2"}, map[string]any{"block": 4, "windows": []any{win(1, 2)}}, true},
		{[]string{"--radius", "2"}, map[string]any{"radius": 2}, true},
		{[]string{"--around", "0#aa"}, map[string]any{"around": "0#aa"}, false},
		{[]string{"--around", "5"}, map[string]any{"around": "5"}, false},
		{[]string{"--offset", "0"}, map[string]any{"offset": 0}, false},
		{strings.Fields(strings.Repeat("--window 1:1 ", 17)), map[string]any{"windows": many}, false},
	} {
		var stdout, stderr strings.Builder
		code := run(append([]string{"read", "f.txt", "--format", "json"}, c.cli...), &stdout, &stderr)
		var env struct{ Code, Message string }
		if err := json.Unmarshal([]byte(stdout.String()), &env); err != nil || code != exitUsage || env.Code != "INVALID_INPUT" {
			t.Errorf("CLI %v: exit %d, %q %v; want exit %d, INVALID_INPUT", c.cli, code, stdout.String(), err, exitUsage)
			continue
		}
		args := map[string]any{"path": "f.txt"}
		for k, v := range c.mcp {
			args[k] = v
		}
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		text := r.Content[0].(*sdk.TextContent).Text
		if !r.IsError || !strings.HasPrefix(text, "INVALID_INPUT: ") {
			t.Errorf("MCP %v: %q, want INVALID_INPUT", c.mcp, text)
		}
		if want := "INVALID_INPUT: " + strings.ReplaceAll(strings.ReplaceAll(env.Message, "--window", "windows"), "--", ""); c.same && text != want {
			t.Errorf("MCP %v: %q\n CLI %v: %q", c.mcp, text, c.cli, want)
		}
	}
}
