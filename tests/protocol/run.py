#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Runs protocol transcripts against `ward serve` and prints TAP, one line per file.

Usage: run.py --ward WARD --transport stdio|ws|unix|all FILE|DIR...

A transcript is a text file of lines:

    # a comment
    @args ARG...          extra arguments of `ward serve` (before the first message)
    @transports T...      run only over these transports (default: all)
    >> {json}             send one message (${WORK}, ${WORK_URI}, ${name} substituted)
    >>raw TEXT            send TEXT as it is (malformed input)
    << {json}             expect a message matching this (any order, first match wins)
    <<! {json}            expect a message equal to this, no key more or less
    <<none 0.3            expect no further message within 0.3 s (nothing unmatched)
    <<closed              expect the server to close the connection
    ~~ 0.3                sleep
    !! reconnect          a new connection to the same server (ws, unix)
    !! close              close our side (stdio: stdin)
    ?? SHELL              a host command that must exit 0 (asserting effects on the host)

In an expected message, objects match when every expected key matches (extra
keys are allowed, for ward's extensions, except after <<!), lists element by
element, and these strings match patterns: "$any", "$uuid", "$int", "$str",
"$b64:TEXT" (base64 of TEXT), "$contains:TEXT",
"$capture:NAME" (any value, kept as ${NAME}), "$absent" (the key must not be
there).
"""
import argparse
import asyncio
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

TIMEOUT = 10.0


class Fail(Exception):
    pass


def matches(exp, act, exact, caps):
    if isinstance(exp, str) and exp.startswith("$"):
        if exp == "$any":
            return True
        if exp == "$uuid":
            return isinstance(act, str) and re.fullmatch(
                r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", act) is not None
        if exp == "$int":
            return isinstance(act, int) and not isinstance(act, bool)
        if exp == "$str":
            return isinstance(act, str)
        if exp.startswith("$b64:"):
            want = exp[5:].encode()
            try:
                return isinstance(act, str) and base64.b64decode(act, validate=True) == want
            except ValueError:
                return False
        if exp.startswith("$contains:"):
            return isinstance(act, str) and exp[10:] in act
        if exp.startswith("$capture:"):
            caps[exp[9:]] = act
            return True
    if isinstance(exp, dict):
        if not isinstance(act, dict):
            return False
        for k, v in exp.items():
            if v == "$absent":
                if k in act:
                    return False
                continue
            if k not in act or not matches(v, act[k], exact, caps):
                return False
        return not exact or set(act) == set(k for k, v in exp.items() if v != "$absent")
    if isinstance(exp, list):
        return isinstance(act, list) and len(exp) == len(act) and all(
            matches(e, a, exact, caps) for e, a in zip(exp, act))
    if isinstance(exp, bool) or isinstance(act, bool):
        return exp is act
    return exp == act


class Conn:
    """One client connection: stdio of the server process, or a WebSocket."""

    def __init__(self):
        self.inbox = []
        self.closed = False
        self.cond = asyncio.Condition()

    async def _deliver(self, text):
        async with self.cond:
            try:
                self.inbox.append(json.loads(text))
            except ValueError:
                self.inbox.append({"$unparsable": text})
            self.cond.notify_all()

    async def _eof(self):
        async with self.cond:
            self.closed = True
            self.cond.notify_all()

    async def expect(self, exp, exact, caps, timeout=TIMEOUT):
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        async with self.cond:
            while True:
                for i, m in enumerate(self.inbox):
                    trial = dict(caps)
                    if matches(exp, m, exact, trial):
                        caps.update(trial)
                        del self.inbox[i]
                        return
                if self.closed:
                    raise Fail("connection closed; expected %s; unmatched: %s" % (
                        json.dumps(exp), json.dumps(self.inbox)[:1500]))
                left = end - loop.time()
                if left <= 0:
                    raise Fail("timed out waiting for %s; unmatched: %s" % (
                        json.dumps(exp), json.dumps(self.inbox)[:1500]))
                try:
                    await asyncio.wait_for(self.cond.wait(), left)
                except asyncio.TimeoutError:
                    pass

    async def expect_closed(self, timeout=TIMEOUT):
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        async with self.cond:
            while not self.closed:
                left = end - loop.time()
                if left <= 0:
                    raise Fail("the server did not close the connection")
                try:
                    await asyncio.wait_for(self.cond.wait(), left)
                except asyncio.TimeoutError:
                    pass


class StdioConn(Conn):
    def __init__(self, proc):
        super().__init__()
        self.proc = proc
        self.task = asyncio.ensure_future(self._reader())

    async def _reader(self):
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                await self._eof()
                return
            await self._deliver(line.decode("utf-8", "replace"))

    async def send(self, text):
        self.proc.stdin.write(text.encode() + b"\n")
        await self.proc.stdin.drain()

    async def close(self):
        if not self.proc.stdin.is_closing():
            self.proc.stdin.close()


class WsConn(Conn):
    def __init__(self, ws):
        super().__init__()
        self.ws = ws
        self.task = asyncio.ensure_future(self._reader())

    async def _reader(self):
        try:
            async for msg in self.ws:
                await self._deliver(msg if isinstance(msg, str) else msg.decode("utf-8", "replace"))
        except Exception:
            pass
        await self._eof()

    async def send(self, text):
        await self.ws.send(text)

    async def close(self):
        await self.ws.close()


async def connect_ws(url):
    import websockets
    if url.startswith("unix:"):
        ws = await websockets.unix_connect(url[5:], "ws://localhost/", max_size=None)
    else:
        ws = await websockets.connect(url, max_size=None)
    return WsConn(ws)


def subst(text, env):
    return re.sub(r"\$\{(\w+)\}", lambda m: str(env.get(m.group(1), m.group(0))), text)


async def run_file(ward, transport, path):
    lines = open(path).read().splitlines()
    args = []
    transports = None
    for l in lines:
        if l.startswith("@args "):
            args += l[6:].split()
        if l.startswith("@transports "):
            transports = l[12:].split()
    if transports and transport not in transports:
        return "skip", "not for %s" % transport
    work = tempfile.mkdtemp(prefix="ward-proto-", dir="/var/tmp")
    os.chmod(work, 0o755)
    env = {"WORK": work, "WORK_URI": "file://" + work}
    caps = env
    cmd = [ward, "serve"] + [subst(a, env) for a in args]
    if transport == "stdio":
        cmd += ["--listen", "stdio"]
    elif transport == "ws":
        cmd += ["--listen", "ws://127.0.0.1:0", "--no-auth"]
    else:
        cmd += ["--listen", "unix:%s/serve.sock" % work, "--no-auth"]
    # The server's audit log goes to the transcript's own directory, never the user's.
    senv = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state"))
    proc = await asyncio.create_subprocess_exec(
        *cmd, cwd=work, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=senv)
    url = None
    try:
        if transport == "stdio":
            conn = StdioConn(proc)
        else:
            url = (await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)).decode().strip()
            if not url:
                raise Fail("ward serve printed no URL: %s" % (await proc.stderr.read()).decode())
            conn = await connect_ws(url)
        for n, l in enumerate(lines, 1):
            where = "%s:%d" % (os.path.basename(path), n)
            try:
                if not l.strip() or l.startswith("#") or l.startswith("@"):
                    continue
                if l.startswith(">>raw "):
                    await conn.send(subst(l[6:], caps))
                elif l.startswith(">> "):
                    await conn.send(subst(l[3:], caps))
                elif l.startswith("<<! "):
                    await conn.expect(json.loads(subst(l[4:], caps)), True, caps)
                elif l.startswith("<< "):
                    await conn.expect(json.loads(subst(l[3:], caps)), False, caps)
                elif l.startswith("<<none"):
                    await asyncio.sleep(float(l.split()[1]) if len(l.split()) > 1 else 0.3)
                    if conn.inbox:
                        raise Fail("unexpected messages: %s" % json.dumps(conn.inbox)[:1500])
                elif l.startswith("<<closed"):
                    await conn.expect_closed()
                elif l.startswith("~~ "):
                    await asyncio.sleep(float(l[3:]))
                elif l.strip() == "!! close":
                    await conn.close()
                elif l.strip() == "!! reconnect":
                    if transport == "stdio":
                        raise Fail("reconnect needs a socket transport")
                    await conn.close()
                    conn = await connect_ws(url)
                elif l.startswith("?? "):
                    r = subprocess.run(["sh", "-c", subst(l[3:], caps)], capture_output=True)
                    if r.returncode != 0:
                        raise Fail("host check failed: %s: %s" % (l[3:], r.stdout.decode() + r.stderr.decode()))
                else:
                    raise Fail("bad line")
            except Fail as e:
                raise Fail("%s: %s" % (where, e))
        return "ok", ""
    except Fail as e:
        return "fail", str(e)
    finally:
        try:
            if transport == "stdio" and proc.stdin and not proc.stdin.is_closing():
                proc.stdin.close()
            elif proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 10)
        except ProcessLookupError:
            pass
        except asyncio.TimeoutError:
            try:
                proc.kill()
            except ProcessLookupError:
                pass
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ward", required=True, type=os.path.abspath)
    ap.add_argument("--transport", default="stdio")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    if a.transport != "stdio":
        try:
            import websockets  # noqa: F401
        except ImportError:
            # python3-websockets is in scripts/setup-deps.sh: its absence is a broken set-up.
            print("Bail out! python3-websockets is not installed (scripts/setup-deps.sh)")
            return 1
    paths = []
    for f in a.files:
        if os.path.isdir(f):
            paths += sorted(os.path.join(f, n) for n in os.listdir(f) if n.endswith(".txt"))
        else:
            paths.append(f)
    a.files = paths
    runs = []
    for tr in (["stdio", "ws", "unix"] if a.transport == "all" else [a.transport]):
        for f in a.files:
            t = [l[12:].split() for l in open(f).read().splitlines()
                 if l.startswith("@transports ")]
            if not t or tr in t[0]:
                runs.append((tr, f))
    print("1..%d" % len(runs), flush=True)
    failed = 0
    for i, (tr, f) in enumerate(runs, 1):
        status, why = asyncio.run(run_file(a.ward, tr, f))
        name = "%s over %s" % (os.path.basename(f), tr)
        if status == "ok":
            print("ok %d - %s" % (i, name))
        elif status == "skip":
            print("ok %d - %s # SKIP %s" % (i, name, why))
        else:
            failed += 1
            print("not ok %d - %s" % (i, name))
            for l in why.splitlines():
                print("# " + l)
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
