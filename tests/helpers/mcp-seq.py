#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A JSON-RPC client that talks to `ward mcp` (or `ward serve --listen stdio`)
one request at a time.

Usage: mcp-seq.py [--answer DECISION] [--timeout S] -- COMMAND [ARG...] < LINES

Each input line is a JSON-RPC message: a request is sent and its response
waited for before the next line goes; a notification is sent at once. A
request of the server's (elicitation/create) is answered with
{"action": "accept", "content": {"decision": DECISION}} (--answer), or
"decline" without one. Prints every line the command wrote, then "exit=N".
"""
import json, os, select, subprocess, sys, time

args = sys.argv[1:]
answer, timeout = None, 60.0
while args and args[0] != "--":
    if args[0] == "--answer":
        answer = args[1]; args = args[2:]
    elif args[0] == "--timeout":
        timeout = float(args[1]); args = args[2:]
    else:
        sys.exit("mcp-seq: unknown option " + args[0])
cmd = args[1:]
lines = [l for l in sys.stdin.read().split("\n") if l.strip()]
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
os.set_blocking(p.stdout.fileno(), False)
buf = b""
deadline = time.time() + timeout


def pump(want_id):
    """Reads until the response to want_id came (None: until EOF)."""
    global buf
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            print(line.decode("utf-8", "replace"), flush=True)
            try:
                m = json.loads(line)
            except ValueError:
                continue
            if isinstance(m, dict) and "method" in m and "id" in m:
                if answer is None:
                    res = {"action": "decline"}
                else:
                    res = {"action": "accept", "content": {"decision": answer}}
                p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": res})
                               + "\n").encode())
                p.stdin.flush()
            elif isinstance(m, dict) and "id" in m and m["id"] == want_id:
                return True
        if time.time() > deadline:
            print("timeout: no answer to %r" % (want_id,), flush=True)
            return False
        r, _, _ = select.select([p.stdout], [], [], 0.1)
        if r:
            chunk = p.stdout.read()
            if not chunk:
                return False
            buf += chunk


ok = True
for l in lines:
    m = json.loads(l)
    p.stdin.write((l + "\n").encode())
    p.stdin.flush()
    if isinstance(m, dict) and "method" in m and "id" in m:
        if not pump(m["id"]):
            ok = False
            break
p.stdin.close()
pump(None)
try:
    rc = p.wait(timeout=15)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "hung"
print("exit=%s" % rc, flush=True)
