#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The "internet" of tests/integration/test-netproxy.sh, run inside the network
namespace the test makes: a DNS server the test controls (Debian's
python3-dnslib), and HTTP and HTTPS servers (a test CA) on every address,
answering by path:

  /hello                  "hello from <address>"
  /git/<repo>/...         git's smart HTTP (git http-backend as a CGI)
  /npm/<name>             an npm registry document, /npm/-/<file>.tgz its tarball
  /simple/<name>/         a pip simple index page, /files/<file> the file
  /big?bytes=N            N bytes of zeros (the throughput figure)

and a UDP echo on port 7 of every address (logged as "<address> udp <bytes>").

Every request is logged as one line, "<local address> <Host> <method> <path>",
to the log file, so a test can assert which "host" saw what (and that a
denied one saw nothing).

  netproxy-world.py --root DIR --log FILE --cert PEM --key PEM --zone FILE
    [--dns ADDR] [--http-port 80] [--https-port 443]

The zone file has one "name address[,address...]" per line; a name with
several addresses is answered with one of them in turn (rebinding).
"""
import argparse
import http.server
import os
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import urllib.parse

from dnslib import AAAA, QTYPE, RCODE, RR, A, DNSRecord
from dnslib.server import BaseResolver, DNSServer


class Zone(BaseResolver):
    def __init__(self, path):
        self.names = {}
        self.turn = {}
        self.lock = threading.Lock()
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    self.names[parts[0].lower().rstrip(".")] = parts[1].split(",")

    def resolve(self, request, handler):
        reply = request.reply()
        name = str(request.q.qname).lower().rstrip(".")
        addrs = self.names.get(name)
        if addrs is None:
            reply.header.rcode = RCODE.NXDOMAIN
            return reply
        with self.lock:
            i = self.turn.get(name, 0)
            self.turn[name] = i + 1
        addr = addrs[i % len(addrs)]
        if request.q.qtype == QTYPE.A and ":" not in addr:
            reply.add_answer(RR(request.q.qname, QTYPE.A, rdata=A(addr), ttl=0))
        elif request.q.qtype == QTYPE.AAAA and ":" in addr:
            reply.add_answer(RR(request.q.qname, QTYPE.AAAA, rdata=AAAA(addr), ttl=0))
        return reply


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root = "."
    log_path = "/dev/null"
    log_lock = threading.Lock()

    def log_message(self, fmt, *args):
        pass

    def note(self):
        local = self.connection.getsockname()[0]
        with self.log_lock, open(self.log_path, "a") as f:
            f.write("%s %s %s %s\n" % (local, self.headers.get("Host", "-"), self.command,
                                       self.path))

    def send(self, code, body, ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_POST(self):
        self.do_GET()

    def do_GET(self):
        self.note()
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        if path == "/hello":
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send(200, b"hello from " + self.connection.getsockname()[0].encode() +
                      (b" body=" + body if body else b"") + b"\n")
        elif path == "/big":
            n = int(urllib.parse.parse_qs(url.query).get("bytes", ["0"])[0])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"\0" * 65536
            while n > 0:
                k = min(n, len(chunk))
                self.wfile.write(chunk[:k])
                n -= k
        elif path.startswith("/git/"):
            self.git(url)
        elif path.startswith("/npm/"):
            self.npm(path[len("/npm/"):])
        elif path.startswith("/simple/") or path.startswith("/files/"):
            self.static(path)
        else:
            self.send(404, b"not found\n")

    def static(self, path):
        p = os.path.normpath(os.path.join(self.root, path.lstrip("/")))
        if os.path.isdir(p):
            p = os.path.join(p, "index.html")
        if not p.startswith(os.path.abspath(self.root)) or not os.path.isfile(p):
            self.send(404, b"not found\n")
            return
        with open(p, "rb") as f:
            data = f.read()
        self.send(200, data, "text/html" if p.endswith(".html") else "application/octet-stream")

    def npm(self, rest):
        if rest.startswith("-/"):
            self.static("/npm-files/" + rest[2:])
            return
        p = os.path.join(self.root, "npm", urllib.parse.unquote(rest) + ".json")
        if not os.path.isfile(p):
            self.send(404, b'{"error":"not found"}', "application/json")
            return
        with open(p, "rb") as f:
            self.send(200, f.read(), "application/json")

    def git(self, url):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = {
            "GIT_PROJECT_ROOT": os.path.join(self.root, "git"),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": url.path[len("/git"):],
            "QUERY_STRING": url.query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(length),
            "PATH": "/usr/bin:/bin",
        }
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        r = subprocess.run(["git", "http-backend"], input=body, env=env,
                           stdout=subprocess.PIPE, timeout=60)
        head, _, out = r.stdout.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.split(b"\r\n"):
            k, _, v = line.decode().partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--zone", required=True)
    ap.add_argument("--dns")
    ap.add_argument("--http-port", type=int, default=80)
    ap.add_argument("--https-port", type=int, default=443)
    a = ap.parse_args()
    Handler.root = os.path.abspath(a.root)
    Handler.log_path = a.log
    if a.dns:
        DNSServer(Zone(a.zone), address=a.dns, port=53).start_thread()
        DNSServer(Zone(a.zone), address=a.dns, port=53, tcp=True).start_thread()
    def udp_echo():
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.setsockopt(socket.IPPROTO_IP, 8, 1)  # IP_PKTINFO: answer from the address asked
        u.bind(("0.0.0.0", 7))
        while True:
            data, anc, _, peer = u.recvmsg(65535, 1024)
            local = "?"
            for level, kind, value in anc:
                if level == socket.IPPROTO_IP and kind == 8:
                    local = socket.inet_ntoa(value[8:12])
            with Handler.log_lock, open(Handler.log_path, "a") as f:
                f.write("%s udp %d\n" % (local, len(data)))
            u.sendmsg([data], anc, 0, peer)
    threading.Thread(target=udp_echo, daemon=True).start()
    plain = Server(("0.0.0.0", a.http_port), Handler)
    tls = Server(("0.0.0.0", a.https_port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    tls.serve_forever()


if __name__ == "__main__":
    main()
