#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# A scripted model API on loopback for tests/integration/test-clients.sh: the
# real Codex CLI and Claude Code talk to it instead of a model, so the test
# knows exactly which tool call "the model" made and can read what the client
# then told the model. Python's standard library only.
#
# One conversation, two steps. A request that carries no result of a tool call
# yet is answered with one call of the tool named on the command line (when
# the request offers that tool; otherwise with a plain text answer, for the
# side requests a client makes: titles, quotas...). A request that carries the
# result is answered with a final text message, which ends the client's turn.
#
# Two dialects:
#   responses  OpenAI's Responses API as Codex streams it (POST .../responses,
#              server-sent events; the tool result is a function_call_output
#              input item);
#   messages   Anthropic's Messages API as Claude Code streams it (POST
#              .../messages, server-sent events or one JSON body; the tool
#              result is a tool_result block of the last user message).
#
# Every request is written to LOGDIR as NNN.json ({"method", "path",
# "headers", "body"}; any request but the API's is answered 404), and the
# first tool result found to LOGDIR/told.json (the item or block verbatim)
# and LOGDIR/told.txt (its text). The port, on 127.0.0.1 and chosen by the
# kernel, is written to LOGDIR/port once the socket listens. The server stops
# by itself after --lifetime seconds, so a test that dies cannot leave it
# behind. The tool NAME of a Responses API tool in a namespace (Codex offers
# an MCP server's tools so) is NAMESPACE/TOOL, e.g. mcp__ward/exec_command.
#
# usage: mock-model.py --api responses|messages --tool NAME --args JSON
#                      --logdir DIR [--final TEXT] [--lifetime SECONDS]
import argparse
import http.server
import json
import os
import sys
import threading

ap = argparse.ArgumentParser()
ap.add_argument("--api", choices=["responses", "messages"], required=True)
ap.add_argument("--tool", required=True)
ap.add_argument("--args", required=True, help="the tool call's arguments, a JSON object")
ap.add_argument("--logdir", required=True)
ap.add_argument("--final", default="Done: the command ran.")
ap.add_argument("--lifetime", type=float, default=300)
opt = ap.parse_args()
TOOL_ARGS = json.loads(opt.args)

lock = threading.Lock()
seq = [0]
MAX_BODY = 64 << 20


def log_request(handler, body):
    with lock:
        seq[0] += 1
        n = seq[0]
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parsed = body.decode("utf-8", "replace")
    headers = {k: v for k, v in handler.headers.items()
               if k.lower() not in ("authorization", "x-api-key")}
    rec = {"method": handler.command, "path": handler.path, "headers": headers, "body": parsed}
    with open(os.path.join(opt.logdir, "%03d.json" % n), "w") as fh:
        json.dump(rec, fh, indent=1, ensure_ascii=False)
    return n, parsed


def record_told(item, text):
    path = os.path.join(opt.logdir, "told.json")
    with lock:
        if os.path.exists(path):
            return
        with open(path + ".tmp", "w") as fh:
            json.dump(item, fh, indent=1, ensure_ascii=False)
        with open(os.path.join(opt.logdir, "told.txt"), "w") as fh:
            fh.write(text)
        os.rename(path + ".tmp", path)


def text_of(content):
    """The text of a tool result's content: a string or a list of parts."""
    if isinstance(content, str):
        return content
    out = []
    for part in content or []:
        if isinstance(part, dict):
            if isinstance(part.get("text"), str):
                out.append(part["text"])
            elif "content" in part:
                out.append(text_of(part["content"]))
        elif isinstance(part, str):
            out.append(part)
    return "\n".join(out)


# ------------------------------------------------------------ Responses API


def responses_tool_names(body):
    names = []
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            names.append(t.get("name") or (t.get("function") or {}).get("name"))
            # Tools grouped in a namespace (an MCP server's) are offered as
            # {"type": "namespace", "name": NS, "tools": [...]}: "NS/TOOL" here.
            for sub in t.get("tools") or []:
                if isinstance(sub, dict) and sub.get("name"):
                    names.append("%s/%s" % (t.get("name"), sub["name"]))
    return [n for n in names if n]


def responses_answer(body):
    items = body.get("input") or []
    result = next((i for i in items if isinstance(i, dict) and
                   i.get("type") in ("function_call_output", "custom_tool_call_output")), None)
    if result is not None:
        record_told(result, text_of(result.get("output")))
        return [{"type": "message", "role": "assistant", "id": "msg_2",
                 "content": [{"type": "output_text", "text": opt.final}]}]
    if opt.tool in responses_tool_names(body):
        ns, _, name = opt.tool.rpartition("/")
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                "name": name, "arguments": json.dumps(TOOL_ARGS)}
        if ns:
            item["namespace"] = ns
        return [item]
    return [{"type": "message", "role": "assistant", "id": "msg_1",
             "content": [{"type": "output_text", "text": "No tool named %s offered." % opt.tool}]}]


def responses_stream(handler, n, body):
    out = responses_answer(body)
    rid = "resp_%d" % n
    events = [{"type": "response.created", "response": {"id": rid}}]
    for item in out:
        events.append({"type": "response.output_item.done", "item": item})
    events.append({"type": "response.completed", "response": {
        "id": rid, "usage": {"input_tokens": 10, "input_tokens_details": None,
                             "output_tokens": 5, "output_tokens_details": None,
                             "total_tokens": 15}}})
    send_sse(handler, [(e["type"], e) for e in events])


# ------------------------------------------------------------ Messages API


def messages_answer(body):
    msgs = body.get("messages") or []
    last = msgs[-1] if msgs else {}
    content = last.get("content") if isinstance(last, dict) else None
    if last.get("role") == "user" and isinstance(content, list):
        result = next((b for b in content if isinstance(b, dict) and
                       b.get("type") == "tool_result"), None)
        if result is not None:
            record_told(result, text_of(result.get("content")))
            return [{"type": "text", "text": opt.final}], "end_turn"
    names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    if opt.tool in names:
        return [{"type": "tool_use", "id": "toolu_01", "name": opt.tool, "input": TOOL_ARGS}], "tool_use"
    return [{"type": "text", "text": "No tool named %s offered." % opt.tool}], "end_turn"


def messages_reply(handler, n, body):
    blocks, stop = messages_answer(body)
    msg = {"id": "msg_%02d" % n, "type": "message", "role": "assistant",
           "model": body.get("model", "mock"), "content": [], "stop_reason": None,
           "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}
    if not body.get("stream"):
        msg.update(content=blocks, stop_reason=stop, usage={"input_tokens": 10, "output_tokens": 5})
        send_json(handler, 200, msg)
        return
    events = [("message_start", {"type": "message_start", "message": msg})]
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            events += [("content_block_start", {"type": "content_block_start", "index": i,
                                                "content_block": {"type": "text", "text": ""}}),
                       ("content_block_delta", {"type": "content_block_delta", "index": i,
                                                "delta": {"type": "text_delta", "text": b["text"]}})]
        else:
            events += [("content_block_start", {"type": "content_block_start", "index": i,
                                                "content_block": dict(b, input={})}),
                       ("content_block_delta", {"type": "content_block_delta", "index": i,
                                                "delta": {"type": "input_json_delta",
                                                          "partial_json": json.dumps(b["input"])}})]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events += [("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": 5}}),
               ("message_stop", {"type": "message_stop"})]
    send_sse(handler, events)


# ------------------------------------------------------------ HTTP


def send_json(handler, code, obj):
    data = json.dumps(obj).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def send_sse(handler, events):
    data = "".join("event: %s\ndata: %s\n\n" % (name, json.dumps(e)) for name, e in events).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ValueError("request body too large")
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        # Nothing is served but the model API; logged, so a test sees what
        # else a client asked for.
        log_request(self, b"")
        send_json(self, 404, {"error": {"message": "not served by the mock"}})

    def do_POST(self):
        raw = self.body()
        n, body = log_request(self, raw)
        path = self.path.split("?")[0]
        if not isinstance(body, dict):
            send_json(self, 400, {"error": {"message": "the body is not a JSON object"}})
        elif opt.api == "responses" and path.endswith("/responses"):
            responses_stream(self, n, body)
        elif opt.api == "messages" and path.endswith("/messages/count_tokens"):
            send_json(self, 200, {"input_tokens": 10})
        elif opt.api == "messages" and path.endswith("/messages"):
            messages_reply(self, n, body)
        else:
            send_json(self, 404, {"error": {"message": "not served by the mock"}})


def main():
    os.makedirs(opt.logdir, exist_ok=True)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    with open(os.path.join(opt.logdir, "port.tmp"), "w") as fh:
        fh.write("%d\n" % srv.server_address[1])
    os.rename(os.path.join(opt.logdir, "port.tmp"), os.path.join(opt.logdir, "port"))
    timer = threading.Timer(opt.lifetime, srv.shutdown)
    timer.daemon = True
    timer.start()
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
