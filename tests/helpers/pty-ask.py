#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Drives a command on a pseudo-terminal as a person at the keyboard would.

    pty-ask.py [--keys KEYS] [--signal SIG] [--timeout S] -- COMMAND [ARG...]

Each time the command's output ends with an approval prompt ("> "), the next
key of KEYS is typed; with --signal, the signal is sent to the command at the
first prompt instead of a key. Everything the command wrote to the terminal is
copied to stdout (carriage returns dropped), then two lines:
    prompts: N
    termios: restored|raw    (the terminal's modes after the command ended)
The exit status is the command's (128+N when killed by signal N), or 99 when
the helper timed out.
"""
import argparse
import fcntl
import os
import select
import signal
import sys
import termios
import time

ap = argparse.ArgumentParser()
ap.add_argument("--keys", default="")
ap.add_argument("--signal", type=int, default=0)
ap.add_argument("--timeout", type=float, default=40)
ap.add_argument("command", nargs=argparse.REMAINDER)
a = ap.parse_args()
cmd = a.command[1:] if a.command[:1] == ["--"] else a.command

# The terminal's modes are taken before the command exists: taken after the
# fork, a busy machine can let the command set its raw mode first.
fd, slave = os.openpty()
before = termios.tcgetattr(fd)
pid = os.fork()
if pid == 0:
    try:
        os.close(fd)
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for i in range(3):
            os.dup2(slave, i)
        if slave > 2:
            os.close(slave)
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
os.close(slave)
keys = list(a.keys)
out = b""
prompts = 0
pending = b""
deadline = time.monotonic() + a.timeout
status = None
while True:
    if time.monotonic() > deadline:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
        print("\nhelper: timed out")
        sys.exit(99)
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if data:
            out += data
            pending += data
            if pending.endswith(b"\a") and keys and not a.signal:
                # The key answered nothing (a bell): the next one.
                pending = b""
                os.write(fd, keys.pop(0).encode())
            elif pending.endswith(b"> "):
                prompts += 1
                pending = b""
                if a.signal:
                    time.sleep(0.2)
                    os.kill(pid, a.signal)
                elif keys:
                    os.write(fd, keys.pop(0).encode())
            continue
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        status = st
        # What is still buffered.
        while select.select([fd], [], [], 0.1)[0]:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
        break

try:
    after = termios.tcgetattr(fd)
    restored = (after[3] & (termios.ICANON | termios.ECHO | termios.ISIG)) == \
        (before[3] & (termios.ICANON | termios.ECHO | termios.ISIG))
except termios.error:
    restored = False
sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
print("\nprompts: %d" % prompts)
print("termios: %s" % ("restored" if restored else "raw"))
sys.exit(os.waitstatus_to_exitcode(status) if os.waitstatus_to_exitcode(status) >= 0
         else 128 - os.waitstatus_to_exitcode(status))
