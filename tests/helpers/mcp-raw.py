#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A raw JSON-RPC peer for `ward mcp` (and `ward serve --listen stdio`).

Usage: mcp-raw.py [--timeout S] [--hold S] -- COMMAND [ARG...] < LINES

Starts COMMAND, writes each input line to its stdin as it is (a line may be
deliberately malformed), waits until every request among them (a JSON object
with an "id" and a "method") was answered, then closes the command's stdin and
waits for it to exit. Prints every line the command wrote, then "exit=N".
--hold S keeps stdin open S seconds after the last answer (to test signals and
kills from outside while the server runs); the command's pid is printed first
as "pid=N" so the caller can signal it.
"""
import json, os, select, subprocess, sys, time

args = sys.argv[1:]
timeout, hold = 30.0, 0.0
while args and args[0] != "--":
    if args[0] == "--timeout":
        timeout = float(args[1]); args = args[2:]
    elif args[0] == "--hold":
        hold = float(args[1]); args = args[2:]
    else:
        sys.exit("mcp-raw: unknown option " + args[0])
cmd = args[1:]
lines = [l for l in sys.stdin.buffer.read().split(b"\n") if l != b""]
want = set()
for l in lines:
    try:
        m = json.loads(l)
        if isinstance(m, dict) and "method" in m and "id" in m:
            want.add(json.dumps(m["id"]))
    except ValueError:
        pass

p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
print("pid=%d" % p.pid, flush=True)
os.set_blocking(p.stdout.fileno(), False)
for l in lines:
    p.stdin.write(l + b"\n")
p.stdin.flush()
buf = b""
deadline = time.time() + timeout
got = set()
closed = False
hold_until = None
while True:
    if not closed and want <= got:
        if hold and hold_until is None:
            hold_until = time.time() + hold
        if hold_until is None or time.time() >= hold_until:
            p.stdin.close()
            closed = True
    if time.time() > deadline:
        print("timeout: unanswered %s" % sorted(want - got), flush=True)
        p.kill()
        break
    r, _, _ = select.select([p.stdout], [], [], 0.1)
    if r:
        chunk = p.stdout.read()
        if chunk == b"":
            break
        buf += chunk or b""
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            print(line.decode("utf-8", "replace"), flush=True)
            try:
                m = json.loads(line)
                if isinstance(m, dict) and "id" in m and "method" not in m:
                    got.add(json.dumps(m["id"]))
            except ValueError:
                pass
    elif p.poll() is not None and not r:
        break
try:
    rc = p.wait(timeout=10)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "hung"
print("exit=%s" % rc, flush=True)
