#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Runs the same request sequences against `ward serve --listen stdio` and Codex's real
exec-server (`codex exec-server --listen stdio`, npm @openai/codex) and compares the
answers field by field: error codes, result keys, values that should agree, and the
notifications each process produced (seq numbering, exit codes, sandboxDenied).

Usage: scripts/compare-exec-server.py [--ward PATH] [--codex PATH]
The Codex binary is found through --codex, CODEX_BIN, or an npm install of @openai/codex
under /var/tmp/codex-research, /var/tmp/agents or $HOME; without it the script says so and
exits 0 (nothing to compare). Prints each difference; the intended ones are explained in
docs/protocol.md ("Differences from Codex").
"""
import argparse
import glob
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

WORK = tempfile.mkdtemp(prefix="ward-compare-", dir="/var/tmp")
W = "file://" + WORK
ENV = {"PATH": "/usr/bin:/bin"}
SANDBOX = {"permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": [
    {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
    {"path": {"type": "path", "path": W + "/ws"}, "access": "write"}]}, "network": "restricted"},
    "cwd": W + "/ws", "windowsSandboxLevel": "disabled"}


def start(pid, argv, **kw):
    p = {"processId": pid, "argv": argv, "cwd": W, "env": ENV, "tty": False}
    p.update(kw)
    return {"method": "process/start", "params": p}


# Each scenario: a name and a list of messages (requests get ids) sent after the handshake.
SCENARIOS = [
    ("environment", [{"method": "environment/status", "params": {}},
                     {"method": "environment/info", "params": {}}]),
    ("echo", [start("p1", ["echo", "hi"]), {"wait": 0.5},
              {"method": "process/read", "params": {"processId": "p1"}},
              {"method": "process/read", "params": {"processId": "p1", "maxBytes": 65536}}]),
    ("exit-and-stderr", [start("p", ["sh", "-c", "echo a; echo b >&2; exit 3"]), {"wait": 0.5},
                         {"method": "process/read", "params": {"processId": "p"}}]),
    ("sandboxed-write", [start("s", ["/bin/sh", "-c", "echo hi; echo x > %s/probe; exit 7" % WORK],
                               cwd=W + "/ws", sandbox=SANDBOX), {"wait": 1.0},
                         {"method": "process/read", "params": {"processId": "s"}}]),
    ("errors", [start("d", ["sleep", "5"]), start("d", ["true"]),
                {"method": "process/read", "params": {"processId": "nope"}},
                start("e", []), start("f", ["true"], cwd="relative"),
                {"method": "foo/bar", "params": {}},
                {"method": "process/terminate", "params": {"processId": "nope"}},
                {"method": "process/signal", "params": {"processId": "d", "signal": "bogus"}},
                {"method": "process/terminate", "params": {"processId": "d"}}]),
    ("write", [start("c", ["cat"], pipeStdin=True),
               {"method": "process/write", "params": {"processId": "c", "chunk": "aGkK", "writeId": "1"}},
               {"method": "process/write", "params": {"processId": "c", "chunk": "aGkK", "writeId": "1"}},
               {"method": "process/write", "params": {"processId": "c", "chunk": "!!", "writeId": "2"}},
               {"method": "process/write", "params": {"processId": "c", "chunk": "aGkK", "writeId": ""}},
               {"method": "process/write", "params": {"processId": "x", "chunk": "aGkK", "writeId": "3"}},
               start("n", ["sleep", "5"]),
               {"method": "process/write", "params": {"processId": "n", "chunk": "aGkK", "writeId": "4"}},
               {"method": "process/signal", "params": {"processId": "n", "signal": "interrupt"}},
               {"wait": 0.5},
               {"method": "process/read", "params": {"processId": "n"}},
               {"method": "process/terminate", "params": {"processId": "c"}}]),
    ("tty", [start("t", ["sh", "-c", "printf 'x\\n'; exit 5"], tty=True), {"wait": 0.5},
             {"method": "process/read", "params": {"processId": "t"}}]),
    ("fs", [{"method": "fs/readFile", "params": {"path": W + "/a.txt"}},
            {"method": "fs/readFile", "params": {"path": W + "/missing"}},
            {"method": "fs/readFile", "params": {"path": W + "/ws"}},
            {"method": "fs/writeFile", "params": {"path": W + "/w.txt", "dataBase64": "ZGF0YQ=="}},
            {"method": "fs/getMetadata", "params": {"path": W + "/a.txt"}},
            {"method": "fs/canonicalize", "params": {"path": W + "/ws/../a.txt"}},
            {"method": "fs/createDirectory", "params": {"path": W + "/newdir"}},
            {"method": "fs/remove", "params": {"path": W + "/newdir"}}]),
]


class Server:
    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, cwd=WORK, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env)
        self.buf = b""
        self.got = []

    def send(self, m):
        self.p.stdin.write(json.dumps(m).encode() + b"\n")
        self.p.stdin.flush()

    def pump(self, secs):
        end = time.time() + secs
        while True:
            left = end - time.time()
            if left <= 0:
                return
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if not r:
                return
            chunk = os.read(self.p.stdout.fileno(), 1 << 20)
            if not chunk:
                return
            self.buf += chunk
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                self.got.append(json.loads(line))

    def answer(self, rid, secs=10):
        end = time.time() + secs
        while time.time() < end:
            for m in self.got:
                if m.get("id") == rid and "method" not in m:
                    return m
            self.pump(0.1)
        return None

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except Exception:
            self.p.kill()


def run(argv, env, msgs):
    s = Server(argv, env)
    s.send({"id": 0, "method": "initialize", "params": {"clientName": "compare"}})
    init = s.answer(0)
    s.send({"method": "initialized", "params": {}})
    answers = {}
    rid = 1
    for m in msgs:
        if "wait" in m:
            s.pump(m["wait"])
            continue
        s.send(dict(m, id=rid))
        answers[rid] = (m, s.answer(rid))
        rid += 1
    s.pump(0.5)
    notes = [m for m in s.got if "method" in m]
    s.close()
    return init, answers, notes


def shape(v):
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(x) for x in v[:1]]
    return type(v).__name__


def diff(path, a, b, out):
    """Field by field: keys missing on either side, types, and values."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a:
                out.append("%s.%s: only in codex (%s)" % (path, k, json.dumps(b[k])[:80]))
            elif k not in b:
                out.append("%s.%s: only in ward (%s)" % (path, k, json.dumps(a[k])[:80]))
            else:
                diff("%s.%s" % (path, k), a[k], b[k], out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append("%s: %d items in ward, %d in codex" % (path, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            diff("%s[%d]" % (path, i), x, y, out)
    elif a != b:
        out.append("%s: ward %s, codex %s" % (path, json.dumps(a)[:100], json.dumps(b)[:100]))


VOLATILE = {"sessionId", "executorVersion", "providerId", "cwd", "prependPathDirs",
            "userHomeDir", "tempDir", "modifiedAtMs", "createdAtMs"}


def scrub(v):
    if isinstance(v, dict):
        return {k: ("<volatile>" if k in VOLATILE else scrub(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [scrub(x) for x in v]
    return v


def proc_events(notes):
    ev = {}
    for n in notes:
        p = n["params"]
        if "processId" in p:
            ev.setdefault(p["processId"], []).append(
                (n["method"], p.get("seq"), p.get("exitCode"), p.get("sandboxDenied")))
    return ev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ward", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "..", "build", "ward"))
    ap.add_argument("--codex")
    a = ap.parse_args()
    codex = a.codex or os.environ.get("CODEX_BIN")
    if not codex:
        for base in ("/var/tmp/codex-research", "/var/tmp/agents", os.path.expanduser("~")):
            found = glob.glob(base + "/node_modules/@openai/codex-linux-x64/vendor/*/bin/codex")
            if found:
                codex = found[0]
                break
    if not codex or not os.access(codex, os.X_OK):
        print("compare-exec-server: Codex's exec-server is not installed (npm i @openai/codex): "
              "nothing to compare")
        return 0
    os.makedirs(WORK + "/ws")
    with open(WORK + "/a.txt", "w") as f:
        f.write("hello world\n")
    chome = tempfile.mkdtemp(prefix="codex-home-", dir="/var/tmp")
    ward_argv = [a.ward, "serve", "--listen", "stdio", "--allow-unsandboxed"]
    codex_argv = [codex, "exec-server", "--listen", "stdio"]
    total = 0
    for name, msgs in SCENARIOS:
        wi, wa, wn = run(ward_argv, dict(os.environ), msgs)
        for f in ("probe", "w.txt"):
            if os.path.exists(os.path.join(WORK, f)):
                os.unlink(os.path.join(WORK, f))
        ci, ca, cn = run(codex_argv, dict(os.environ, CODEX_HOME=chome), msgs)
        out = []
        if name == "environment":
            diff("initialize.result", scrub(wi.get("result")), scrub(ci.get("result")), out)
        for rid in wa:
            req, w = wa[rid]
            c = ca[rid][1]
            label = "%s#%d %s" % (name, rid, req["method"])
            if w is None or c is None:
                out.append("%s: no answer from %s" % (label, "ward" if w is None else "codex"))
                continue
            if ("error" in w) != ("error" in c):
                out.append("%s: ward %s, codex %s" % (
                    label, json.dumps(w.get("error") or w.get("result"))[:120],
                    json.dumps(c.get("error") or c.get("result"))[:120]))
            elif "error" in w:
                if w["error"]["code"] != c["error"]["code"]:
                    out.append("%s: error code ward %d, codex %d (%s | %s)" % (
                        label, w["error"]["code"], c["error"]["code"], w["error"]["message"],
                        c["error"]["message"]))
            else:
                diff(label, scrub(w["result"]), scrub(c["result"]), out)
        we, ce = proc_events(wn), proc_events(cn)
        for pid in sorted(set(we) | set(ce)):
            ws = [e for e in we.get(pid, []) if e[0] != "process/output"]
            cs = [e for e in ce.get(pid, []) if e[0] != "process/output"]
            if ws != cs:
                out.append("%s: process %s events: ward %s, codex %s" % (name, pid, ws, cs))
        print("== %s: %s" % (name, "same" if not out else "%d difference(s)" % len(out)))
        for o in out:
            print("   " + o)
        total += len(out)
    shutil.rmtree(WORK, ignore_errors=True)
    shutil.rmtree(chome, ignore_errors=True)
    print("compare-exec-server: %d difference(s) in %d scenarios" % (total, len(SCENARIOS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
