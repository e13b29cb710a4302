# SPDX-License-Identifier: MIT
"""The adversarial cases of the filesystem methods (run by run.py, TAP):
huge listings, deep trees, races that swap a symlink between an inside and an
outside target while sandboxed operations run, FIFOs swapped in under
unsandboxed ones, full queues, a connection that goes while an operation runs.
Bounded in iterations; timing never decides a verdict."""
import base64
import json
import os
import shutil
import subprocess
import threading
import time

from run import IS_ROOT, WARD

B64 = lambda b: base64.b64encode(b).decode()


def sandbox(root, write=True, deny=None):
    entries = [{"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}]
    if write:
        entries.append({"path": {"type": "path", "path": "file://" + root + "/ws"}, "access": "write"})
    for d in deny or []:
        entries.append({"path": {"type": "path", "path": "file://" + d}, "access": "none"})
    return {"permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": entries},
                            "network": "restricted"},
            "cwd": "file://" + root + "/ws", "windowsSandboxLevel": "disabled"}


def fresh(tmp, name):
    root = os.path.join(tmp, "adv-" + name)
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(os.path.join(root, "ws"))
    os.makedirs(os.path.join(root, "out"))
    return root


class Flipper(threading.Thread):
    """Swaps `link` between targets as fast as it can (atomic rename of a fresh symlink)."""

    def __init__(self, link, targets):
        super().__init__(daemon=True)
        self.link, self.targets, self.stop, self.flips = link, targets, False, 0

    def run(self):
        tmp = self.link + ".flip"
        while not self.stop:
            t = self.targets[self.flips % len(self.targets)]
            try:
                os.symlink(t, tmp)
                os.rename(tmp, self.link)
            except OSError:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            self.flips += 1


def race_writes(tap, tmp, Server, label, args, use_sandbox):
    """Sandboxed writes through a symlink flipped between a file inside and one outside."""
    root = fresh(tmp, "race-" + label)
    ws, out = root + "/ws", root + "/out"
    for p, c in ((ws + "/inside.txt", b"inside\n"), (out + "/target.txt", b"original\n")):
        with open(p, "wb") as f:
            f.write(c)
    os.makedirs(ws + "/sub")
    os.makedirs(out + "/victimdir")
    with open(out + "/victim", "wb") as f:
        f.write(b"keep\n")
    os.symlink(ws + "/inside.txt", ws + "/link")
    os.symlink(ws + "/sub", ws + "/dlink")
    sb = {"sandbox": sandbox(root)} if use_sandbox else {}
    srv = Server(args, ws)
    fl = [Flipper(ws + "/link", [ws + "/inside.txt", out + "/target.txt"]),
          Flipper(ws + "/dlink", [ws + "/sub", out])]
    for f in fl:
        f.start()
    answers = {"ok": 0, "denied": 0, "other": []}
    end = time.monotonic() + 60
    try:
        for i in range(60):
            if time.monotonic() > end:
                break
            reqs = [("fs/writeFile", dict(path="file://" + ws + "/link", dataBase64=B64(b"overwritten %d\n" % i))),
                    ("fs/writeFile", dict(path="file://" + ws + "/dlink/new.txt", dataBase64=B64(b"x"))),
                    ("fs/createDirectory", dict(path="file://" + ws + "/dlink/newdir")),
                    ("fs/remove", dict(path="file://" + ws + "/dlink/victim", recursive=False)),
                    ("fs/remove", dict(path="file://" + ws + "/dlink/victimdir")),
                    ("fs/copy", dict(sourcePath="file://" + ws + "/inside.txt",
                                     destinationPath="file://" + ws + "/dlink/copied.txt", recursive=False)),
                    ("fs/open", dict(handleId="h", path="file://" + ws + "/link", mode="replace"))]
            for m, p in reqs:
                p.update(sb)
                r = srv.request(m, p, timeout=30)
                if "result" in r:
                    answers["ok"] += 1
                    if m == "fs/open":
                        srv.request("fs/writeBlock", {"handleId": "h", "offset": 0, "chunk": B64(b"streamed\n")})
                        srv.request("fs/close", {"handleId": "h"})
                elif "error" in r:
                    answers["denied"] += 1
                else:
                    answers["other"].append((m, r))
    finally:
        for f in fl:
            f.stop = True
        for f in fl:
            f.join()
        srv.close()
    with open(out + "/target.txt", "rb") as f:
        target = f.read()
    outside = sorted(os.listdir(out))
    flips = sum(f.flips for f in fl)
    tap.check("race (%s): %d flips, %d writes done, %d refused; the outside file never changed" %
              (label, flips, answers["ok"], answers["denied"]),
              target == b"original\n" and not answers["other"],
              "target.txt: %r" % target, "no answer: %r" % answers["other"][:3])
    tap.check("race (%s): nothing created, removed or copied outside" % label,
              outside == ["target.txt", "victim", "victimdir"] and open(out + "/victim", "rb").read() == b"keep\n",
              "outside now: %r" % outside)


def race_reads(tap, tmp, Server):
    """Sandboxed reads through a symlink flipped between a public file and a denied one."""
    root = fresh(tmp, "race-read")
    ws, out = root + "/ws", root + "/out"
    with open(ws + "/public.txt", "wb") as f:
        f.write(b"public\n")
    with open(out + "/secret.txt", "wb") as f:
        f.write(b"SECRET\n")
    os.symlink(ws + "/public.txt", ws + "/rlink")
    os.symlink(ws, ws + "/dlink")
    srv = Server(["--allow-unsandboxed"], ws)
    fl = [Flipper(ws + "/rlink", [ws + "/public.txt", out + "/secret.txt"]), Flipper(ws + "/dlink", [ws, out])]
    for f in fl:
        f.start()
    leaked, answered = [], 0
    try:
        sb = sandbox(root, deny=[out])
        for i in range(60):
            for m, p in (("fs/readFile", {"path": "file://" + ws + "/rlink"}),
                         ("fs/readFile", {"path": "file://" + ws + "/dlink/secret.txt"}),
                         ("fs/readDirectory", {"path": "file://" + ws + "/dlink"}),
                         ("fs/copy", {"sourcePath": "file://" + ws + "/rlink",
                                      "destinationPath": "file://" + ws + "/copy%d" % i, "recursive": False})):
                p["sandbox"] = sb
                r = srv.request(m, p, timeout=30)
                answered += "result" in r or "error" in r
                if "SECRET" in json.dumps(r) or "U0VDUkVU" in json.dumps(r) or \
                        any(e.get("fileName") == "secret.txt" for e in r.get("result", {}).get("entries", [])):
                    leaked.append((m, r))
            o = srv.request("fs/open", {"handleId": "r", "path": "file://" + ws + "/rlink", "sandbox": sb})
            if "result" in o:
                b = srv.request("fs/readBlock", {"handleId": "r", "offset": 0, "len": 100})
                if "U0VDUkVU" in json.dumps(b):
                    leaked.append(("fs/readBlock", b))
                srv.request("fs/close", {"handleId": "r"})
    finally:
        for f in fl:
            f.stop = True
        for f in fl:
            f.join()
        srv.close()
    # fs/copy of a symlink makes a symlink (not data): only a regular copy could hold a secret.
    copies = [os.path.join(ws, n) for n in os.listdir(ws) if n.startswith("copy")]
    stolen = [c for c in copies if not os.path.islink(c) and open(c, "rb").read() != b"public\n"]
    tap.check("race (reads): %d flips, %d answers; the denied file was never read" %
              (sum(f.flips for f in fl), answered), not leaked and not stolen,
              "leaked: %r" % leaked[:2], "copies holding something else: %r" % stolen)


def race_fifo(tap, tmp, Server):
    """Unsandboxed, in the server: a path flipped between a file and a FIFO never blocks it."""
    root = fresh(tmp, "race-fifo")
    ws = root + "/ws"
    with open(ws + "/file", "wb") as f:
        f.write(b"file\n")
    os.mkfifo(ws + "/fifo")
    os.symlink(ws + "/file", ws + "/x")
    srv = Server(["--allow-unsandboxed"], ws)
    fl = Flipper(ws + "/x", [ws + "/file", ws + "/fifo"])
    fl.start()
    stuck = []
    try:
        for i in range(300):
            for m, p in (("fs/readFile", {"path": "file://" + ws + "/x"}),
                         ("fs/writeFile", {"path": "file://" + ws + "/x", "dataBase64": B64(b"w\n")}),
                         ("fs/open", {"handleId": "o", "path": "file://" + ws + "/x"}),
                         ("fs/copy", {"sourcePath": "file://" + ws + "/x", "destinationPath": "file://" + ws + "/c",
                                      "recursive": False}),
                         ("fs/close", {"handleId": "o"})):
                r = srv.request(m, p, timeout=10)
                if "result" not in r and "error" not in r:
                    stuck.append((m, r))
            if stuck:
                break
            try:
                os.unlink(ws + "/c")
            except OSError:
                pass
    finally:
        fl.stop = True
        fl.join()
        srv.close()
    tap.check("race (FIFO swapped in, unsandboxed, in the server): %d flips, never blocked" % fl.flips,
              not stuck, "no answer: %r" % stuck[:2])


def huge_listing(tap, tmp, Server):
    root = fresh(tmp, "huge")
    big = root + "/ws/big"
    os.makedirs(big)
    for i in range(50000):
        os.close(os.open("%s/f%05d" % (big, i), os.O_CREAT | os.O_WRONLY, 0o644))
    modes = (("unsandboxed", ["--allow-unsandboxed"], {}), ("sandboxed", [], {"sandbox": sandbox(root)}))
    for label, args, sb in modes:
        srv = Server(args, root + "/ws")
        try:
            r = srv.request("fs/readDirectory", dict(path="file://" + big, **sb), timeout=120)
            n = len(r.get("result", {}).get("entries", []))
            tap.check("readDirectory of 50000 entries (%s)" % label, n == 50000, "answer: %s" % str(r)[:300])
        finally:
            srv.close()
    os.close(os.open(big + "/one-more", os.O_CREAT | os.O_WRONLY, 0o644))
    for label, args, sb in modes:
        srv = Server(args, root + "/ws")
        try:
            r = srv.request("fs/readDirectory", dict(path="file://" + big, **sb), timeout=120)
            want = {"error": {"code": -32603, "message": "fs/readDirectory returned 50001 entries; limit is 50000"}}
            tap.check("readDirectory of 50001 entries is refused (%s)" % label, r == want, "answer: %s" % str(r)[:300])
            r = srv.request("fs/walk", dict(path="file://" + root + "/ws",
                                            options={"maxDepth": 64, "maxDirectories": 10000, "maxEntries": 50000,
                                                     "followDirectorySymlinks": False}, **sb), timeout=120)
            res = r.get("result", {})
            n = len(res.get("entries", []))
            # The answer's budget ends it first: 4 MiB, each entry charged its URI and 64 bytes
            # (Codex 0.169 stops at the same entry).
            want, spent = 0, 0
            for p in ["file://%s/ws/big" % root] + ["file://%s/ws/big/f%05d" % (root, i) for i in range(50000)]:
                if spent + len(p) + 64 > 4 << 20:
                    break
                spent += len(p) + 64
                want += 1
            tap.check("walk of 50002 entries stops at its 4 MiB budget, truncated (%s): %d entries" % (label, n),
                      n == want and res.get("truncated") is True, "want %d entries; answer: %s" % (want, str(r)[:300]))
        finally:
            srv.close()


def make_chain(base, depth, name):
    """base/name/name/... depth levels, made relative to descriptors (deeper than PATH_MAX)."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        f = os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
        os.write(f, b"leaf\n")
        os.close(f)
    finally:
        os.close(fd)


def chain_depth(base, name):
    fd, n = os.open(base, os.O_RDONLY | os.O_DIRECTORY), 0
    try:
        while True:
            try:
                nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                return n, "leaf" in os.listdir(fd)
            os.close(fd)
            fd, n = nfd, n + 1
    finally:
        os.close(fd)


def deep_trees(tap, tmp, Server):
    root = fresh(tmp, "deep")
    ws = root + "/ws"
    os.makedirs(ws + "/walk")
    make_chain(ws + "/walk", 100, "d")
    srv = Server(["--allow-unsandboxed"], ws)
    try:
        r = srv.request("fs/walk", {"path": "file://" + ws + "/walk",
                                    "options": {"maxDepth": 64, "maxDirectories": 10000, "maxEntries": 50000,
                                                "followDirectorySymlinks": False}}, timeout=60)
        ents = r.get("result", {}).get("entries", [])
        tap.check("a walk 100 levels deep stops at depth 64 (65 entries), not truncated",
                  len(ents) == 65 and ents[-1]["path"].endswith("/d" * 65) and r["result"]["truncated"] is False,
                  "answer: %s" % str(r)[:300])
        # 1500 levels of 9 bytes: 13 KiB of path, past PATH_MAX; copied and removed fd by fd.
        for label, args, sb in (("unsandboxed", ["--allow-unsandboxed"], {}),
                                ("sandboxed", [], {"sandbox": sandbox(root)})):
            os.makedirs(ws + "/deep-" + label)
            make_chain(ws + "/deep-" + label, 1500, "dddddddd")
            s = Server(args, ws)
            try:
                r1 = s.request("fs/copy", dict(sourcePath="file://" + ws + "/deep-" + label,
                                               destinationPath="file://" + ws + "/copy-" + label,
                                               recursive=True, **sb), timeout=120)
                depth, leaf = chain_depth(ws + "/copy-" + label, "dddddddd")
                tap.check("a tree 1500 levels deep is copied (%s)" % label,
                          r1 == {"result": {}} and depth == 1500 and leaf, "answer: %r" % r1,
                          "copied depth %d, leaf %s" % (depth, leaf))
                r2 = s.request("fs/remove", dict(path="file://" + ws + "/deep-" + label, **sb), timeout=120)
                r3 = s.request("fs/remove", dict(path="file://" + ws + "/copy-" + label, **sb), timeout=120)
                tap.check("a tree 1500 levels deep is removed (%s)" % label,
                          r2 == {"result": {}} and r3 == {"result": {}} and
                          not os.path.exists(ws + "/deep-" + label) and not os.path.exists(ws + "/copy-" + label),
                          "answers: %r %r" % (r2, r3))
            finally:
                s.close()
    finally:
        srv.close()


def big_files(tap, tmp, Server):
    root = fresh(tmp, "big")
    ws = root + "/ws"
    data = os.urandom(10 << 20)
    srv = Server([], ws)
    try:
        r = srv.request("fs/writeFile", {"path": "file://" + ws + "/ten", "dataBase64": B64(data),
                                         "sandbox": sandbox(root)}, timeout=120)
        with open(ws + "/ten", "rb") as f:
            ok = f.read() == data
        tap.check("a sandboxed write of 10 MiB", r == {"result": {}} and ok, "answer: %r" % r)
        r = srv.request("fs/readFile", {"path": "file://" + ws + "/ten"}, timeout=120)
        tap.check("a sandboxed read of 10 MiB", base64.b64decode(r.get("result", {}).get("dataBase64", "")) == data,
                  "answer: %s" % str(r)[:200])
        with open(ws + "/limit", "wb") as f:
            f.truncate(16 << 20)
        r = srv.request("fs/readFile", {"path": "file://" + ws + "/limit"}, timeout=120)
        data16 = base64.b64decode(r.get("result", {}).get("dataBase64", ""))
        tap.check("a read of 16 MiB (the limit)", len(data16) == 16 << 20 and not data16.strip(b"\0"),
                  "answer: %s" % str(r)[:200])
        with open(ws + "/limit", "ab") as f:
            f.write(b"x")
        r = srv.request("fs/readFile", {"path": "file://" + ws + "/limit"}, timeout=120)
        want = {"error": {"code": -32600, "message": "file is too large to read: limit is 16777216 bytes "
                                                     "(use fs/open and fs/readBlock)"}}
        tap.check("a read of 16 MiB + 1 is refused", r == want, "answer: %s" % str(r)[:300])
        r = srv.request("fs/open", {"handleId": "big", "path": "file://" + ws + "/limit"}, timeout=60)
        r2 = srv.request("fs/readBlock", {"handleId": "big", "offset": 16 << 20, "len": 10}, timeout=60)
        tap.check("which fs/readBlock reads", r2 == {"result": {"chunk": "eA==", "eof": True}}, "answers: %r %r" % (r, r2))
    finally:
        srv.close()


def queue_and_order(tap, tmp, Server):
    root = fresh(tmp, "queue")
    ws = root + "/ws"
    srv = Server([], ws)
    try:
        # Pipelined: the write is answered, and seen by the read behind it.
        base = srv.next_id
        srv.send({"id": base + 1, "method": "fs/writeFile",
                  "params": {"path": "file://" + ws + "/p.txt", "dataBase64": B64(b"pipelined")}})
        srv.send({"id": base + 2, "method": "fs/open", "params": {"handleId": "p", "path": "file://" + ws + "/p.txt"}})
        srv.send({"id": base + 3, "method": "fs/readBlock", "params": {"handleId": "p", "offset": 0, "len": 100}})
        srv.send({"id": base + 4, "method": "fs/readFile", "params": {"path": "file://" + ws + "/p.txt"}})
        got = [srv.recv(base + k, 60) for k in (1, 2, 3, 4)]
        srv.next_id = base + 4
        tap.check("pipelined requests are answered in order, each seeing the ones before",
                  got[0].get("result") == {} and got[1].get("result") == {"handleId": "p"} and
                  got[2].get("result") == {"chunk": B64(b"pipelined"), "eof": True} and
                  got[3].get("result") == {"dataBase64": B64(b"pipelined")}, "answers: %r" % got)
        # A burst of 100 sandboxed requests: at most 64 wait, the others are refused at once.
        base = srv.next_id
        for k in range(100):
            srv.send({"id": base + 1 + k, "method": "fs/getMetadata", "params": {"path": "file://" + ws}})
        answers = [srv.recv(base + 1 + k, 120) for k in range(100)]
        srv.next_id = base + 100
        ok = sum(1 for a in answers if "result" in a)
        refused = [a for a in answers if "error" in a]
        tap.check("a burst of 100: %d answered, %d refused as too many waiting" % (ok, len(refused)),
                  ok + len(refused) == 100 and ok >= 65 and
                  all("too many filesystem requests wait" in a["error"]["message"] for a in refused),
                  "answers: %s" % str(answers[:3] + refused[:2])[:600])
    finally:
        srv.close()


def helper_processes():
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if b"\0__fs-op\0" in f.read():
                        n += 1
            except OSError:
                pass
    return n


def connection_goes(tap, tmp, Server):
    root = fresh(tmp, "gone")
    ws = root + "/ws"
    os.makedirs(ws + "/tree")
    for i in range(2000):
        os.close(os.open("%s/tree/f%d" % (ws, i), os.O_CREAT | os.O_WRONLY, 0o644))
    srv = Server([], ws)
    srv.send({"id": 1, "method": "fs/copy", "params": {"sourcePath": "file://" + ws + "/tree",
                                                      "destinationPath": "file://" + ws + "/copy", "recursive": True}})
    for k in range(10):
        srv.send({"id": 2 + k, "method": "fs/readFile", "params": {"path": "file://" + ws + "/tree/f1"}})
    srv.p.stdin.close()
    try:
        rc = srv.p.wait(60)
    except subprocess.TimeoutExpired:
        rc = None
        srv.p.kill()
        srv.p.wait()
    end = time.monotonic() + 10
    while helper_processes() and time.monotonic() < end:
        time.sleep(0.1)
    tap.check("a connection that goes with an operation running: the server ends, no helper is left",
              rc == 0 and helper_processes() == 0, "exit status %r, helpers %d" % (rc, helper_processes()),
              srv.stderr())


def helper_by_hand(tap):
    serve = os.path.join(os.path.dirname(WARD), "ward-serve")
    r = subprocess.run([serve, "__fs-op"], capture_output=True, text=True)
    tap.check("ward-serve __fs-op run by hand refuses, saying what it is",
              r.returncode == 2 and "__fs-op is ward's own helper" in r.stderr, r.stderr)
    r = subprocess.run([serve, "__fs-op", "3", "-1"], capture_output=True, text=True)
    tap.check("ward-serve __fs-op with a descriptor that is no request",
              r.returncode == 2 and r.stdout == "" and "cannot read the filesystem request" in r.stderr,
              r.stderr)


def run(tap, tmp, Server):
    helper_by_hand(tap)
    race_writes(tap, tmp, Server, "explicit sandbox", ["--allow-unsandboxed"], True)
    race_writes(tap, tmp, Server, "server policy", [], False)
    race_reads(tap, tmp, Server)
    race_fifo(tap, tmp, Server)
    huge_listing(tap, tmp, Server)
    deep_trees(tap, tmp, Server)
    big_files(tap, tmp, Server)
    queue_and_order(tap, tmp, Server)
    connection_goes(tap, tmp, Server)
