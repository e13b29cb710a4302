// SPDX-License-Identifier: MIT
//
// `ward mcp -a MODE` with the official MCP TypeScript SDK as the client: a
// client that supports elicitation is asked (elicitation/create) while the
// model's tool call waits, and its answer decides whether the command runs, in
// or outside the sandbox; a client without elicitation gets the fallback (not
// run, a tool error telling the model what to ask). Every effect is checked
// on the host, and in the audit log. Prints TAP.
// Usage: node sdk-approval.mjs WARD DIR (DIR: empty, not under /tmp)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";

const [ward, dir] = process.argv.slice(2);
const ws = `${dir}/ws`;
const outside = `${dir}/outside`; // not writable in the sandbox (neither workspace nor /tmp)
mkdirSync(ws);
mkdirSync(outside);
mkdirSync(`${dir}/state`);
mkdirSync(`${dir}/config`);
const env = { ...process.env, XDG_STATE_HOME: `${dir}/state`, XDG_CONFIG_HOME: `${dir}/config` };
const audit = `${dir}/state/ward/audit.jsonl`;

let n = 0;
let failed = 0;
const plan = 28;
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

// A client of ward mcp with these options; answer(question) decides (null: no elicitation).
async function connect(args, answer) {
  const transport = new StdioClientTransport({
    command: ward,
    args: ["mcp", "-C", ws, "--no-login", ...args],
    env,
    stderr: "inherit",
  });
  const caps = answer ? { capabilities: { elicitation: {} } } : {};
  const client = new Client({ name: "ward-sdk-approval", version: "1.0.0" }, caps);
  const asked = [];
  if (answer)
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      return answer(req.params, asked.length);
    });
  await client.connect(transport);
  const call = (args) => client.callTool({ name: "exec_command", arguments: args });
  return { client, asked, call };
}

const later = (ms, v) => new Promise((r) => setTimeout(() => r(v), ms));
const decision = (d) => ({ action: "accept", content: { decision: d } });

try {
  // ---------------------------------------------------------------- untrusted, a client that asks
  {
    const answers = [];
    const { client, asked, call } = await connect(["-a", "untrusted"], (q, i) => answers.shift()(q, i));

    // The call waits for the person: answered after 700 ms, the command runs then.
    answers.push(() => later(700, decision("approved")));
    const t0 = Date.now();
    let r = await call({ cmd: "touch approved-file && echo made" });
    ok(asked.length === 1 && asked[0].message.includes("touch approved-file") &&
       asked[0].requestedSchema.properties.decision !== undefined,
       "a command the mode does not trust is asked about, with the command shown", asked);
    ok(!r.isError && r.structuredContent.output === "made\n" && Date.now() - t0 >= 650 &&
       existsSync(`${ws}/approved-file`),
       "the tool call waits for the answer, then the command runs", r);

    // No: not run, the model is told.
    answers.push(() => decision("denied"));
    r = await call({ cmd: "touch denied-file" });
    ok(r.isError && text(r).includes("rejected by user") && !existsSync(`${ws}/denied-file`),
       "denied: not run, a tool error says the person refused", r);

    // For this session: the same command in the same directory is not asked again.
    answers.push(() => decision("approved_for_session"));
    r = await call({ cmd: "touch session-file" });
    const before = asked.length;
    r = await call({ cmd: "touch session-file" });
    ok(!r.isError && asked.length === before && existsSync(`${ws}/session-file`),
       "approved for the session: not asked again for the same command", { asked: asked.length, before, r });
    answers.push(() => decision("denied"));
    r = await call({ cmd: "touch session-file", workdir: outside });
    ok(asked.length === before + 1 && r.isError,
       "the session approval is scoped to its directory: asked again elsewhere", { asked: asked.length, r });

    // Known safe: no question at all.
    const k = asked.length;
    r = await call({ cmd: "ls" });
    ok(!r.isError && asked.length === k && r.structuredContent.output.includes("approved-file"),
       "a known-safe command runs without a question", r);

    // A sandbox denial: asked again, then run outside the sandbox.
    answers.push(() => decision("approved"));
    answers.push((q) => {
      ok(q.message.includes("OUTSIDE") && q.message.includes(`${outside}/written`),
         "the retry question says it runs outside the sandbox and shows what was refused", q.message);
      return decision("approved");
    });
    r = await call({ cmd: `echo out > ${outside}/written` });
    ok(!r.isError && r.structuredContent.exit_code === 0 &&
       readFileSync(`${outside}/written`, "utf8") === "out\n" &&
       /ran again outside the sandbox/.test(r.structuredContent.note || ""),
       "approved retry: the command ran again outside the sandbox and wrote on the host", r);

    // The retry declined: the sandboxed run's result stands, with its denial.
    answers.push(() => decision("approved"));
    answers.push(() => ({ action: "decline" }));
    r = await call({ cmd: `echo out > ${outside}/not-written` });
    ok(!r.isError && r.structuredContent.exit_code !== 0 && r.structuredContent.sandbox_denied === true &&
       !existsSync(`${outside}/not-written`) && /not run again outside/.test(r.structuredContent.note || ""),
       "declined retry: the sandboxed result stands, nothing written outside", r);

    // Dismissed (cancel) and abort.
    answers.push(() => ({ action: "cancel" }));
    r = await call({ cmd: "touch dismissed-file" });
    ok(r.isError && text(r).includes("dismissed") && !existsSync(`${ws}/dismissed-file`),
       "a dismissed question: not run", r);
    answers.push(() => decision("abort"));
    r = await call({ cmd: "touch aborted-file" });
    ok(r.isError && text(r).includes("aborted by user") && !existsSync(`${ws}/aborted-file`),
       "abort: not run, the model is told to stop", r);

    // A person's "always allow": the rule is written and applies at once.
    answers.push((q) => {
      const d = q.requestedSchema.properties.decision;
      const offered = (d.oneOf || []).map((o) => o.const).concat(d.enum || []);
      return decision(offered.includes("approved_execpolicy_amendment") ? "approved_execpolicy_amendment" : "approved");
    });
    r = await call({ cmd: "touch amended-1" });
    const a2 = asked.length;
    r = await call({ cmd: "touch amended-1 && echo again" });
    const r1 = await call({ cmd: "touch amended-1" });
    const rules = `${dir}/config/ward/rules/default.rules`;
    ok(existsSync(rules) && readFileSync(rules, "utf8").includes('"amended-1"') &&
       asked.length === a2 && !r.isError && r.structuredContent.output === "again\n" && !r1.isError,
       "always allow: the prefix rule is saved and the next such command is not asked about",
       { rules: existsSync(rules) ? readFileSync(rules, "utf8") : "(none)", asked: asked.length, a2 });
    await client.close();
  }

  // ---------------------------------------------------------------- a client without elicitation
  {
    const { client, call } = await connect(["-a", "untrusted"], null);
    const r = await call({ cmd: "touch fallback-file" });
    ok(r.isError && /cannot ask the person/.test(text(r)) && /Ask the person/.test(text(r)) &&
       !existsSync(`${ws}/fallback-file`),
       "a client without elicitation: not run, the model is told what to ask", r);
    await client.close();
  }

  // ---------------------------------------------------------------- on-request: the model asks to leave
  {
    let seen = null;
    let reply = "approved";
    let delay = 0;
    const { client, call } = await connect(["-a", "on-request"], (q) => {
      seen = q;
      const res = reply === "decline" ? { action: "decline" } : decision(reply);
      return delay ? later(delay, res) : res;
    });
    const tools = await client.listTools();
    const props = tools.tools.find((t) => t.name === "exec_command").inputSchema.properties;
    ok(props.sandbox_permissions && props.justification && props.prefix_rule && props.additional_permissions,
       "with an approver, exec_command takes Codex's per-call fields", Object.keys(props));
    let r = await call({ cmd: "touch plain-file" });
    ok(!r.isError && seen === null && existsSync(`${ws}/plain-file`),
       "on-request: an ordinary command runs in the sandbox without a question", r);
    r = await call({ cmd: `echo esc > ${outside}/escalated`, sandbox_permissions: "require_escalated",
                     justification: "write the release notes outside the workspace" });
    ok(!r.isError && seen && seen.message.includes("OUTSIDE") &&
       seen.message.includes("write the release notes") &&
       readFileSync(`${outside}/escalated`, "utf8") === "esc\n",
       "require_escalated: the question shows the justification; approved, it ran outside", { seen, r });
    r = await call({ cmd: "true", justification: "no escalation" });
    ok(r.isError && /justification is only valid/.test(text(r)),
       "a justification without an escalation is refused, as Codex", r);
    r = await call({ cmd: "bash -c true", sandbox_permissions: "require_escalated", prefix_rule: ["bash"] });
    ok(r.isError && /prefix_rule/.test(text(r)), "a banned prefix_rule is refused with the reason", r);
    // The question shows what the model chose: its own shell program, every widened path.
    reply = "decline";
    seen = null;
    r = await call({ cmd: "ls", shell: `${ws}/planted/bash`, sandbox_permissions: "require_escalated" });
    ok(r.isError && seen && seen.message.includes(`program: ${ws}/planted/bash\n`),
       "the question names a shell the model chose (the program that runs)", { seen, r });
    seen = null;
    r = await call({ cmd: `touch ${outside}/widened`, sandbox_permissions: "with_additional_permissions",
                     additional_permissions: { file_system: { write: [outside, `${dir}/config`] }, network: { enabled: true } } });
    ok(r.isError && seen && seen.message.includes(`  ${outside}\n`) && seen.message.includes(`  ${dir}/config\n`) &&
       /network/.test(seen.message) && !existsSync(`${outside}/widened`),
       "a widening question lists every path and the network it adds", { seen, r });
    // A run that starts after the person's answer still reports progress to a client that asked.
    reply = "approved";
    const progress = [];
    r = await client.callTool(
      { name: "exec_command", arguments: { cmd: "sleep 2.5; echo done", yield_time_ms: 5000,
                                           sandbox_permissions: "require_escalated" } },
      undefined, { onprogress: (p) => progress.push(p), timeout: 60000 });
    ok(!r.isError && r.structuredContent.output === "done\n" && progress.length >= 1,
       "progress: notifications for a command that ran after a question", { progress, r });
    // A person who takes longer than the client's request timeout: progress keeps the call alive.
    const waiting = [];
    delay = 2500;
    r = await client.callTool(
      { name: "exec_command", arguments: { cmd: "echo answered", sandbox_permissions: "require_escalated" } },
      undefined, { onprogress: (p) => waiting.push(p), timeout: 1500, resetTimeoutOnProgress: true });
    delay = 0;
    ok(!r.isError && r.structuredContent.output === "answered\n" &&
       waiting.some((p) => /person's answer/.test(p.message || "")),
       "progress while the person decides keeps a client's request timeout from firing", { waiting, r });
    await client.close();
  }

  // ---------------------------------------------------------------- a protected path lifted for one command
  {
    mkdirSync(`${ws}/.vscode`, { recursive: true });
    const answers = [];
    // Without recording: a name made in a layer never reaches the host (the apply refuses it,
    // docs/changes.md), so only straight writes meet the guard's question about a missing name.
    const { client, asked, call } = await connect(["-a", "on-request", "--record", "off"],
                                                  (q, i) => answers.shift()(q, i));
    answers.push((q) => decision(q.message.includes("Writable this once:") ? "approved" : "denied"));
    let r = await call({ cmd: "echo '{}' > .vscode/settings.json" });
    ok(asked.length === 1 && asked[0].message.includes(`${ws}/.vscode`) &&
       asked[0].message.includes("autorun: editor tasks") && asked[0].message.includes("in the sandbox"),
       "a refused protected path: the question names it, its reason, and keeps the sandbox", asked);
    ok(!r.isError && r.structuredContent.exit_code === 0 &&
       readFileSync(`${ws}/.vscode/settings.json`, "utf8") === "{}\n",
       "approved: run again in the sandbox with that path writable", r);
    // A directory name with lines of its own: shown on one line, escaped.
    answers.push(() => ({ action: "decline" }));
    r = await call({ cmd: "d=\"$(printf 'x\\nWritable this once:\\n  elsewhere')\"; mkdir \"$d\" && mkdir \"$d/.vscode\"; sleep 1" });
    ok(asked.length === 2 && !/^ +elsewhere/m.test(asked[1].message) && asked[1].message.includes("x\\x0aWritable"),
       "a path's newlines are escaped in the question", { asked, r });
    await client.close();
  }

  // ---------------------------------------------------------------- a forbidden rule, and the audit log
  {
    const rules = `${dir}/forbid.rules`;
    writeFileSync(rules, 'prefix_rule(pattern=["rm"], decision="forbidden", justification="never delete here")\n');
    let asked = 0;
    const { client, call } = await connect(["-a", "on-request", "--rules", rules], () => {
      asked++;
      return decision("approved");
    });
    writeFileSync(`${ws}/keep`, "x");
    const r = await call({ cmd: "rm keep" });
    ok(r.isError && asked === 0 && existsSync(`${ws}/keep`) && /never delete here/.test(text(r)),
       "a forbidden rule: never run, never asked", r);
    // Behind wrappers, nested, in pipelines and in scripts the reader refuses: still forbidden.
    const bad = [];
    for (const cmd of ["env X=1 rm keep", "sudo -u root rm keep", "nice -n 5 timeout 5 rm keep",
                       "find . -name keep -exec rm {} +", "echo keep | xargs rm", "flock lock -c 'rm keep'",
                       "bash -lc 'exec rm keep'", "env -S 'rm keep'", "setsid nohup stdbuf -oL rm keep",
                       "time -p rm keep", "ionice -c 3 chrt -o 0 taskset 1 command rm keep",
                       "doas env -i rm keep", "/usr/bin/env --unset=HOME rm keep"]) {
      const w = await call({ cmd });
      if (!(w.isError && /never delete here \(run through/.test(text(w)) && existsSync(`${ws}/keep`)))
        bad.push({ cmd, result: w });
    }
    ok(bad.length === 0 && asked === 0, "a forbidden rule: never run behind any wrapper, never asked", bad);
    await client.close();
    const lines = existsSync(audit) ? readFileSync(audit, "utf8").trim().split("\n").map((l) => JSON.parse(l)) : [];
    ok(lines.some((l) => l.event === "answer" && l.source === "person" && l.decision === "approved") &&
       lines.some((l) => l.event === "run" && l.sandboxed === false) &&
       lines.some((l) => l.decision === "forbidden") &&
       lines.some((l) => l.source === "nobody"),
       "the audit log has the answers, the runs outside the sandbox, the refusals", lines.slice(-8));
  }
} catch (e) {
  ok(false, "no exception", e && e.stack ? e.stack : String(e));
}
while (n < plan) ok(false, "not reached");
process.exit(failed ? 1 : 0);
