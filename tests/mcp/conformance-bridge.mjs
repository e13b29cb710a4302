// SPDX-License-Identifier: MIT
//
// The MCP conformance suite (@modelcontextprotocol/conformance) tests servers only
// over Streamable HTTP. This relays its messages, unchanged, to `ward mcp` on stdio
// using the official SDK's own transports on both sides, so that what it checks is
// ward's behaviour. Usage: node conformance-bridge.mjs PORT WARD [ARGS...]
import http from "node:http";
import { randomUUID } from "node:crypto";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [port, ward, ...args] = process.argv.slice(2);
const sessions = new Map();

async function bridge() {
  const upstream = new StdioClientTransport({ command: ward, args: ["mcp", ...args], stderr: "inherit" });
  const front = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, front),
  });
  front.onmessage = (m) => upstream.send(m);
  upstream.onmessage = (m) => front.send(m, "id" in m ? { relatedRequestId: m.id } : undefined);
  front.onclose = () => upstream.close();
  await upstream.start();
  await front.start();
  return front;
}

http
  .createServer(async (req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      const parsed = body ? JSON.parse(body) : undefined;
      const sid = req.headers["mcp-session-id"];
      const t = sid && sessions.get(sid) ? sessions.get(sid) : await bridge();
      await t.handleRequest(req, res, parsed);
    });
  })
  .listen(Number(port), "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${port}/mcp`));
