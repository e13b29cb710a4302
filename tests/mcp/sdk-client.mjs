// SPDX-License-Identifier: MIT
//
// Drives `ward mcp` with the official MCP TypeScript SDK, as an agent would:
// connect over stdio, list the tools, run commands, keep a session going, type
// into a terminal session, interrupt, cancel, follow progress, end sessions,
// disconnect. Prints TAP. Usage: node sdk-client.mjs WARD WORKDIR
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readdirSync, readFileSync, existsSync, writeFileSync } from "node:fs";

const [ward, work] = process.argv.slice(2);
let n = 0;
let failed = 0;
const plan = 17;
console.log(`1..${plan}`);

function ok(cond, name, diag) {
  n++;
  if (cond) {
    console.log(`ok ${n} - ${name}`);
  } else {
    failed++;
    console.log(`not ok ${n} - ${name}`);
    if (diag !== undefined)
      for (const l of String(typeof diag === "string" ? diag : JSON.stringify(diag, null, 1)).split("\n"))
        console.log(`# ${l}`);
  }
}

function text(res) {
  return res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
}

// Host processes whose command line holds marker (none may outlive their session).
function hostProcesses(marker) {
  const found = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      if (cmd.includes(marker) && !cmd.includes("sdk-client")) found.push(`${pid}: ${cmd}`);
    } catch {}
  }
  return found;
}

async function eventually(cond, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

const transport = new StdioClientTransport({
  command: ward,
  // No login shell: the host's profile (pyenv, nvm...) must not add output to compare.
  args: ["mcp", "-C", work, "--no-login"],
  stderr: "inherit",
});
const client = new Client({ name: "ward-sdk-test", version: "1.0.0" });

async function call(name, args, opts) {
  return client.callTool({ name, arguments: args }, undefined, opts);
}

// Polls a session until its output contains needle or it exits.
async function pollUntil(id, needle) {
  let all = "";
  for (let i = 0; i < 20; i++) {
    const r = await call("write_stdin", { session_id: id, chars: "", yield_time_ms: 5000 });
    all += r.structuredContent.output;
    if (r.structuredContent.exit_code !== undefined || all.includes(needle))
      return { all, last: r };
  }
  return { all, last: null };
}

try {
  await client.connect(transport);
  const info = client.getServerVersion();
  ok(info && info.name === "ward", "initialize: the server is ward", info);

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  ok(
    // The changes tools come with a journal (none where the home cannot hold one: uid 65534's).
    [JSON.stringify(["exec_command", "kill_session", "list_sessions", "write_stdin"]),
     JSON.stringify([
       "changes_apply", "changes_discard", "changes_list", "changes_show", "changes_undo",
       "exec_command", "kill_session", "list_sessions", "write_stdin",
     ])].includes(JSON.stringify(names)) &&
      tools.find((t) => t.name === "exec_command").inputSchema.required[0] === "cmd",
    "tools/list: exec_command, write_stdin, list_sessions, kill_session and the changes tools with schemas",
    names,
  );

  // A quick command returns its status and output at once.
  let r = await call("exec_command", { cmd: "echo hello; exit 3" });
  ok(
    !r.isError && r.structuredContent.exit_code === 3 && r.structuredContent.output === "hello\n" &&
      text(r).includes("Process exited with code 3\n") && text(r).startsWith("Chunk ID: ") &&
      r.structuredContent.wall_time_seconds < 9,
    "exec_command: a quick command's exit code and output, in Codex's layout",
    r,
  );

  // A long command becomes a session, its later output comes through polls.
  r = await call("exec_command", { cmd: "echo start; sleep 1; echo end", yield_time_ms: 250 });
  const sid = r.structuredContent.session_id;
  ok(
    Number.isInteger(sid) && sid >= 1000 && sid <= 99999 && r.structuredContent.output === "start\n" &&
      text(r).includes(`Process running with session ID ${sid}`),
    "exec_command: a long command returns a session id",
    r,
  );
  let p = await pollUntil(sid, "\u0001");
  ok(p.all.includes("end\n") && p.last && p.last.structuredContent.exit_code === 0,
    "write_stdin: polls return the later output and the exit code", p);

  // A terminal session: an interactive shell keeps its state between calls.
  r = await call("exec_command", {
    cmd: "PS1='ward$ ' exec bash --norc --noprofile -i",
    tty: true,
    yield_time_ms: 1000,
  });
  const tid = r.structuredContent.session_id;
  r = await call("write_stdin", { session_id: tid, chars: "X=$((6*7)); echo value=$X\n", yield_time_ms: 1000 });
  let seen = r.structuredContent.output;
  if (!seen.includes("value=42")) seen += (await pollUntil(tid, "value=42")).all;
  ok(seen.includes("value=42"), "tty session: bash -i answers typed input", seen);
  r = await call("write_stdin", { session_id: tid, chars: "exit 4\n", yield_time_ms: 2000 });
  if (r.structuredContent.exit_code === undefined) r = (await pollUntil(tid, "\u0001")).last;
  ok(r && r.structuredContent.exit_code === 4, "tty session: exit ends the session with its code", r);

  // Ctrl-C without a tty interrupts the process group.
  r = await call("exec_command", { cmd: "exec sleep 100", yield_time_ms: 300 });
  const cid = r.structuredContent.session_id;
  r = await call("write_stdin", { session_id: cid, chars: "\u0003", yield_time_ms: 3000 });
  if (r.structuredContent.exit_code === undefined) r = (await pollUntil(cid, "\u0001")).last;
  ok(r && r.structuredContent.exit_code === 130, "write_stdin \\u0003 interrupts (exit 130)", r);

  // Errors a model can act on are tool errors, with a message.
  r = await call("write_stdin", { session_id: 424242, chars: "" });
  ok(r.isError && text(r).includes("Unknown process id 424242"), "unknown session: a tool error", r);
  r = await call("exec_command", { cmd: 5 });
  ok(r.isError && text(r).includes("'cmd' must be a string"), "bad arguments: a tool error", r);
  let threw = null;
  try {
    await call("no_such_tool", {});
  } catch (e) {
    threw = e;
  }
  ok(threw && threw.code === -32602, "unknown tool: a JSON-RPC error -32602", String(threw));

  // The sandbox: a write outside the workspace is refused and reported exactly.
  r = await call("exec_command", { cmd: "touch /etc/ward-mcp-probe; echo rc=$?" });
  const d = r.structuredContent.denials;
  ok(
    !existsSync("/etc/ward-mcp-probe") && r.structuredContent.output.includes("rc=1") &&
      (d === "unavailable" ||
        (Array.isArray(d) && d.some((x) => x === "create /etc/ward-mcp-probe by openat (Read-only file system; outside the writable roots)"))) ||
      (process.getuid() !== 0 && !existsSync("/etc/ward-mcp-probe")),
    "sandbox: the host is unchanged and the denial is reported",
    r,
  );

  // Progress notifications while a call waits, when the client asks for them.
  const progress = [];
  r = await call(
    "exec_command",
    { cmd: "sleep 2.5; echo done", yield_time_ms: 30000 },
    { onprogress: (p) => progress.push(p), timeout: 60000 },
  );
  ok(
    r.structuredContent.output === "done\n" && progress.length >= 1 &&
      progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress),
    "progress: notifications while the command runs",
    { progress, r },
  );

  // Cancelling a waiting call: no answer, the server goes on, the session stays.
  r = await call("exec_command", { cmd: "sleep 1000.5151", yield_time_ms: 250 });
  const kid = r.structuredContent.session_id;
  const ac = new AbortController();
  const waiting = call("write_stdin", { session_id: kid, chars: "", yield_time_ms: 300000 }, { signal: ac.signal });
  setTimeout(() => ac.abort(), 300);
  let cancelled = false;
  try {
    await waiting;
  } catch {
    cancelled = true;
  }
  await client.ping();
  const list = await call("list_sessions", {});
  ok(
    cancelled && list.structuredContent.sessions.some((s) => s.session_id === kid && s.running),
    "cancellation: the call stops waiting, the session stays",
    list,
  );

  // kill_session ends everything in the session's sandbox.
  ok(hostProcesses("sleep 1000.5151").length > 0, "the session's process runs on the host");
  r = await call("kill_session", { session_id: kid });
  ok(
    !r.isError && r.structuredContent.exit_code === 137 &&
      (await eventually(() => hostProcesses("sleep 1000.5151").length === 0)),
    "kill_session: nothing of the session is left",
    { r, left: hostProcesses("sleep 1000.5151") },
  );

  // Closing the connection kills every session.
  await call("exec_command", { cmd: "sleep 1000.5252", yield_time_ms: 250 });
  await call("exec_command", { cmd: "sleep 1000.5252", tty: true, yield_time_ms: 250 });
  await client.close();
  ok(
    await eventually(() => hostProcesses("sleep 1000.5252").length === 0),
    "disconnect: every session is killed",
    hostProcesses("sleep 1000.5252"),
  );
} catch (e) {
  failed++;
  console.log(`not ok ${++n} - unexpected error`);
  for (const l of String(e && e.stack ? e.stack : e).split("\n")) console.log(`# ${l}`);
}
if (n !== plan) console.log(`# ran ${n} of ${plan}`);
process.exit(failed || n !== plan ? 1 : 0);
