#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Clients of `ward serve` for the limits tests (tests/integration/test-limits.sh).

Uses serve-client.py's raw WebSocket client. Subcommands print one line per
result:

  hog URL N MIB LIMIT     N times in a row on one connection, start `probe alloc MIB` with
                          process/start's limits {"memory": LIMIT}, waiting for each to exit
                          (the later ones run in prepared sandboxes): per process
                          "exit CODE limit RESOURCE|null usage yes|no memory ENFORCEMENT"
  budget URL MARK         connection A starts `probe sleep 60 MARK` until a start is refused
                          (at most 40): "a started N", "a refused MESSAGE"; then connection B
                          runs `probe sleep 0`: "b exit CODE"; then "a alive N" (A's processes
                          still running, per /proc)

$PROBE is the probe helper's path.
"""
import importlib.util
import os
import sys
import time

spec = importlib.util.spec_from_file_location(
    "serve_client", os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve-client.py"))
sc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sc)
PROBE = os.environ["PROBE"]


EXITED = []


def start(s, r, rid, pid, argv, limits=None):
    params = {"processId": pid, "argv": argv, "cwd": "file://" + os.getcwd(),
              "env": {"PATH": "/usr/bin:/bin"}, "tty": False}
    if limits:
        params["limits"] = limits
    sc.send(s, {"id": rid, "method": "process/start", "params": params})
    while True:
        m = r.message()
        if m.get("method") == "process/exited":
            EXITED.append(m["params"])
        if m.get("id") == rid:
            return m


def wait_exited(r, pid, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = r.message()
        if m.get("method") == "process/exited" and m["params"]["processId"] == pid:
            return m["params"]
    raise SystemExit("no process/exited for " + pid)


def alive(mark):
    n = 0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                argv = f.read().split(b"\0")
            # The sleepers only: "PROBE sleep 60 MARK" (not this client, nor its timeout(1)).
            if len(argv) >= 4 and argv[1] == b"sleep" and argv[3] == mark.encode():
                n += 1
        except OSError:
            pass
    return n


def main():
    cmd, url = sys.argv[1], sys.argv[2]
    if cmd == "hog":
        n, mib, limit = int(sys.argv[3]), sys.argv[4], sys.argv[5]
        s, r = sc.session(url, "")
        s.settimeout(120)  # an emulated machine takes its time
        for i in range(n):
            pid = "hog%d" % i
            m = start(s, r, 10 + i, pid, [PROBE, "alloc", mib], {"memory": limit})
            if "error" in m:
                print("start error", m["error"]["message"])
                continue
            e = wait_exited(r, pid)
            lim = e.get("limit")
            print("exit %d limit %s usage %s memory %s" % (
                e["exitCode"], lim["resource"] if lim else "null",
                "yes" if e.get("usage") else "no", (e.get("limits") or {}).get("memory")))
            sys.stdout.flush()
            # Time for the next prepared sandbox (built at once after a start).
            time.sleep(0.5)
    elif cmd == "budget":
        mark = sys.argv[3]
        a, ra = sc.session(url, "")
        a.settimeout(120)
        started = 0
        refused = None
        for i in range(40):
            m = start(a, ra, 100 + i, "a%d" % i, [PROBE, "sleep", "60", mark])
            if "error" in m:
                refused = m["error"]["message"]
                break
            started += 1
        print("a started %d" % started)
        print("a refused %s" % refused)
        sys.stdout.flush()
        b, rb = sc.session(url, "")
        b.settimeout(120)
        m = start(b, rb, 1, "b", [PROBE, "sleep", "0"])
        if "error" in m:
            print("b error %s" % m["error"]["message"])
        else:
            print("b exit %d" % wait_exited(rb, "b")["exitCode"])
        # A start's reply comes before its command's exec: give the last ones a moment.
        deadline = time.time() + 10
        while alive(mark) < started and time.time() < deadline:
            time.sleep(0.1)
        print("a alive %d" % alive(mark))
        # What A was told meanwhile (a start that failed inside says so here).
        a.settimeout(0.5)
        try:
            while True:
                m = ra.message()
                if m.get("method") == "process/exited":
                    EXITED.append(m["params"])
        except (OSError, EOFError):
            pass
        for e in EXITED:
            if e["processId"].startswith("a"):
                print("a exited %s %s %s" % (e["processId"], e["exitCode"], e.get("failure")))
    else:
        raise SystemExit("unknown subcommand " + cmd)


if __name__ == "__main__":
    main()
