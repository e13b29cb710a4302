#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The filesystem methods of `ward serve`, as data: requests in, expected
responses out (tests/protocol/fs/*.jsonl), each run against a fresh fixture
tree over `ward serve --listen stdio`, plus the effect on the host after each
step. Prints TAP. Also runs the adversarial cases of adversarial.py.

Usage: run.py [--codex BIN] [FILE.jsonl ...]   (default: every file here)

Environment: WARD (build/ward), WARD_TEST_TMPDIR (where fixtures go; default
/var/tmp: /tmp is writable in ward's default policy, the tests need places
that are not), WARD_MUST_WORK=1 (a skip is a failure).

--codex BIN runs the same files against Codex's exec-server (`BIN
exec-server --listen stdio`), skipping the steps marked "ward_only": how the
expectations were checked against Codex 0.169.

The .jsonl format, one JSON object per line:
  {"comment": "..."}
  {"fixture": [[op, args...], ...]}      a fresh tree: mkdir, file, symlink,
        fifo, hardlink, chmod, socket, touch_old (ops below); $P is its path
  {"server": [args...], "cwd": "rel", "fallback": true}   (re)starts the
        server, initialised; fallback: under tests/hardened-wrapper (a host
        that refuses namespaces: ward's Landlock and seccomp fallback)
  {"requires": "fallback"}               skips the file where that cannot run
  {"define": {"NAME": value}}            "$NAME" as a whole string is value
  {"name": "...", "send": {"method": m, "params": p}, "expect": e}
        e is {"result": r} or {"error": {"code": c, "message": m}}; a message
        {"re": regex} matches by regular expression, {"unordered": [...]} a list
        in any order; in results "$ANY" is any
        value, "$MS" a positive integer; "expect_root"/"expect_user" when the
        answer depends on the uid; "timeout" (s, default 20); "ward_only";
        "only": "root" | "user"; "repeat": N sends it N times with $i = 0..N-1
  {"name": "...", "host": [[check, args...], ...]}   the tree afterwards:
        content, absent, exists, symlink, fifo, dir, mode, sameinode, count
Strings get $T (the fixture root as a file: URI) and $P (its path) replaced.
"""
import base64
import json
import os
import re
import select
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WARD = os.environ.get("WARD", os.path.join(HERE, "../../../build/ward"))
MUST_WORK = os.environ.get("WARD_MUST_WORK", "0") == "1"
HARDENED = os.environ.get("WARD_HARDENED_WRAPPER",
                          os.path.join(os.path.dirname(WARD), "tests", "hardened-wrapper"))
IS_ROOT = os.geteuid() == 0


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, name):
        self.n += 1
        print("ok %d - %s" % (self.n, name), flush=True)

    def not_ok(self, name, *diag):
        self.n += 1
        self.failed += 1
        print("not ok %d - %s" % (self.n, name), flush=True)
        for d in diag:
            for line in str(d).splitlines():
                print("# " + line, flush=True)

    def skip(self, name, why):
        if MUST_WORK:
            self.not_ok(name, "skipped, but WARD_MUST_WORK=1: " + why)
        else:
            self.n += 1
            print("ok %d - %s # SKIP %s" % (self.n, name, why), flush=True)

    def check(self, name, cond, *diag):
        if cond:
            self.ok(name)
        else:
            self.not_ok(name, *diag)
        return cond


class Server:
    """One `ward serve --listen stdio` (or Codex's exec-server), initialised."""

    def __init__(self, args, cwd, codex=None, log=None, wrapper=None):
        if codex:
            cmd = [codex, "exec-server", "--listen", "stdio"]
        else:
            cmd = ([wrapper] if wrapper else []) + [WARD, "serve", "--listen", "stdio"] + list(args)
        env = dict(os.environ)
        self.log = log or tempfile.TemporaryFile()
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.log, cwd=cwd, env=env)
        self.buf = b""
        self.early = {}
        self.next_id = 100
        r = self.request("initialize", {"clientName": "ward-fs-tests"}, timeout=20)
        if "result" not in r:
            raise RuntimeError("initialize failed: %r" % (r,))
        self.send({"method": "initialized", "params": {}})

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()

    def recv(self, rid, timeout):
        """The answer to request rid; answers to others that come first are kept for later."""
        end = time.monotonic() + timeout
        while True:
            if rid in self.early:
                return self.early.pop(rid)
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                try:
                    m = json.loads(line)
                except ValueError:
                    continue
                if isinstance(m, dict) and m.get("id") == rid:
                    return m
                if isinstance(m, dict) and "id" in m and len(self.early) < 10000:
                    self.early[m["id"]] = m
            left = end - time.monotonic()
            if left <= 0:
                return {"timeout": timeout}
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if not r:
                return {"timeout": timeout}
            d = os.read(self.p.stdout.fileno(), 1 << 20)
            if not d:
                return {"eof": True}
            self.buf += d

    def request(self, method, params, timeout=20, raw_params=False):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method}
        if params is not None or raw_params:
            msg["params"] = params
        self.send(msg)
        r = self.recv(self.next_id, timeout)
        r.pop("id", None)
        return r

    def stderr(self):
        try:
            self.log.seek(0)
            return self.log.read().decode(errors="replace")[-2000:]
        except Exception:
            return ""

    def close(self):
        try:
            self.p.stdin.close()
        except Exception:
            pass
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def build_fixture(root, ops):
    if os.path.exists(root):
        for dirpath, dirnames, _ in os.walk(root):
            for d in dirnames:
                try:
                    os.chmod(os.path.join(dirpath, d), 0o755)
                except OSError:
                    pass
        shutil.rmtree(root)
    os.makedirs(root)
    socks = []
    for op in ops:
        kind, args = op[0], [a.replace("$P", root) if isinstance(a, str) else a for a in op[1:]]
        p = lambda rel: os.path.join(root, rel)
        if kind == "mkdir":
            os.makedirs(p(args[0]), exist_ok=True)
        elif kind == "file":
            with open(p(args[0]), "wb") as f:
                f.write(args[1].encode() if isinstance(args[1], str) else bytes(args[1]))
        elif kind == "symlink":
            os.symlink(args[0], p(args[1]))
        elif kind == "fifo":
            os.mkfifo(p(args[0]))
        elif kind == "hardlink":
            os.link(p(args[0]), p(args[1]))
        elif kind == "chmod":
            os.chmod(p(args[0]), int(args[1], 8))
        elif kind == "socket":
            s = socket.socket(socket.AF_UNIX)
            s.bind(p(args[0]))
            socks.append(s)
        else:
            raise ValueError("unknown fixture op %r" % kind)
    return socks


def subst(o, env):
    if isinstance(o, str):
        if o.startswith("$") and o[1:] in env["defs"]:
            return subst(env["defs"][o[1:]], env)
        return o.replace("$T", env["T"]).replace("$P", env["P"]).replace("$i", env.get("i", "$i"))
    if isinstance(o, list):
        return [subst(x, env) for x in o]
    if isinstance(o, dict):
        return {k: subst(v, env) for k, v in o.items()}
    return o


def match(exp, got, path="$"):
    """None when got matches exp, else a description of the first difference."""
    if exp == "$ANY":
        return None
    if exp == "$MS":
        return None if isinstance(got, int) and not isinstance(got, bool) and got > 0 else \
            "%s: expected a positive integer, got %r" % (path, got)
    if isinstance(exp, dict) and set(exp) == {"unordered"}:
        key = lambda v: json.dumps(v, sort_keys=True)
        if not isinstance(got, list):
            return "%s: expected a list, got %r" % (path, got)
        return match(sorted(exp["unordered"], key=key), sorted(got, key=key), path)
    if isinstance(exp, dict) and set(exp) == {"re"}:
        return None if isinstance(got, str) and re.search(exp["re"], got) else \
            "%s: %r does not match /%s/" % (path, got, exp["re"])
    if isinstance(exp, dict):
        if not isinstance(got, dict):
            return "%s: expected an object, got %r" % (path, got)
        if list(exp) != list(got) and set(exp) == set(got) and path.endswith("result"):
            return "%s: keys in order %r, got %r" % (path, list(exp), list(got))
        for k in exp:
            if k not in got:
                return "%s: missing %r" % (path, k)
            d = match(exp[k], got[k], path + "." + k)
            if d:
                return d
        extra = set(got) - set(exp)
        return "%s: unexpected %r" % (path, sorted(extra)) if extra else None
    if isinstance(exp, list):
        if not isinstance(got, list) or len(exp) != len(got):
            return "%s: expected %r, got %r" % (path, exp, got)
        for i, (a, b) in enumerate(zip(exp, got)):
            d = match(a, b, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    if exp != got or type(exp) != type(got):
        return "%s: expected %r, got %r" % (path, exp, got)
    return None


def host_check(root, chk):
    kind, args = chk[0], [a.replace("$P", root) if isinstance(a, str) else a for a in chk[1:]]
    p = lambda rel: rel if rel.startswith("/") else os.path.join(root, rel)
    try:
        if kind == "content":
            with open(p(args[0]), "rb") as f:
                data = f.read()
            want = args[1].encode()
            return None if data == want else "%s holds %r, not %r" % (args[0], data[:200], want[:200])
        if kind == "absent":
            return None if not os.path.lexists(p(args[0])) else "%s exists" % args[0]
        if kind == "exists":
            return None if os.path.lexists(p(args[0])) else "%s is missing" % args[0]
        if kind == "symlink":
            t = os.readlink(p(args[0]))
            return None if t == args[1] else "%s points to %r" % (args[0], t)
        if kind == "fifo":
            return None if stat.S_ISFIFO(os.lstat(p(args[0])).st_mode) else "%s is no FIFO" % args[0]
        if kind == "dir":
            return None if stat.S_ISDIR(os.lstat(p(args[0])).st_mode) else "%s is no directory" % args[0]
        if kind == "mode":
            m = stat.S_IMODE(os.lstat(p(args[0])).st_mode)
            return None if m == int(args[1], 8) else "%s has mode %o" % (args[0], m)
        if kind == "sameinode":
            a, b = os.stat(p(args[0])), os.stat(p(args[1]))
            return None if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) else "%s and %s differ" % tuple(args)
        if kind == "count":
            n = len(os.listdir(p(args[0])))
            return None if n == args[1] else "%s holds %d entries, not %d" % (args[0], n, args[1])
    except OSError as e:
        return "%s: %s" % (args[0] if args else kind, e)
    return "unknown host check %r" % kind


def landlock_abi():
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        return max(0, libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint(1)))
    except Exception:
        return 0


def missing(what, codex):
    """Why a file's requirement is not met here, or None."""
    if codex:
        return "ward only"
    if what == "fallback":
        if not os.access(HARDENED, os.X_OK):
            return "hardened-wrapper is not built (%s)" % HARDENED
        if landlock_abi() < 1:
            return "Landlock is unavailable: ward's fallback refuses to run without it"
        return None
    return "unknown requirement %r" % what


def run_file(tap, path, tmp, codex):
    base = os.path.splitext(os.path.basename(path))[0]
    root = os.path.join(tmp, base)
    env = {"T": "file://" + root, "P": root, "defs": {}}
    srv = None
    socks = []
    server_args, server_cwd, wrapper = None, None, None
    with open(path) as f:
        lines = [(i + 1, l) for i, l in enumerate(f) if l.strip()]
    try:
        for lineno, line in lines:
            step = json.loads(line)
            where = "%s:%d" % (os.path.basename(path), lineno)
            if "comment" in step and len(step) == 1:
                continue
            if "fixture" in step:
                if srv:
                    srv.close()
                    srv = None
                socks = build_fixture(root, step["fixture"])
                continue
            if "define" in step:
                env["defs"].update(step["define"])
                continue
            if "requires" in step:
                why = missing(step["requires"], codex)
                if why:
                    tap.skip("%s: every case" % base, why)
                    return
                continue
            if "server" in step:
                if srv:
                    srv.close()
                server_args = step["server"]
                server_cwd = os.path.join(root, step.get("cwd", ""))
                wrapper = HARDENED if step.get("fallback") else None
                srv = Server(server_args, server_cwd, codex, wrapper=wrapper)
                continue
            name = "%s: %s" % (base, step.get("name", where))
            only = step.get("only")
            if only and only != ("root" if IS_ROOT else "user"):
                tap.skip(name, "only as %s" % only)
                continue
            if codex and step.get("ward_only"):
                continue
            if "host" in step:
                diffs = [d for d in (host_check(root, c) for c in step["host"]) if d]
                tap.check(name, not diffs, where, *diffs)
                continue
            if "send" not in step:
                raise ValueError("%s: a step without send or host" % where)
            exp = step.get("expect_root" if IS_ROOT else "expect_user", step.get("expect"))
            n = step.get("repeat", 1)
            diff = None
            for i in range(n):
                env["i"] = str(i)
                req = subst(step["send"], env)
                want = subst(exp, env)
                got = srv.request(req["method"], req.get("params"), step.get("timeout", 20),
                                  raw_params="params" in req)
                d = match(want, got)
                if d:
                    diff = ["request: " + json.dumps(req)[:600], "answer:  " + json.dumps(got)[:600],
                            d]
                    if "timeout" in got or "eof" in got:
                        diff.append("server stderr: " + srv.stderr())
                    break
            env.pop("i", None)
            if diff:
                tap.not_ok(name, where, *diff)
                if any("timeout" in x or "eof" in x for x in diff[1:2]):
                    srv.close()
                    srv = Server(server_args, server_cwd, codex, wrapper=wrapper)
            else:
                tap.ok(name)
    finally:
        if srv:
            srv.close()
        for s in socks:
            s.close()


def main():
    args = sys.argv[1:]
    codex = None
    if args[:1] == ["--codex"]:
        codex, args = args[1], args[2:]
    files = args or sorted(os.path.join(HERE, f) for f in os.listdir(HERE) if f.endswith(".jsonl"))
    if not codex and not os.access(WARD, os.X_OK):
        if MUST_WORK:
            print("Bail out! %s is missing" % WARD)
            return 1
        print("1..0 # SKIP %s is missing (build first)" % WARD)
        return 0
    tmp = tempfile.mkdtemp(prefix="ward-fs-", dir=os.environ.get("WARD_TEST_TMPDIR", "/var/tmp"))
    os.chmod(tmp, 0o755)
    tap = Tap()
    try:
        for f in files:
            run_file(tap, f, tmp, codex)
        if not codex and not args:
            sys.path.insert(0, HERE)
            import adversarial
            adversarial.run(tap, tmp, Server)
    finally:
        for dirpath, dirnames, _ in os.walk(tmp):
            for d in dirnames:
                try:
                    os.chmod(os.path.join(dirpath, d), 0o755)
                except OSError:
                    pass
        shutil.rmtree(tmp, ignore_errors=True)
    print("1..%d" % tap.n)
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
