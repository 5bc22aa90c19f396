package refusal

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestStructuredInMapsOnlyPaths: a refusal made of facts, shown in the
// caller's view, maps its path, roots and suggestions and nothing else —
// not a detail that happens to look like a host path.
func TestStructuredInMapsOnlyPaths(t *testing.T) {
	t.Parallel()
	view := func(host string) string {
		if rest, ok := strings.CutPrefix(host, "/srv/p/"); ok {
			return "/workspace/" + rest
		}
		return host
	}
	nf := Of(NotFoundName, OpRead, "/srv/p/a.go", Facts{Suggestions: []string{"/srv/p/a.g", "/srv/p/b.go"}})
	if got, want := nf.In(view).Error(), `cannot read "/workspace/a.go": not found; did you mean "/workspace/a.g" or "/workspace/b.go"?`; got != want {
		t.Errorf("In:\n got %s\nwant %s", got, want)
	}
	if nf.Suggestions[0] != "/srv/p/a.g" || nf.Path != "/srv/p/a.go" {
		t.Error("In changed the original")
	}
	out := Of(OutsideRoots, OpRead, "/etc/x", Facts{Roots: []string{"/srv/p/"}}).In(view)
	if got, want := out.Error(), `cannot read "/etc/x": outside the allowed roots ("/workspace/"); read a file inside one of them`; got != want {
		t.Errorf("roots:\n got %s\nwant %s", got, want)
	}
	io := Of(IOFailed, OpRead, "/srv/p/a.go", Facts{Detail: "/srv/p/literal"}).In(view)
	if got, want := io.Error(), `cannot read "/workspace/a.go": I/O error (/srv/p/literal); try again, and report it if it persists`; got != want {
		t.Errorf("detail:\n got %s\nwant %s", got, want)
	}
}

// TestDoorsOwnTheirWords: one refusal reads the same at the CLI and the
// socket and names the tools' own way at MCP; its code comes from its
// reason; and it survives the socket's JSON whole.
func TestDoorsOwnTheirWords(t *testing.T) {
	t.Parallel()
	e := Of(LinksNeedDaemon, OpRead, "/p/a", Facts{Total: 2})
	if e.Code != Denied {
		t.Errorf("code %s, want %s", e.Code, Denied)
	}
	cli, mcp := e.Render(CLI), e.Render(MCP)
	if !strings.Contains(cli, "through the daemon (--socket)") || e.Render(Socket) != cli {
		t.Errorf("CLI/socket: %s", cli)
	}
	if !strings.Contains(mcp, "through the daemon (fsguard mcp --socket)") || strings.Contains(mcp, "(--socket)") {
		t.Errorf("MCP: %s", mcp)
	}
	b, err := json.Marshal(e.Because(errors.New("hidden /srv/secret")))
	if err != nil || strings.Contains(string(b), "secret") {
		t.Fatalf("JSON %s (%v) carries the cause", b, err)
	}
	var back Error
	if err := json.Unmarshal(b, &back); err != nil || back.Render(MCP) != mcp || back.Code != Denied {
		t.Errorf("round trip: %s (%v)", back.Render(MCP), err)
	}
	for r := range table {
		if r.Code() == "" {
			t.Errorf("reason %s has no code", r)
		}
	}
}

// TestMCPNamesNoFlag: no refusal, whatever its reason, tells an MCP client
// to use a flag of a command it does not run (only the MCP server's own
// --socket), and none tells a CLI user to pass a tool argument.
func TestMCPNamesNoFlag(t *testing.T) {
	t.Parallel()
	f := Facts{Arg: "offset", Options: []string{"offset", "around"}, Got: "x", Anchor: "1#ab", AnchorTo: "2#cd", Now: "1#ef", Kind: "FIFO"}
	for r := range table {
		e := Of(r, OpEdit, "/p/a", f)
		if m := e.Render(MCP); strings.Contains(strings.ReplaceAll(m, "fsguard mcp --socket", ""), "--") {
			t.Errorf("%s at MCP: %s", r, m)
		}
		if c := e.Render(CLI); strings.Contains(c, "anchors: true") || strings.Contains(c, "the write tool") {
			t.Errorf("%s at the CLI: %s", r, c)
		}
	}
}
