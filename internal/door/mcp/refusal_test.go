package mcp

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/service/api"
	"github.com/fsguard/fsguard/internal/service/session"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRefusalsInTheToolsWords: a refusal that reaches the MCP server as
// data, through the control socket's JSON, is said in the tools' words in
// the text and in structuredContent alike, where the CLI says it with its
// flags.
func TestRefusalsInTheToolsWords(t *testing.T) {
	t.Parallel()
	r := refusal.Of(refusal.LinksNeedDaemon, refusal.OpRead, "/w/a.txt", refusal.Facts{Total: 2})
	cli := session.RenderRead("a.txt", nil, r, "")
	wire, err := json.Marshal(cli) // as the control socket sends it
	if err != nil {
		t.Fatal(err)
	}
	srv := New("test", "", false, func(api.Request, io.Reader) session.Output {
		var out session.Output
		if err := json.Unmarshal(wire, &out); err != nil {
			t.Error(err)
		}
		return out
	})
	res, err := connect(t, srv).CallTool(context.Background(), &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": "a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	want := "DENIED: " + r.Render(refusal.MCP)
	if !res.IsError || text != want || !strings.Contains(text, "fsguard mcp --socket") {
		t.Errorf("tool error %q,\nwant %q", text, want)
	}
	if !strings.Contains(cli.Message, "(--socket)") {
		t.Errorf("the CLI's message %q lost its flag", cli.Message)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	var facts session.ReadFacts
	if err := json.Unmarshal(sc, &facts); err != nil || facts.Message != r.Render(refusal.MCP) || facts.Code != "DENIED" {
		t.Errorf("structuredContent %s (%v)", sc, err)
	}
}
