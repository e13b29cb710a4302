#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# A real WebSocket client, python3-websockets (Debian's package), against the
# test server of tests/unit/test-ws.c (an echo server that answers "close"
# with a close 1000 "bye" and "big" with 1 MiB of binary). Runs its checks,
# prints each failure, exits 0 when all passed, 1 otherwise, 77 when the
# library is missing.
#
# usage: ws-client.py PORT TOKEN
import asyncio
import http.client
import sys

try:
    import websockets
    from websockets.exceptions import ConnectionClosed, InvalidStatusCode
except ImportError:
    sys.exit(77)

PORT, TOKEN = sys.argv[1], sys.argv[2]
URI = f"ws://127.0.0.1:{PORT}/"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"ws-client: FAILED: {what}", file=sys.stderr, flush=True)


def close_code(exc):
    rcvd = getattr(exc, "rcvd", None)
    return rcvd.code if rcvd is not None else getattr(exc, "code", None)


async def echo_session():
    async with websockets.connect(URI, extra_headers=AUTH, max_size=2**21) as ws:
        await ws.send('{"id":1,"method":"initialize","params":{"clientName":"py"}}')
        check(await ws.recv() == '{"id":1,"method":"initialize","params":{"clientName":"py"}}',
              "text echo")
        await ws.send(b"\x00\xff\x10\n")
        check(await ws.recv() == b"\x00\xff\x10\n", "binary echo")
        await ws.send("caf\u00e9 \U0001F600")
        check(await ws.recv() == "caf\u00e9 \U0001F600", "non-ASCII text echo")
        pong = await ws.ping(b"are you there")
        await asyncio.wait_for(pong, 20)
        await ws.send(["frag", "men", "ted"])  # one message in three frames
        check(await ws.recv() == "fragmented", "fragmented message echo")
        await ws.send("big")
        big = await ws.recv()
        check(isinstance(big, bytes) and len(big) == 2**20 and big[:3] == b"\x00\x01\x02"
              and big[-1] == 0xff, "1 MiB binary from the server")
    check(ws.close_code == 1000, f"client close answered with 1000 (got {ws.close_code})")


async def server_close():
    async with websockets.connect(URI, extra_headers=AUTH) as ws:
        await ws.send("close")
        try:
            await ws.recv()
            check(False, "server close: a message instead of the close")
        except ConnectionClosed as e:
            check(close_code(e) == 1000 and e.rcvd.reason == "bye",
                  f"server close 1000 bye (got {close_code(e)})")


async def oversized():
    async with websockets.connect(URI, extra_headers=AUTH, max_size=None) as ws:
        await ws.send("x" * (2**20 + 1))
        try:
            await ws.recv()
            check(False, "oversized: a message instead of the close")
        except ConnectionClosed as e:
            check(close_code(e) == 1009, f"oversized message closed with 1009 (got {close_code(e)})")


async def refused(headers, origin, status, what):
    try:
        ws = await websockets.connect(URI, extra_headers=headers, origin=origin)
        await ws.close()
        check(False, f"{what}: connected")
    except InvalidStatusCode as e:
        check(e.status_code == status, f"{what}: {status} (got {e.status_code})")


async def concurrent():
    async def one(tag):
        async with websockets.connect(URI, extra_headers=AUTH) as ws:
            for i in range(20):
                msg = f"{tag}-{i}"
                await ws.send(msg)
                check(await ws.recv() == msg, f"concurrent echo {msg}")

    await asyncio.gather(one("a"), one("b"))


def readyz():
    conn = http.client.HTTPConnection("127.0.0.1", int(PORT), timeout=20)
    conn.request("GET", "/readyz")
    r = conn.getresponse()
    body = r.read()
    check(r.status == 200 and body == b"ok\n", f"readyz 200 ok (got {r.status} {body!r})")
    conn.close()


async def main():
    await echo_session()
    await server_close()
    await oversized()
    await refused({"Authorization": "Bearer wrong"}, None, 401, "wrong token")
    await refused({}, None, 401, "no token")
    await refused(AUTH, "http://evil.example", 403, "Origin with a valid token")
    await concurrent()
    await asyncio.get_running_loop().run_in_executor(None, readyz)


asyncio.run(asyncio.wait_for(main(), 90))
sys.exit(1 if failures else 0)
