#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Hostile and ordinary clients of `ward serve` for tests/integration/test-serve.sh.

A raw WebSocket client over a plain socket (so that the test controls every
byte: headers, masking, whether it reads at all), speaking Codex's exec-server
dialect. Subcommands print one line per check result and exit 0 when all held:

  http URL [HEADER: VALUE]...       one HTTP request to the server: prints "status N"
  run URL TOKEN                     initialize, start `echo hi`, read it back: "ok"
  flood URL TOKEN PID SECONDS       start `yes` and never read; sample the server's RSS
  drop URL TOKEN N                  N connections start a sleeper and vanish mid-message
  many URL TOKEN N                  one connection starts N sleepers, then prints "started N"
  halfopen URL TOKEN N PID          holds N connections that never finish their request head, then
                                    runs a session beside them: "ok", and "fds N", the most the
                                    server held meanwhile
  exec URL TOKEN ARGV...            one process (wardPolicy from $WARD_POLICY when set): its
                                    output, then "exit N"
  exited URL TOKEN N                one connection starts N `true`s and waits for them to close:
                                    "closed N"; after a line on stdin, reads each back (kept for
                                    30 s): "readable N"

The sleepers ($PROBE sleep) carry $MARK in their command line (not the client's own, so that a
search for the marker finds only them).
"""
import base64
import json
import os
import signal
import socket
import struct
import sys
import time


def parse(url):
    if url.startswith("unix:"):
        return ("unix", url[5:])
    hp = url[len("ws://"):].rstrip("/")
    host, port = hp.rsplit(":", 1)
    return ("tcp", (host.strip("[]"), int(port)))


def connect(url):
    kind, addr = parse(url)
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    else:
        s = socket.socket(socket.AF_INET6 if ":" in addr[0] else socket.AF_INET)
    s.settimeout(10)
    s.connect(addr)
    return s


def http(url, path="/", headers=()):
    s = connect(url)
    req = "GET %s HTTP/1.1\r\nHost: localhost\r\n" % path
    for h in headers:
        req += h + "\r\n"
    s.sendall((req + "\r\n").encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return s, data


def upgrade(url, token):
    hdrs = ["Upgrade: websocket", "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]
    if token:
        hdrs.append("Authorization: Bearer " + token)
    s, data = http(url, "/", hdrs)
    if not data.startswith(b"HTTP/1.1 101"):
        raise SystemExit("upgrade refused: %r" % data[:200])
    return s


def frame(payload, opcode=1):
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def send(s, msg):
    s.sendall(frame(json.dumps(msg).encode()))


class Reader:
    def __init__(self, s):
        self.s = s
        self.buf = b""

    def _need(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk

    def message(self):
        self._need(2)
        op, ln = self.buf[0] & 0x0F, self.buf[1] & 0x7F
        off = 2
        if ln == 126:
            self._need(4)
            ln = struct.unpack(">H", self.buf[2:4])[0]
            off = 4
        elif ln == 127:
            self._need(10)
            ln = struct.unpack(">Q", self.buf[2:10])[0]
            off = 10
        self._need(off + ln)
        payload, self.buf = self.buf[off:off + ln], self.buf[off + ln:]
        if op == 9:  # ping: answer, go on
            self.s.sendall(frame(payload, 10))
            return self.message()
        if op == 8:
            raise EOFError
        return json.loads(payload)

    def answer(self, rid):
        while True:
            m = self.message()
            if m.get("id") == rid:
                return m


def session(url, token):
    s = upgrade(url, token)
    r = Reader(s)
    send(s, {"id": 1, "method": "initialize", "params": {"clientName": "test"}})
    r.answer(1)
    send(s, {"method": "initialized"})
    return s, r


def start(s, r, pid, argv, rid):
    send(s, {"id": rid, "method": "process/start", "params": {
        "processId": pid, "argv": argv, "cwd": "file://" + os.getcwd(),
        "env": {"PATH": "/usr/bin:/bin"}, "tty": False}})
    return r.answer(rid)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def descendants(pid):
    """Every process below pid, by their parents in /proc."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def main():
    cmd, url = sys.argv[1], sys.argv[2]
    if cmd == "http":
        _, data = http(url, sys.argv[3] if len(sys.argv) > 3 else "/",
                       sys.argv[4:])
        print("status", data.split(b" ")[1].decode() if data else "none")
    elif cmd == "run":
        s, r = session(url, sys.argv[3])
        a = start(s, r, "p", ["echo", "hi"], 2)
        assert "result" in a, a
        send(s, {"id": 3, "method": "process/read", "params": {"processId": "p", "waitMs": 5000}})
        while True:
            a = r.answer(3)
            chunks = a["result"]["chunks"]
            if chunks:
                break
            send(s, {"id": 3, "method": "process/read", "params": {"processId": "p", "waitMs": 5000}})
        assert base64.b64decode(chunks[0]["chunk"]) == b"hi\n", a
        print("ok")
    elif cmd == "flood":
        token, spid, secs = sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
        s, r = session(url, token)
        a = start(s, r, "flood", ["yes", "ward-flood"], 2)
        assert "result" in a, a
        # From here on nothing is read: the server must stop the flood, not buffer it.
        peak = 0
        end = time.time() + secs
        while time.time() < end:
            peak = max(peak, rss_kib(spid))
            time.sleep(0.1)
        print("peak_rss_kib", peak)
        s.close()
    elif cmd == "pongs":
        # Pings with a 20-byte payload, their pongs never read, until the server stops
        # reading (its send queue full) or two million went; then the server's peak.
        token, spid = sys.argv[3], int(sys.argv[4])
        s, r = session(url, token)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(3)
        ping = bytes([0x89, 0x80 | 20]) + b"\0\0\0\0" + b"p" * 20
        batch = ping * 1000
        sent = 0
        try:
            while sent < 2000000:
                s.sendall(batch)
                sent += 1000
        except socket.timeout:
            pass
        time.sleep(0.5)
        print("pings", sent)
        print("peak_rss_kib", hwm_kib(spid))
        s.close()
    elif cmd == "orphans":
        # n connections, each leaving a sandboxed fs/copy behind (with a large member
        # ward ignores) and going once the copy has begun; the copies are stopped
        # (SIGSTOP) so that they outlive their connections whatever the machine's
        # speed. Then how many connections were refused and what the server holds;
        # the copies are let go at the end.
        token, spid, n, src = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
        pad = "A" * (12 << 20)
        refused = 0
        stopped = set()
        for i in range(n):
            try:
                s, r = session(url, token)
            except SystemExit as e:
                if " 503 " not in str(e):
                    raise
                refused += 1
                continue
            dst = "%s.%d" % (src, i)
            send(s, {"id": 2, "method": "fs/copy", "params": {
                "sourcePath": "file://" + src, "destinationPath": "file://" + dst,
                "recursive": True, "pad": pad}})
            for _ in range(200):
                if os.path.exists(dst):
                    break
                time.sleep(0.05)
            for pid in descendants(spid):
                if pid not in stopped:
                    try:
                        os.kill(pid, signal.SIGSTOP)
                        stopped.add(pid)
                    except OSError:
                        pass
            s.close()
            time.sleep(0.2)
        print("refused", refused)
        print("rss_kib", rss_kib(spid))
        print("peak_rss_kib", hwm_kib(spid))
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
    elif cmd == "retained":
        # Two processes of 60,000 bytes each, one after the other; then what each has retained.
        s, r = session(url, sys.argv[3])
        rid = 10
        for pid in ("a", "b"):
            rid += 1
            a = start(s, r, pid, ["sh", "-c", "head -c 60000 /dev/zero | tr '\\0' x"], rid)
            assert "result" in a, a
            while True:
                rid += 1
                send(s, {"id": rid, "method": "process/read",
                         "params": {"processId": pid, "afterSeq": 0, "waitMs": 5000}})
                a = r.answer(rid)["result"]
                if a.get("closed"):
                    break
        sizes = []
        for pid in ("a", "b"):
            rid += 1
            send(s, {"id": rid, "method": "process/read", "params": {"processId": pid, "afterSeq": 0}})
            a = r.answer(rid)["result"]
            sizes.append(sum(len(base64.b64decode(c["chunk"])) for c in a["chunks"]))
        print("retained", *sizes)
    elif cmd == "drop":
        token, n, marker = sys.argv[3], int(sys.argv[4]), os.environ["MARK"]
        for i in range(n):
            s, r = session(url, token)
            start(s, r, "p", [os.environ["PROBE"], "sleep", "1000", marker], 2)
            # Half of a message, then gone.
            s.sendall(frame(b'{"id":3,"method":"process/read","params":{"proc')[:20])
            s.close()
        print("dropped", n)
    elif cmd == "many":
        token, n, marker = sys.argv[3], int(sys.argv[4]), os.environ["MARK"]
        s, r = session(url, token)
        # A batch of starts is answered as the server gets through it (slowly under ASan).
        s.settimeout(150)
        ok = 0
        errors = []
        for i in range(n):
            send(s, {"id": 100 + i, "method": "process/start", "params": {
                "processId": "s%d" % i, "argv": [os.environ["PROBE"], "sleep", "1000", marker],
                "cwd": "file://" + os.getcwd(), "env": {"PATH": "/usr/bin:/bin"}, "tty": False}})
        for i in range(n):
            a = r.answer(100 + i)
            if "result" in a:
                ok += 1
            elif len(errors) < 3:
                errors.append(a)
        print("started", ok, json.dumps(errors))
        sys.stdout.flush()
        # Hold the connection until told to stop (stdin closes).
        sys.stdin.read()
        s.close()
    elif cmd == "halfopen":
        token, n, spid = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        held = []
        for i in range(n):
            h = connect(url)
            h.sendall(b"GET / HTTP/1.1\r\nHost: l")
            held.append(h)
        # The most descriptors the server holds while they wait (it accepts them as it can).
        peak = 0
        for i in range(20):
            peak = max(peak, len(os.listdir("/proc/%d/fd" % spid)))
            time.sleep(0.1)
        s, r = session(url, token)
        a = start(s, r, "p", ["true"], 2)
        assert "result" in a, a
        print("ok")
        print("fds", peak)
        s.close()
        for h in held:
            h.close()
    elif cmd == "exec":
        # exec URL TOKEN ARGV...: one process (the server's default sandbox, or the JSON of
        # $WARD_POLICY as its wardPolicy), its output as it came, then "exit N".
        s, r = session(url, sys.argv[3])
        params = {"processId": "x", "argv": sys.argv[4:], "cwd": "file://" + os.getcwd(),
                  "env": {"PATH": "/usr/bin:/bin"}, "tty": False}
        if os.environ.get("WARD_POLICY"):
            params["wardPolicy"] = json.loads(os.environ["WARD_POLICY"])
        send(s, {"id": 2, "method": "process/start", "params": params})
        a = r.answer(2)
        if "result" not in a:
            print("refused", json.dumps(a.get("error")))
            sys.exit(1)
        out, rid, after = b"", 3, 0
        while True:
            send(s, {"id": rid, "method": "process/read",
                     "params": {"processId": "x", "afterSeq": after, "waitMs": 5000}})
            a = r.answer(rid)["result"]
            rid += 1
            for c in a["chunks"]:
                out += base64.b64decode(c["chunk"])
                after = max(after, c["seq"])
            if a.get("closed"):
                break
        sys.stdout.write(out.decode(errors="replace"))
        print("exit", a.get("exitCode"))
    elif cmd == "exited":
        token, n = sys.argv[3], int(sys.argv[4])
        s, r = session(url, token)
        s.settimeout(110)
        for i in range(n):
            send(s, {"id": 100 + i, "method": "process/start", "params": {
                "processId": "t%d" % i, "argv": ["true"], "cwd": "file://" + os.getcwd(),
                "env": {"PATH": "/usr/bin:/bin"}, "tty": False}})
        started = closed = 0
        while closed < n:
            m = r.message()
            if m.get("id", 0) >= 100 and "result" in m:
                started += 1
            elif "error" in m:
                raise SystemExit("process/start failed: %r" % m)
            elif m.get("method") == "process/closed":
                closed += 1
        print("closed", closed)
        sys.stdout.flush()
        sys.stdin.readline()
        readable = 0
        for i in range(n):
            send(s, {"id": 5000 + i, "method": "process/read",
                     "params": {"processId": "t%d" % i}})
            a = r.answer(5000 + i)["result"]
            if a["exited"] and a["closed"] and a["exitCode"] == 0:
                readable += 1
        print("readable", readable)
        sys.stdout.flush()
        s.close()


if __name__ == "__main__":
    main()
