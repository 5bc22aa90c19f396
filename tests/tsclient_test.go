package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTypeScriptSDKClient drives `fsguard mcp` with a client nobody on this
// project wrote: the official MCP TypeScript SDK (1.32.2, Client and
// StdioClientTransport, tests/tsclient/client.mjs), which also validates
// structuredContent against the read tool's outputSchema. It lists the
// tools, calls each, meets each kind of refusal, forgets, and reconnects
// with the same bound session. Node and the SDK come from scripts/deps.sh.
func TestTypeScriptSDKClient(t *testing.T) {
	t.Parallel()
	node := requireTool(t, "node", "tsclient/node_modules/@modelcontextprotocol/sdk")
	root := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 40; i++ {
		if i == 2 {
			b.WriteString("line 2\n")
			continue
		}
		b.WriteString("a line of the notes, long enough to be worth not sending twice\n")
	}
	writeFile(t, filepath.Join(root, "notes.md"), b.String(), 0o644)
	writeFile(t, filepath.Join(root, ".env"), "TOKEN=1\n", 0o644)
	writeFile(t, filepath.Join(root, "other.md"), "other\n", 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second) // a hang guard
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "tsclient/client.mjs", binary, root)
	cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+filepath.Join(t.TempDir(), "j.db"), "FSGUARD_POLICY=", "FSGUARD_SOCKET=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\n%s", err, stderr.String())
	}
	type res struct {
		IsError    bool
		Text       string
		Thrown     string
		Structured map[string]any
	}
	var got struct {
		Instructions string
		Tools        map[string]struct {
			Title                       string
			ReadOnly, Destructive, Open *bool
			OpenWorld                   *bool
			OutputSchema                bool
		}
		Read, Reread, Full, Denied, Missing, BadOffset, Check, Edit, Write, Stale, Forget, CheckAfterForget, ReconnectRead res
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Tools) != 5 {
		t.Fatalf("tools: %+v", got.Tools)
	}
	for name, tool := range got.Tools {
		readOnly := name == "read" || name == "check"
		if tool.Title == "" || tool.ReadOnly == nil || *tool.ReadOnly != readOnly || tool.OpenWorld == nil || *tool.OpenWorld {
			t.Errorf("tool %s: %+v", name, tool)
		}
		if destructive := name == "write" || name == "edit"; !readOnly && (tool.Destructive == nil || *tool.Destructive != destructive) {
			t.Errorf("tool %s destructive: %v", name, tool.Destructive)
		}
	}
	if !got.Tools["read"].OutputSchema || !strings.Contains(got.Instructions, "full: true") || !strings.Contains(got.Instructions, "forget") {
		t.Errorf("outputSchema or instructions: %+v %q", got.Tools["read"], got.Instructions)
	}
	expect := func(what string, r res, isError bool, prefix, status string) {
		t.Helper()
		if r.Thrown != "" || r.IsError != isError || !strings.Contains(r.Text, prefix) || (status != "" && r.Structured["status"] != status) {
			t.Errorf("%s: %+v", what, r)
		}
	}
	expect("read", got.Read, false, "1#", "ok")
	expect("re-read", got.Reread, false, "Unchanged since your last read", "ok")
	expect("full: true", got.Full, false, "1: a line", "ok")
	expect("denied", got.Denied, true, "DENIED: ", "error")
	expect("missing", got.Missing, true, "NOT_FOUND: ", "error")
	expect("check", got.Check, false, "fresh", "fresh")
	expect("edit", got.Edit, false, "line two", "edited")
	expect("write of a new file", got.Write, false, "created", "created")
	expect("write of an unread file", got.Stale, true, "FS_NOT_OBSERVED: ", "refused")
	expect("forget", got.Forget, false, "Forgotten", "")
	expect("check after forget", got.CheckAfterForget, true, "FS_NOT_OBSERVED: ", "refused")
	expect("read after reconnecting", got.ReconnectRead, false, "1: a line", "ok")
	// The schema's refusal, in fsguard's words, naming the argument.
	if !got.BadOffset.IsError || !strings.HasPrefix(got.BadOffset.Text, "INVALID_INPUT: offset: must be at least 1") {
		t.Errorf("offset 0: %+v", got.BadOffset)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "new.md")); string(b) != "fresh\n" {
		t.Errorf("new.md: %q", b)
	}
}
