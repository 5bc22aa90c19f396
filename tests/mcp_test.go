package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/fsguard/fsguard/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestMCPTranscript drives `fsguard mcp` from the SDK's real client over a
// pipe: it lists the tools, reads a file in two pages by following the
// continuation, is refused .env, and gets FS_STALE_VERSION for a stale
// write. The exchange, with the temp dir replaced by $ROOT, must match
// tests/testdata/mcp.golden.
func TestMCPTranscript(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	writeFile(t, filepath.Join(root, "notes.md"), b.String(), 0o644)
	writeFile(t, filepath.Join(root, ".env"), "TOKEN=secret\n", 0o644)
	cmd := exec.Command(binary, "mcp", "--session", "mcp-test")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+filepath.Join(t.TempDir(), "j.db"), "FSGUARD_POLICY=", "FSGUARD_SOCKET=")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "fsguard-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	var tr strings.Builder
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		schema, _ := json.Marshal(tool.InputSchema)
		fmt.Fprintf(&tr, "tool %s %s\n", tool.Name, schema)
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		a, _ := json.Marshal(args)
		fmt.Fprintf(&tr, "\n> %s %s (isError=%v)\n", name, a, res.IsError)
		for _, c := range res.Content {
			fmt.Fprintf(&tr, "%s\n", c.(*mcp.TextContent).Text)
		}
		return res
	}
	first := call("read", map[string]any{"path": "notes.md", "limit": 20})
	m := regexp.MustCompile(`Use offset=(\d+) to continue`).FindStringSubmatch(first.Content[0].(*mcp.TextContent).Text)
	if m == nil {
		t.Fatalf("first page has no continuation")
	}
	next, _ := strconv.Atoi(m[1])
	second := call("read", map[string]any{"path": "notes.md", "offset": next, "limit": 20})
	if !strings.Contains(second.Content[0].(*mcp.TextContent).Text, "(End of file - total 30 lines)") {
		t.Fatal("second page did not reach the end")
	}
	// The other read modes: several windows, a window around an anchor, a
	// directory (the denied .env neither shown nor counted).
	if r := call("read", map[string]any{"path": "notes.md", "windows": []map[string]any{{"start": 2, "end": 3}, {"start": 28, "end": 29}}, "full": true}); r.IsError ||
		!strings.Contains(r.Content[0].(*mcp.TextContent).Text, "28: line 28") {
		t.Fatal("windows")
	}
	call("read", map[string]any{"path": "notes.md", "around": "5#00", "radius": 1, "full": true})
	if r := call("read", map[string]any{"path": "."}); r.IsError || strings.Contains(r.Content[0].(*mcp.TextContent).Text, ".env") {
		t.Fatal("directory")
	}
	if r := call("read", map[string]any{"path": "notes.md", "around": "5#00", "offset": 3}); !r.IsError {
		t.Fatal("around with offset was not refused")
	}
	if r := call("read", map[string]any{"path": ".env"}); !r.IsError || !strings.HasPrefix(r.Content[0].(*mcp.TextContent).Text, "DENIED: ") {
		t.Fatal(".env was not refused with DENIED")
	}
	// Bad input is refused by the schema, before the tool runs.
	for _, bad := range []map[string]any{{"path": ""}, {"path": "notes.md", "limit": 0}, {"path": "notes.md", "extra": 1},
		{"path": "notes.md", "windows": []any{}}, {"path": "notes.md", "windows": []any{map[string]any{"start": 0, "end": 1}}}, {"path": "notes.md", "around": "5"}} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: bad})
		if err == nil && !res.IsError {
			t.Errorf("schema accepted %v", bad)
		}
	}
	os.WriteFile(filepath.Join(root, "notes.md"), []byte("changed outside\n"), 0o644)
	if r := call("write", map[string]any{"path": "notes.md", "content": "mine\n"}); !r.IsError || !strings.HasPrefix(r.Content[0].(*mcp.TextContent).Text, "FS_STALE_VERSION: ") {
		t.Fatal("stale write was not refused with FS_STALE_VERSION")
	}
	call("read", map[string]any{"path": "notes.md"})
	call("write", map[string]any{"path": "notes.md", "content": "mine\n"})
	// edit: by exact text, then by the anchor its answer shows.
	r := call("edit", map[string]any{"path": "notes.md", "old_string": "mine", "new_string": "ours\nand theirs"})
	a := regexp.MustCompile(`(?m)^(2#[0-9a-f]{2}): and theirs$`).FindStringSubmatch(r.Content[0].(*mcp.TextContent).Text)
	if r.IsError || a == nil {
		t.Fatalf("exact-text edit: %v", r.Content)
	}
	call("edit", map[string]any{"path": "notes.md", "replace": a[1], "text": "and everyone's"})
	if r := call("edit", map[string]any{"path": "notes.md", "delete": a[1], "old_string": "x", "new_string": "y"}); !r.IsError || !strings.HasPrefix(r.Content[0].(*mcp.TextContent).Text, "INVALID_INPUT: ") {
		t.Fatal("two edits at once were not refused with INVALID_INPUT")
	}
	call("read", map[string]any{"path": "notes.md", "anchors": true})
	if b, _ := os.ReadFile(filepath.Join(root, "notes.md")); string(b) != "ours\nand everyone's\n" {
		t.Fatalf("file after the edits: %q", b)
	}

	got := strings.ReplaceAll(tr.String(), root, "$ROOT")
	golden := filepath.Join("testdata", "mcp.golden")
	if *update {
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./tests -run TestMCPTranscript -update)", err)
	}
	if got != string(want) {
		t.Fatalf("transcript differs from %s:\n%s", golden, got)
	}
}

// TestMCPSurvivesBadInput speaks raw JSON-RPC lines to `fsguard mcp`, as a
// broken or hostile client would: a line that is not JSON, a JSON value
// that is not a message, and a line over --max-frame each get an error
// answer, and the request after them is served in the same session.
func TestMCPSurvivesBadInput(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "notes.md"), "hello\n", 0o644)
	cmd := exec.Command(binary, "mcp", "--session", "raw", "--max-frame", "4096")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+filepath.Join(t.TempDir(), "j.db"), "FSGUARD_POLICY=", "FSGUARD_SOCKET=")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outPipe)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the server exited before answering %s", what)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%s: answer is not JSON: %s", what, l)
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer to %s in 30s", what)
		}
		return nil
	}
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(in, s+"\n"); err != nil {
			t.Fatalf("the server stopped reading: %v", err)
		}
	}
	errCode := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := next("initialize"); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":`)
	if m := next("a malformed line"); errCode(m) != -32700 {
		t.Errorf("a malformed line got %v, want error -32700", m)
	}
	send(`[1, 2, 3]`)
	if m := next("a JSON value that is no message"); errCode(m) != -32600 {
		t.Errorf("a non-message got %v, want error -32600", m)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write","arguments":{"path":"x","content":"` + strings.Repeat("a", 8192) + `"}}}`)
	if m := next("an oversized line"); errCode(m) != -32600 {
		t.Errorf("an oversized line got %v, want error -32600", m)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read","arguments":{"path":"notes.md"}}}`)
	m := next("a good request after the bad ones")
	b, _ := json.Marshal(m)
	if m["id"] != float64(4) || !strings.Contains(string(b), "1: hello") {
		t.Fatalf("the request after bad input was not served: %s", b)
	}
	if _, err := os.Stat(filepath.Join(root, "x")); err == nil {
		t.Error("the oversized write was performed")
	}
	in.Close()
}

// TestMCPSpeaksMCP: a re-read of lines the session holds is a notice that
// names the MCP argument (full: true), not a CLI flag, and full: true sends
// the lines.
func TestMCPSpeaksMCP(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "notes.md"), strings.Repeat("a line long enough to be worth a notice\n", 5), 0o644)
	cmd := exec.Command(binary, "mcp", "--session", "speak")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+filepath.Join(t.TempDir(), "j.db"), "FSGUARD_POLICY=", "FSGUARD_SOCKET=")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	read := func(args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("read %v: %v %v", args, err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if ir := cs.InitializeResult(); ir == nil || !strings.Contains(ir.Instructions, "full: true") {
		t.Errorf("no instructions on how the tools fit together: %+v", ir)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		a := tool.Annotations
		readOnly := tool.Name == "read" || tool.Name == "check"
		if a == nil || a.ReadOnlyHint != readOnly || a.OpenWorldHint == nil || *a.OpenWorldHint || tool.Title == "" {
			t.Errorf("tool %s: annotations %+v, title %q", tool.Name, a, tool.Title)
		} else if tool.Name == "forget" && (a.DestructiveHint == nil || *a.DestructiveHint || !a.IdempotentHint) {
			t.Errorf("forget changes no file and may be called again: %+v", a)
		} else if !readOnly && tool.Name != "forget" && (a.DestructiveHint == nil || !*a.DestructiveHint) {
			t.Errorf("tool %s is not marked destructive", tool.Name)
		}
		if tool.Name != "forget" && tool.OutputSchema == nil {
			t.Errorf("the %s tool declares no outputSchema for its structuredContent", tool.Name)
		}
	}
	read(map[string]any{"path": "notes.md"})
	if got := read(map[string]any{"path": "notes.md"}); !strings.Contains(got, "Use full: true to see them again") || strings.Contains(got, "--no-dedupe") {
		t.Errorf("a held re-read over MCP: %q", got)
	}
	if got := read(map[string]any{"path": "notes.md", "full": true}); !strings.Contains(got, "5: a line long enough") {
		t.Errorf("full: true did not send the lines: %q", got)
	}
	// The facts travel as structuredContent too, for clients that use them.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": "notes.md", "limit": 2, "full": true}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	var facts struct {
		Status       string
		Continuation struct {
			Path   string
			Offset int64
		}
		Totals      struct{ Lines int64 }
		Observation *struct{ StatID string }
	}
	json.Unmarshal(sc, &facts)
	if facts.Status != "ok" || facts.Continuation.Path != "notes.md" || facts.Continuation.Offset != 3 || facts.Totals.Lines != 5 || facts.Observation == nil || facts.Observation.StatID == "" {
		t.Errorf("structuredContent: %s", sc)
	}
	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": ".env"}})
	if sc, _ := json.Marshal(res.StructuredContent); !res.IsError || !strings.Contains(string(sc), `"code":"DENIED"`) {
		t.Errorf("a refusal's structuredContent: %s", sc)
	}
}

// TestMCPBoundSessionStartsEmpty: a new connection bound to an operator's
// session id holds nothing its predecessors were shown (its model was
// shown nothing yet), unless --resume; forget drops what a connection
// holds. Holding less only ever asks for more: lines are sent, a write
// needs a read.
func TestMCPBoundSessionStartsEmpty(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// Long enough that a notice is shorter than its lines.
	writeFile(t, filepath.Join(root, "notes.md"), strings.Repeat("a line of notes long enough to be worth not sending again\n", 30), 0o644)
	j := filepath.Join(t.TempDir(), "j.db")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func(args ...string) func(tool string, a map[string]any) (string, bool) {
		cmd := exec.Command(binary, append([]string{"mcp", "--session", "agent-7"}, args...)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+j, "FSGUARD_POLICY=", "FSGUARD_SOCKET=")
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return func(tool string, a map[string]any) (string, bool) {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
			if err != nil {
				t.Fatal(err)
			}
			return r.Content[0].(*mcp.TextContent).Text, r.IsError
		}
	}
	held := func(text string) bool { return strings.Contains(text, "Unchanged since your last read") }
	notes := map[string]any{"path": "notes.md"}

	a := connect()
	if got, _ := a("read", notes); held(got) {
		t.Fatalf("first read of a new connection: %q", got)
	}
	if got, _ := a("read", notes); !held(got) {
		t.Fatalf("second read in the same connection: %q", got)
	}
	b := connect()
	if got, isErr := b("check", notes); !isErr || !strings.HasPrefix(got, "FS_NOT_OBSERVED") {
		t.Fatalf("check in a new connection before its first read: %q", got)
	}
	if got, _ := b("read", notes); held(got) {
		t.Fatalf("a new connection bound to the session was told it holds the lines: %q", got)
	}
	if got, _ := connect("--resume")("read", notes); !held(got) {
		t.Fatalf("--resume: %q", got)
	}
	if got, isErr := b("forget", map[string]any{}); isErr || !strings.HasPrefix(got, "Forgotten") {
		t.Fatalf("forget: %q", got)
	}
	if got, isErr := b("check", notes); !isErr || !strings.HasPrefix(got, "FS_NOT_OBSERVED") {
		t.Fatalf("check after forget: %q", got)
	}
	if got, _ := b("read", notes); held(got) {
		t.Fatalf("read after forget: %q", got)
	}
	if got, isErr := b("check", notes); isErr {
		t.Fatalf("check after a read that follows forget: %q", got)
	}
}

// TestMCPAnswersEveryRequestBeforeEOF: a client that writes its requests
// and closes stdin at once (a script, a client exiting) gets an answer to
// every one of them before the server exits.
func TestMCPAnswersEveryRequestBeforeEOF(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), strings.Repeat("a line\n", 2000), 0o644)
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	const calls = 20
	for i := range calls {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read","arguments":{"path":"a.txt","offset":%d,"limit":50,"full":true}}}`+"\n", 100+i, 1+i*50)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.HangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "mcp")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+filepath.Join(t.TempDir(), "j.db"), "FSGUARD_POLICY=", "FSGUARD_SOCKET=")
	cmd.Stdin = strings.NewReader(in.String()) // closed once written
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fsguard mcp: %v", err)
	}
	answered := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m struct {
			ID     int
			Result *struct{ IsError bool }
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Result != nil && !m.Result.IsError {
			answered[m.ID] = true
		}
	}
	for i := range calls {
		if !answered[100+i] {
			t.Errorf("request %d was not answered before exit (%d of %d answered)", 100+i, len(answered)-1, calls)
		}
	}
}

// TestMCPRelativePathsFromTheProject: the model names src/main.go, not a
// path relative to wherever its client started the server: a relative
// path resolves against the server's working directory when that lies in
// a root, else against the only root; with several roots and a working
// directory outside them, it is refused naming the roots.
func TestMCPRelativePathsFromTheProject(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root, other, elsewhere := filepath.Join(base, "project"), filepath.Join(base, "other"), filepath.Join(base, "elsewhere")
	writeFile(t, filepath.Join(root, "src", "main.go"), "package main // in the project\n", 0o644)
	writeFile(t, filepath.Join(root, "src", "util.go"), "package main // util\n", 0o644)
	writeFile(t, filepath.Join(other, "x.txt"), "x\n", 0o644)
	writeFile(t, filepath.Join(elsewhere, "src", "main.go"), "package main // NOT the project\n", 0o644)
	one, two := filepath.Join(base, "one.toml"), filepath.Join(base, "two.toml")
	writePolicy(t, one, []string{root}, "")
	writePolicy(t, two, []string{root, other}, "")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.HangGuard)
	defer cancel()
	call := func(policy, dir, path string) (string, bool) {
		t.Helper()
		cmd := exec.Command(binary, "mcp", "--policy", policy)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+filepath.Join(t.TempDir(), "j.db"), "FSGUARD_POLICY=", "FSGUARD_SOCKET=")
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": path}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	if got, isErr := call(one, elsewhere, "src/main.go"); isErr || !strings.Contains(got, "in the project") {
		t.Errorf("one root, cwd outside it: %q (error %v)", got, isErr)
	}
	if got, isErr := call(one, filepath.Join(root, "src"), "util.go"); isErr || !strings.Contains(got, "// util") {
		t.Errorf("cwd inside the root: %q (error %v)", got, isErr)
	}
	got, isErr := call(two, elsewhere, "src/main.go")
	if !isErr || !strings.HasPrefix(got, "OUTSIDE_ALLOWED_ROOTS") || !strings.Contains(got, root) || !strings.Contains(got, other) || strings.Contains(got, "NOT the project") {
		t.Errorf("two roots, cwd outside: %q (error %v)", got, isErr)
	}
}

// TestMCPClientSnippetsWork: the README's snippets for Claude Code, Cursor
// and Codex CLI, parsed in each client's own format, name one server
// command, and that command, pointed at a real daemon's socket and started
// outside the mount (as a client starts it), serves the project: a
// relative path is the project's file.
func TestMCPClientSnippetsWork(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := func(lang string) string {
		t.Helper()
		m := regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
		for _, b := range m {
			if strings.Contains(b[1], "mcp") {
				return b[1]
			}
		}
		t.Fatalf("no %s snippet with mcp in the README", lang)
		return ""
	}
	var argvs [][]string
	// Claude Code: claude mcp add NAME -- COMMAND ARGS...
	_, claude, ok := strings.Cut(strings.TrimSpace(block("sh")), "claude mcp add fsguard -- ")
	if !ok {
		t.Fatal("no `claude mcp add fsguard -- ...` in the README")
	}
	argvs = append(argvs, strings.Fields(claude))
	var cursor struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(block("json")), &cursor); err != nil {
		t.Fatalf("Cursor's mcp.json: %v", err)
	}
	argvs = append(argvs, append([]string{cursor.MCPServers["fsguard"].Command}, cursor.MCPServers["fsguard"].Args...))
	var codex struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
		} `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(block("toml"), &codex); err != nil {
		t.Fatalf("Codex's config.toml: %v", err)
	}
	argvs = append(argvs, append([]string{codex.MCPServers["fsguard"].Command}, codex.MCPServers["fsguard"].Args...))
	for _, a := range argvs[1:] {
		if strings.Join(a, " ") != strings.Join(argvs[0], " ") {
			t.Fatalf("the snippets name different commands: %q", argvs)
		}
	}
	argv := argvs[0]
	if argv[0] != "fsguard" || len(argv) < 3 || argv[1] != "mcp" {
		t.Fatalf("the server command %q", argv)
	}

	base := t.TempDir()
	root, mp, sock := filepath.Join(base, "project"), filepath.Join(base, "workspace"), filepath.Join(base, "fsguard.sock")
	writeFile(t, filepath.Join(root, "src", "main.go"), "package main // through the mount\n", 0o644)
	os.MkdirAll(mp, 0o755)
	policy := filepath.Join(base, "policy.toml")
	writePolicy(t, policy, []string{root}, "")
	startMount(t, mp, "--policy", policy, "--socket", sock)
	args := append([]string(nil), argv[1:]...)
	for i, a := range args {
		if a == "/run/fsguard/fsguard.sock" {
			args[i] = sock
		}
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = t.TempDir() // a client starts its server wherever it runs
	cmd.Env = append(os.Environ(), "FSGUARD_POLICY=", "FSGUARD_SOCKET=")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.HangGuard)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": "src/main.go"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "through the mount") {
		t.Fatalf("read src/main.go through the snippet's server: %v %+v", err, res)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(got, "<path>"+filepath.Join(mp, "src", "main.go")+"</path>") {
		t.Errorf("the path is not shown in the mount's view: %q", got)
	}
}
