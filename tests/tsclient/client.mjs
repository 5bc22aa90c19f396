// Drives `fsguard mcp` with the official MCP TypeScript SDK client
// (Client + StdioClientTransport), as a real agent's client would, and
// prints what it saw as one JSON object for TestTypeScriptSDKClient.
// Usage: node client.mjs FSGUARD_BINARY ROOT
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, root] = process.argv.slice(2);

async function connect(args) {
  const transport = new StdioClientTransport({ command: bin, args: ["mcp", ...args], cwd: root, env: process.env, stderr: "pipe" });
  const client = new Client({ name: "fsguard-ts-test", version: "1" });
  await client.connect(transport);
  return client;
}

// call returns what a tool answered, or the SDK's own error (it validates
// structuredContent against the tool's outputSchema).
async function call(client, name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    return { isError: r.isError ?? false, text: r.content?.[0]?.text ?? "", structured: r.structuredContent ?? null };
  } catch (e) {
    return { thrown: String(e.message ?? e) };
  }
}

const out = {};
const c = await connect(["--session", "agent-7"]);
out.server = c.getServerVersion();
out.instructions = c.getInstructions() ?? "";
const tools = await c.listTools();
out.tools = Object.fromEntries(tools.tools.map((t) => [t.name, {
  title: t.title ?? "",
  readOnly: t.annotations?.readOnlyHint ?? null,
  destructive: t.annotations?.destructiveHint ?? null,
  openWorld: t.annotations?.openWorldHint ?? null,
  outputSchema: Boolean(t.outputSchema),
}]));
out.read = await call(c, "read", { path: "notes.md", anchors: true });
out.reread = await call(c, "read", { path: "notes.md" });
out.full = await call(c, "read", { path: "notes.md", full: true });
out.denied = await call(c, "read", { path: ".env" });
out.missing = await call(c, "read", { path: "nope.md" });
out.badOffset = await call(c, "read", { path: "notes.md", offset: 0 });
out.check = await call(c, "check", { path: "notes.md" });
out.edit = await call(c, "edit", { path: "notes.md", old_string: "line 2\n", new_string: "line two\n" });
out.write = await call(c, "write", { path: "new.md", content: "fresh\n" });
out.stale = await call(c, "write", { path: "other.md", content: "x\n" });
out.forget = await call(c, "forget", {});
out.checkAfterForget = await call(c, "check", { path: "notes.md" });
await c.close();

// The reconnect: the same bound session, a new connection.
const c2 = await connect(["--session", "agent-7"]);
out.reconnectRead = await call(c2, "read", { path: "notes.md" });
await c2.close();
console.log(JSON.stringify(out));
