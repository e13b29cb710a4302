#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2016
#
# The network by domain, against an "internet" this test makes: a network
# namespace joined to the host's by a veth pair, with addresses of
# 198.19.250.0/24 (benchmarking, 198.18.0.0/15), a DNS server it controls and
# HTTP, HTTPS (a test CA), git smart HTTP, an npm registry and a pip index
# (198.19.x: outside the pool of 198.18.0.0/16 the sandbox's DNS stub uses)
# (tests/helpers/netproxy-world.py). Real clients run inside the sandbox:
# curl, git clone, npm install, pip download, a Python program that ignores
# the proxy variables, a DNS query for a denied name; and the attacks. Every
# case asserts what the client saw and what the internet's servers (and a
# canary on the host's loopback) saw.
#
# ward itself runs in a network namespace of the test's own ("the machine"), joined
# to the internet's: nothing of the host's network changes, and two runs of the
# suite at once (another checkout, another user) do not meet.
#
# Creating network namespaces needs root. With WARD_NETPROXY_AS_UID set (as
# scripts/test.sh does for its unprivileged pass) the root harness makes the
# internet and every ward runs as that uid; started without root it skips,
# which WARD_MUST_WORK=1 turns into a failure.
. "$(dirname "$0")/lib.sh"

NPY=/usr/bin/python3
AS_UID=${WARD_NETPROXY_AS_UID:-}
INET=198.19.250
# A public address of the machine's own (a cloud VM's on its eth0), held by ward's namespace.
SELF=100.128.0.1
NS=ward-inet-$$
CNS=ward-host-$$
NSX=(ip netns exec "$CNS")
VH=wnh$$
VI=wni$$
WORLD=$BASE/world
SERVER_PID=
CANARY_PID=

world_down() {
	[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
	[ -n "$CANARY_PID" ] && kill "$CANARY_PID" 2>/dev/null
	ip netns pids "$NS" 2>/dev/null | xargs -r kill -9 2>/dev/null
	ip netns pids "$CNS" 2>/dev/null | xargs -r kill -9 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	ip netns del "$CNS" 2>/dev/null
	cleanup_base
}

world_skip() {
	if [ "$MUST_WORK" = 1 ]; then
		echo "1..1"
		echo "not ok 1 - the internet of the test # $1 (WARD_MUST_WORK=1)"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}

[ "$(id -u)" = 0 ] || world_skip "creating network namespaces needs root (scripts/test.sh runs this as root, with WARD_NETPROXY_AS_UID for the unprivileged pass)"
command -v ip >/dev/null || world_skip "iproute2 is missing"
$NPY -c 'import dnslib' 2>/dev/null || world_skip "python3-dnslib is missing (scripts/setup-deps.sh)"
trap world_down EXIT

# ------------------------------------------------------------------ the internet

make_fixtures() {
	local r=$WORLD/root w=$WORLD/work
	mkdir -p "$r/git" "$r/npm" "$r/npm-files" "$r/simple/wardtestpkg" "$r/files" "$w"
	# The test CA and one certificate for every name of the zone.
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=ward-test-ca \
		-keyout "$WORLD/ca.key" -out "$WORLD/ca.pem" 2>/dev/null || return 1
	openssl req -newkey rsa:2048 -nodes -subj /CN=www.test -keyout "$WORLD/srv.key" \
		-out "$WORLD/srv.csr" 2>/dev/null || return 1
	printf 'subjectAltName=DNS:www.test,DNS:git.test,DNS:registry.test,DNS:pypi.test,DNS:denied.test,DNS:other.test,DNS:rebind.test,DNS:meta.test,DNS:loop.test,DNS:sub.www.test\n' >"$WORLD/san"
	openssl x509 -req -in "$WORLD/srv.csr" -CA "$WORLD/ca.pem" -CAkey "$WORLD/ca.key" \
		-CAcreateserial -days 2 -extfile "$WORLD/san" -out "$WORLD/srv.pem" 2>/dev/null || return 1
	# A git repository served over smart HTTP.
	git init -q --bare "$r/git/repo.git" || return 1
	git init -q "$w/repo" && (cd "$w/repo" && echo "cloned through ward" >README &&
		git add README && git commit -qm one && git push -q "$r/git/repo.git" HEAD:refs/heads/main) || return 1
	git -C "$r/git/repo.git" symbolic-ref HEAD refs/heads/main
	# An npm package and its registry document.
	mkdir -p "$w/npm/package"
	printf '{"name":"ward-test-pkg","version":"1.0.0","main":"index.js"}\n' >"$w/npm/package/package.json"
	echo 'module.exports = "installed through ward";' >"$w/npm/package/index.js"
	tar -C "$w/npm" -czf "$r/npm-files/ward-test-pkg-1.0.0.tgz" package || return 1
	$NPY - "$r" <<'PY' || return 1
import base64, hashlib, json, sys, zipfile
r = sys.argv[1]
tgz = open(r + "/npm-files/ward-test-pkg-1.0.0.tgz", "rb").read()
doc = {"name": "ward-test-pkg", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
    "name": "ward-test-pkg", "version": "1.0.0", "main": "index.js",
    "dist": {"tarball": "https://registry.test/npm/-/ward-test-pkg-1.0.0.tgz",
             "shasum": hashlib.sha1(tgz).hexdigest(),
             "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()}}}}
json.dump(doc, open(r + "/npm/ward-test-pkg.json", "w"))
whl = r + "/files/wardtestpkg-1.0-py3-none-any.whl"
with zipfile.ZipFile(whl, "w") as z:
    z.writestr("wardtestpkg/__init__.py", "X = 1\n")
    z.writestr("wardtestpkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: wardtestpkg\nVersion: 1.0\n")
    z.writestr("wardtestpkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: ward-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("wardtestpkg-1.0.dist-info/RECORD", "")
h = hashlib.sha256(open(whl, "rb").read()).hexdigest()
open(r + "/simple/wardtestpkg/index.html", "w").write(
    '<html><body><a href="/files/wardtestpkg-1.0-py3-none-any.whl#sha256=%s">wardtestpkg-1.0-py3-none-any.whl</a></body></html>\n' % h)
PY
	cat >"$WORLD/zone" <<EOF
www.test $INET.13
sub.www.test $INET.13
git.test $INET.11
registry.test $INET.10
pypi.test $INET.12
denied.test $INET.14
other.test $INET.15
meta.test 169.254.169.254
loop.test 127.0.0.1
rebind.test $INET.13,127.0.0.1
self.test $SELF
EOF
	chmod -R a+rX "$WORLD"
}

world_up() {
	mkdir -p "$WORLD"
	make_fixtures >"$WORLD/fixtures.log" 2>&1 || {
		cat "$WORLD/fixtures.log"
		bail_out "cannot make the internet's fixtures"
	}
	ip netns add "$NS" || bail_out "cannot create a network namespace"
	ip netns add "$CNS" || bail_out "cannot create a network namespace"
	"${NSX[@]}" ip link set lo up
	ip link add "$VH" type veth peer name "$VI" || bail_out "cannot create a veth pair"
	ip link set "$VI" netns "$NS"
	ip link set "$VH" netns "$CNS"
	"${NSX[@]}" ip addr add "$INET.1/24" dev "$VH"
	"${NSX[@]}" ip addr add "$SELF/32" dev "$VH"
	"${NSX[@]}" ip link set "$VH" up
	ip netns exec "$NS" ip link set lo up
	ip netns exec "$NS" ip addr add "$INET.2/24" dev "$VI"
	for i in 10 11 12 13 14 15; do
		ip netns exec "$NS" ip addr add "$INET.$i/24" dev "$VI"
	done
	ip netns exec "$NS" ip link set "$VI" up
	: >"$WORLD/requests"
	chmod 666 "$WORLD/requests"
	ip netns exec "$NS" $NPY "$WARD_SRC/tests/helpers/netproxy-world.py" --root "$WORLD/root" \
		--log "$WORLD/requests" --cert "$WORLD/srv.pem" --key "$WORLD/srv.key" \
		--zone "$WORLD/zone" --dns "$INET.2" >"$WORLD/server.out" 2>&1 &
	SERVER_PID=$!
	for _ in $(seq 100); do
		grep -q ready "$WORLD/server.out" 2>/dev/null && break
		sleep 0.1
	done
	grep -q ready "$WORLD/server.out" || bail_out "the internet did not start: $(cat "$WORLD/server.out")"
	# A canary on the loopback of ward's machine: no name, address or trick may reach it.
	"${NSX[@]}" $NPY -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(64)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept()
    open(sys.argv[2], "a").write("reached\n")
    c.close()
' "$WORLD/canary.port" "$WORLD/canary.hits" &
	CANARY_PID=$!
	for _ in $(seq 50); do
		[ -s "$WORLD/canary.port" ] && break
		sleep 0.1
	done
	CANARY=$(cat "$WORLD/canary.port")
}

world_up
# The clients trust the test CA, whatever this machine's environment names.
for v in GIT_SSL_CAINFO REQUESTS_CA_BUNDLE PIP_CERT SSL_CERT_FILE CURL_CA_BUNDLE NODE_EXTRA_CA_CERTS; do
	export "$v=$WORLD/ca.pem"
done
unset PIP_FIND_LINKS SSL_CERT_DIR
export PIP_CONFIG_FILE=/dev/null

# ------------------------------------------------------------------ helpers

# wr [WARD OPTIONS] -- COMMAND...: ward run with the internet's DNS and range,
# as AS_UID when set; stdout in $T/out, stderr in $T/err, status in $RC.
wr() {
	local pre=()
	if [ -n "$AS_UID" ]; then
		chown -R "$AS_UID:$AS_UID" "$T"
		pre=(setpriv --reuid "$AS_UID" --regid "$AS_UID" --clear-groups --)
	fi
	HOME=$WS "${NSX[@]}" timeout 120 "${pre[@]}" "$WARD" run --dns-server "$INET.2" \
		--allow-address "$INET.0/24" "$@" >"$T/out" 2>"$T/err"
	RC=$?
}

expect_rc() {
	[ "$RC" = "$1" ] || fail "ward exited $RC, expected $1; stdout: $(head -c 600 "$T/out"); stderr: $(head -c 1500 "$T/err")"
}
expect_out() {
	grep -q -- "$1" "$T/out" || fail "stdout lacks '$1': $(head -c 800 "$T/out"); stderr: $(head -c 1500 "$T/err")"
}
expect_err() {
	grep -q -- "$1" "$T/err" || fail "stderr lacks '$1': $(head -c 1500 "$T/err")"
}
# saw ADDRESS PATTERN: the internet's server at ADDRESS got a request matching PATTERN.
saw() {
	grep -q "^$1 .*$2" "$WORLD/requests" || fail "$1 got no request matching '$2': $(tail -n 5 "$WORLD/requests")"
}
never() {
	! grep -q "^$1 " "$WORLD/requests" || fail "$1 was reached: $(grep "^$1 " "$WORLD/requests" | head -3)"
}
canary_silent() {
	[ ! -s "$WORLD/canary.hits" ] || fail "the canary on the host's loopback was reached"
}

CURL=(curl -sS --max-time 20 --cacert "$WORLD/ca.pem")

# ------------------------------------------------------------------ clients

t_curl_https_and_http() {
	wr --allow-domain www.test -- sh -c "${CURL[*]} https://www.test/hello && ${CURL[*]} http://www.test/hello"
	expect_rc 0
	[ "$(grep -c "hello from $INET.13" "$T/out")" = 2 ] || fail "expected two answers: $(cat "$T/out")"
	saw "$INET.13" "www.test GET /hello"
}

t_curl_denied_fails_fast() {
	local t0 t1
	t0=$(date +%s%N)
	wr --allow-domain www.test --json -- "${CURL[@]}" -i https://denied.test/hello
	t1=$(date +%s%N)
	[ $(((t1 - t0) / 1000000)) -lt 5000 ] || fail "the refusal took $(((t1 - t0) / 1000000)) ms"
	expect_out '"access":"network","syscall":null,"error":null,"target":"denied.test:443","reason":"not-allowed"'
	expect_out '403'
	never "$INET.14"
	# A plain run says it on stderr, and curl shows the proxy's answer.
	wr --allow-domain www.test --deny-domain denied.test -- "${CURL[@]}" -i http://denied.test/hello
	expect_out 'X-Proxy-Error: blocked-by-denylist'
	expect_err "network access to 'denied.test:80' refused (denied)"
	never "$INET.14"
}

t_git_clone() {
	wr --allow-domain git.test -- git -c http.sslCAInfo="$WORLD/ca.pem" clone -q https://git.test/git/repo.git clone
	expect_rc 0
	grep -q "cloned through ward" "$WS/clone/README" || fail "the clone lacks the file"
	saw "$INET.11" "POST /git/repo.git/git-upload-pack"
}

t_npm_install() {
	command -v npm >/dev/null || skip "npm is not installed"
	wr --allow-domain registry.test -- npm install --no-audit --no-fund --no-update-notifier \
		--registry https://registry.test/npm/ --cafile "$WORLD/ca.pem" \
		--cache "$WS/.npm" ward-test-pkg
	expect_rc 0
	grep -q "installed through ward" "$WS/node_modules/ward-test-pkg/index.js" || fail "npm did not install the package: $(tail -c 800 "$T/err")"
	saw "$INET.10" "GET /npm/-/ward-test-pkg-1.0.0.tgz"
}

t_pip_download() {
	$NPY -m pip --version >/dev/null 2>&1 || skip "pip is not installed"
	wr --allow-domain pypi.test -- $NPY -m pip download --no-cache-dir --no-deps --disable-pip-version-check \
		--index-url https://pypi.test/simple/ --cert "$WORLD/ca.pem" -d "$WS/dl" wardtestpkg
	expect_rc 0
	[ -f "$WS/dl/wardtestpkg-1.0-py3-none-any.whl" ] || fail "pip did not download the wheel: $(tail -c 800 "$T/err")"
	saw "$INET.12" "GET /files/wardtestpkg-1.0-py3-none-any.whl"
}

t_program_without_proxy_variables() {
	# Python's socket, no proxy variable: the DNS stub's address, then ward's proxy.
	wr --allow-domain www.test -- env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY \
		-u ALL_PROXY -u all_proxy $NPY -c '
import socket
a = socket.getaddrinfo("www.test", 80, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
print("address", a)
s = socket.create_connection(("www.test", 80), timeout=10)
s.sendall(b"GET /hello HTTP/1.0\r\nHost: www.test\r\n\r\n")
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print(data.decode().splitlines()[-1])
'
	expect_rc 0
	expect_out "address 198.18."
	expect_out "hello from $INET.13"
	saw "$INET.13" "GET /hello"
}

t_dns_denied_name() {
	local t0 t1
	t0=$(date +%s%N)
	wr --allow-domain www.test -- $NPY -c '
import socket, sys
try:
    socket.getaddrinfo("denied.test", 443)
except socket.gaierror as e:
    print("refused", e)
    sys.exit(0)
print("resolved")
sys.exit(1)
'
	t1=$(date +%s%N)
	expect_rc 0
	expect_out refused
	[ $(((t1 - t0) / 1000000)) -lt 5000 ] || fail "the refusal took $(((t1 - t0) / 1000000)) ms"
	expect_err "network access to 'denied.test' refused (not-allowed)"
}

t_patterns_and_ports() {
	wr --allow-domain '**.www.test:443' -- sh -c "${CURL[*]} https://sub.www.test/hello; ${CURL[*]} -o /dev/null -w '%{http_code}\n' http://sub.www.test/hello"
	expect_out "hello from $INET.13"
	expect_out '^403$'
	expect_err "network access to 'sub.www.test:80' refused (not-allowed)"
}

# ------------------------------------------------------------------ attacks

t_connect_through_allowed() {
	# The CONNECT's target decides, never its Host field; a plain request's Host is rewritten.
	wr --allow-domain www.test -- $NPY -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT denied.test:443 HTTP/1.1\r\nHost: www.test:443\r\n\r\n")
print(s.recv(200).split(b"\r\n")[0].decode())
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"GET http://www.test/hello HTTP/1.1\r\nHost: denied.test\r\n\r\n")
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print(data.decode().splitlines()[-1])
'
	expect_out 'HTTP/1.1 403 Forbidden'
	expect_out "hello from $INET.13"
	never "$INET.14"
	grep -q "denied.test" "$WORLD/requests" && fail "a Host field naming the denied host reached a server"
	true
}

t_non_public_names() {
	wr --allow-domain '*.test' -- sh -c "${CURL[*]} -i http://loop.test:$CANARY/; ${CURL[*]} -i http://meta.test/latest/meta-data/"
	expect_out 'X-Proxy-Error: blocked-by-policy'
	expect_err "'loop.test:$CANARY' refused (non-public-address)"
	expect_err "'meta.test:80' refused (non-public-address)"
	canary_silent
}

t_machine_own_address() {
	# A public address of ward's own machine is public, but a connection to it never
	# leaves the machine: it reaches every service bound to all addresses (here one on
	# 0.0.0.0), which a firewall keeps from the internet, not from the machine itself.
	"${NSX[@]}" $NPY -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(60)
try:
    c, _ = s.accept()
    open(sys.argv[2], "a").write("reached\n")
except socket.timeout:
    pass
' "$T/own.port" "$T/own.hits" &
	local own_pid=$! port
	for _ in $(seq 50); do
		[ -s "$T/own.port" ] && break
		sleep 0.1
	done
	port=$(cat "$T/own.port")
	wr --allow-domain '*' -- sh -c "${CURL[*]} -i http://$SELF:$port/; ${CURL[*]} -i http://self.test:$port/; curl -sS --max-time 10 --socks5-hostname 127.0.0.1:1080 http://$SELF:$port/; echo rc=\$?"
	kill "$own_pid" 2>/dev/null
	expect_out 'X-Proxy-Error: blocked-by-policy'
	expect_out 'an address of this machine'
	expect_out 'rc=97'
	expect_err "'$SELF:$port' refused (non-public-address)"
	expect_err "'self.test:$port' refused (non-public-address)"
	[ ! -s "$T/own.hits" ] || fail "a service of ward's own machine was reached through its public address"
}

t_rebinding() {
	# rebind.test answers a public address, then 127.0.0.1, in turn: ward asks once and
	# connects to exactly the address it checked, whichever lookup comes when.
	local i
	for i in 1 2 3; do
		wr --allow-domain rebind.test -- "${CURL[@]}" -i "http://rebind.test:$CANARY/hello"
		grep -q "hello from $INET.13\|blocked-by-policy\|Bad Gateway" "$T/out" || fail "unexpected answer: $(cat "$T/out" "$T/err")"
	done
	canary_silent
}

t_socks_address_literal() {
	wr --allow-domain www.test -- sh -c "curl -sS --max-time 10 --socks5 127.0.0.1:1080 http://$INET.13/hello; echo rc=\$?; curl -sS --max-time 10 --socks5 127.0.0.1:1080 http://127.0.0.1:$CANARY/; echo rc=\$?; curl -sS --max-time 10 --socks5-hostname 127.0.0.1:1080 http://www.test/hello"
	expect_out 'rc=97'
	expect_out "hello from $INET.13"
	canary_silent
	expect_err "network access to '$INET.13:80' refused (not-allowed)"
}

t_garbage_and_smuggling() {
	wr --allow-domain www.test -- $NPY -c '
import socket
def ask(raw):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(raw)
    data = b""
    while True:
        try:
            b = s.recv(4096)
        except ConnectionResetError:
            break
        if not b:
            break
        data += b
    return data.decode(errors="replace")
print("garbage:", ask(b"\x16\x03\x01\x00\xff\x01\x00\r\n\r\n").splitlines()[0])
print("cl.te:", ask(b"POST http://www.test/hello HTTP/1.1\r\nHost: www.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").splitlines()[0])
print("body:", ask(b"POST http://www.test/hello HTTP/1.1\r\nHost: www.test\r\nContent-Length: 5\r\n\r\nhelloGET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n").splitlines()[-1])
s = socket.create_connection(("127.0.0.1", 1080), timeout=10)
s.sendall(b"\x04\x01\x00\x50garbage\x00")
print("socks:", s.recv(100))
'
	expect_out 'garbage: HTTP/1.1 400'
	expect_out 'cl.te: HTTP/1.1 400'
	expect_out 'body: hello from .* body=hello$'
	expect_out "socks: b''"
	never "$INET.14"
	[ "$(grep -c "POST /hello" "$WORLD/requests")" = 1 ] || fail "the upstream saw $(grep -c "POST /hello" "$WORLD/requests") POSTs, expected exactly one"
}

t_many_connections() {
	# 10,000 connections at the proxy: those past the cap are reset, the proxy lives on.
	wr --allow-domain www.test -- $NPY -c '
import resource, socket, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 20000), hard))
socks, failed = [], 0
t0 = time.monotonic()
for i in range(10000):
    try:
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", 3128))
        socks.append(s)
    except OSError:
        failed += 1
time.sleep(1)
for s in socks:
    s.close()
print("opened", len(socks), "failed", failed, "in %.1fs" % (time.monotonic() - t0))
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"GET http://www.test/hello HTTP/1.1\r\nHost: www.test\r\n\r\n")
# The answer may come in several reads (head, then body): read it to its end.
data = b""
while b"hello" not in data:
    d = s.recv(4096)
    if not d:
        break
    data += d
print("after:", data.decode().splitlines()[-1])
'
	expect_rc 0
	expect_out "after: hello from $INET.13"
}

t_slow_loris() {
	# A client that sends its head a byte at a time, slowly, is cut after 10 s.
	wr --allow-domain www.test -- $NPY -c '
import socket, time
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
t0 = time.monotonic()
try:
    for c in b"GET http://www.test/hello HTTP/1.1\r\n":
        s.sendall(bytes([c]))
        time.sleep(1)
    print("not cut")
except (BrokenPipeError, ConnectionResetError):
    pass
print("cut after %d s" % (time.monotonic() - t0), s.recv(100).split(b"\r\n")[0].decode())
'
	expect_out 'cut after 1[0-4] s HTTP/1.1 408'
}

t_udp_and_direct_blocked() {
	# Without the proxy nothing goes out: no route but the pool's, and the pool only to ward.
	wr --allow-domain www.test -- $NPY -c '
import socket
for a in (("'$INET'.15", 80), ("8.8.8.8", 53)):
    s = socket.socket()
    s.settimeout(5)
    print(a[0], s.connect_ex(a))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"x", ("'$INET'.2", 53))
    print("udp sent")
except OSError as e:
    print("udp", e.errno)
'
	grep -q "^$INET.15 0$" "$T/out" && fail "a direct connection to the internet succeeded"
	never "$INET.15"
	true
}

t_refused_without_namespaces() {
	# A host that refuses user namespaces (hardened-wrapper, as an unprivileged user):
	# the domains cannot be enforced, so ward refuses to run rather than pretend.
	[ -x "$HARDENED" ] || skip "hardened-wrapper is missing"
	mkdir -p "$T/bin"
	ln -s "$HARDENED" "$T/bin/ward"
	printf '%s\n%s\n' "$WARD" "--userns-only" >"$T/bin/ward.conf"
	chown -R 65534:65534 "$T"
	HOME=$WS "${NSX[@]}" timeout 60 setpriv --reuid 65534 --regid 65534 --clear-groups -- "$T/bin/ward" run \
		--allow-domain www.test -- true >"$T/out" 2>"$T/err"
	RC=$?
	expect_rc 125
	expect_err "need a network namespace"
}

# ------------------------------------------------------------------ rules and approvals

t_network_rules() {
	# network_rule lines decide what the patterns leave open: allow and deny, per protocol.
	cat >"$WS/net.rules" <<EOF
network_rule(host="www.test", protocol="https", decision="allow")
network_rule(host="git.test", protocol="https", decision="deny")
network_rule(host="www.test", protocol="http", decision="forbidden")
EOF
	wr -a never --rules "$WS/net.rules" --deny-domain other.test -- sh -c "${CURL[*]} https://www.test/hello; ${CURL[*]} -o /dev/null -w '%{http_code}\n' http://www.test/rules-probe; ${CURL[*]} -o /dev/null -w '%{http_code}\n' https://git.test/rules-probe"
	expect_out "hello from $INET.13"
	expect_err "'www.test:80' refused (denied)"
	expect_err "'git.test:443' refused (denied)"
	! grep -q rules-probe "$WORLD/requests" || fail "a host the rules deny was reached"
	# The audit log has the host, port, protocol, bytes and who decided.
	grep -q '"event":"network","command":\["network-access","www.test:443"\].*"decision":"allow","source":"rules".*"network":{"host":"www.test","port":443,"protocol":"https","address":"'$INET'.13","bytes_out":[1-9]' "$WS/.local/state/ward/audit.jsonl" ||
		fail "no audit line for www.test: $(head -c 2000 "$WS/.local/state/ward/audit.jsonl" 2>/dev/null)"
}

t_refusals_bounded() {
	# Every refusal is a line of the host's audit log, written with nobody asked: past
	# 1024 distinct ones a single "*" stands for the rest, so a command asking for
	# made-up names cannot rotate the log's earlier records away.
	mkdir -p "$WS/.local/state/ward"
	echo '{"event":"earlier"}' >"$WS/.local/state/ward/audit.jsonl"
	wr -a never --allow-domain www.test -- $NPY -c '
import socket, struct
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(2)
n = 0
for i in range(3000):
    label = b"x%06d" % i
    u.sendto(struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0) + bytes([len(label)]) + label +
             b"\x07example\x00\x00\x01\x00\x01", ("127.0.0.1", 53))
    n += (u.recv(512)[3] & 15) == 5
print("refused", n)
'
	expect_out "refused 3000"
	local lines
	lines=$(cat "$WS/.local/state/ward/audit.jsonl"* | wc -l)
	[ "$lines" -le 1100 ] || fail "the audit log got $lines lines"
	grep -q '"earlier"' "$WS/.local/state/ward/audit.jsonl" || fail "the earlier record was rotated away"
	grep -q '"network-access","\*:0"' "$WS/.local/state/ward/audit.jsonl" || fail "no line stands for the refusals past the cap"
}

t_asked_while_waiting() {
	local pre=() ask=$WARD_SRC/tests/helpers/pty-ask.py
	if [ -n "$AS_UID" ]; then
		chown -R "$AS_UID:$AS_UID" "$T"
		pre=(setpriv --reuid "$AS_UID" --regid "$AS_UID" --clear-groups --)
	fi
	# "a": allowed for the session; the second connection is not asked again.
	HOME=$WS XDG_CONFIG_HOME=$WS/.config "${NSX[@]}" timeout 90 "${pre[@]}" $NPY "$ask" --keys a -- "$WARD" run -a on-request \
		--dns-server "$INET.2" --allow-address "$INET.0/24" --deny-domain denied.test -- \
		sh -c "${CURL[*]} https://www.test/hello && ${CURL[*]} https://www.test/hello" >"$T/out" 2>"$T/err"
	grep -q "prompts: 1" "$T/out" || fail "expected one question: $(cat "$T/out")"
	grep -q "https://www.test:443" "$T/out" || fail "the question does not name the host: $(cat "$T/out")"
	[ "$(grep -c "hello from $INET.13" "$T/out")" = 2 ] || fail "both connections should pass: $(cat "$T/out")"
	# "p": always, written as a network_rule line; "n": refused, as asked-denied.
	HOME=$WS XDG_CONFIG_HOME=$WS/.config "${NSX[@]}" timeout 90 "${pre[@]}" $NPY "$ask" --keys pn -- "$WARD" run -a on-request \
		--dns-server "$INET.2" --allow-address "$INET.0/24" --deny-domain denied.test -- \
		sh -c "${CURL[*]} https://git.test/git/repo.git/info/refs; ${CURL[*]} -i https://registry.test/npm/x" >"$T/out" 2>"$T/err"
	grep -q "prompts: 2" "$T/out" || fail "expected two questions: $(cat "$T/out")"
	grep -rq 'network_rule(host="git.test", protocol="https", decision="allow")' "$WS/.config/ward/rules" ||
		fail "no rule written: $(cat "$WS"/.config/ward/rules/* 2>/dev/null)"
	grep -q "refused (asked-denied)" "$T/out" "$T/err" || fail "no asked-denied refusal: $(cat "$T/out" "$T/err")"
	# "n" is remembered for the session: five more connections to that host ask nothing.
	HOME=$WS XDG_CONFIG_HOME=$WS/.config "${NSX[@]}" timeout 90 "${pre[@]}" $NPY "$ask" --keys n -- "$WARD" run -a on-request \
		--dns-server "$INET.2" --allow-address "$INET.0/24" --deny-domain denied.test -- \
		sh -c "for i in 1 2 3 4 5 6; do ${CURL[*]} https://other.test/hello; done" >"$T/out" 2>"$T/err"
	grep -q "prompts: 1" "$T/out" || fail "a refused host is asked about again: $(cat "$T/out")"
}

t_question_after_conceal() {
	# The command writes to the terminal while its connection waits: it prints a question
	# of its own naming a harmless host, then conceals what follows (SGR 8). ward's
	# question, naming the real host, must undo that before it is printed.
	local pre=() ask=$WARD_SRC/tests/helpers/pty-ask.py
	if [ -n "$AS_UID" ]; then
		chown -R "$AS_UID:$AS_UID" "$T"
		pre=(setpriv --reuid "$AS_UID" --regid "$AS_UID" --clear-groups --)
	fi
	HOME=$WS XDG_CONFIG_HOME=$WS/.config "${NSX[@]}" timeout 90 "${pre[@]}" $NPY "$ask" --keys n -- "$WARD" run -a on-request \
		--dns-server "$INET.2" --allow-address "$INET.0/24" --deny-domain denied.test -- \
		sh -c 'printf "  host: https://www.test:443\r\n\033[8m"; sleep 0.3; '"${CURL[*]}"' https://other.test/hello' >"$T/out" 2>"$T/err"
	grep -q "prompts: 1" "$T/out" || fail "expected one question: $(cat "$T/out")"
	$NPY -c '
import sys
d = open(sys.argv[1], "rb").read()
i, j = d.find(b"\x1b[8m"), d.find(b"https://other.test:443")
sys.exit(0 if 0 <= i < j and b"\x1b[0m" in d[i:j] else 1)
' "$T/out" || fail "the question follows the concealed text without resetting it: $(cat -v "$T/out" | head -c 600)"
}

t_socks5_udp() {
	# Datagrams only where a network_rule allows socks5_udp; a host pattern is not enough.
	cat >"$WS/udp.rules" <<EOF
network_rule(host="www.test", protocol="socks5_udp", decision="allow")
EOF
	cat >"$WS/udp.py" <<'EOF'
import socket, struct
c = socket.create_connection(("127.0.0.1", 1080), timeout=10)
c.sendall(b"\x05\x01\x00"); assert c.recv(2) == b"\x05\x00"
c.sendall(b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00")
r = c.recv(10)
print("associate", r[1])
relay = (socket.inet_ntoa(r[4:8]), struct.unpack(">H", r[8:10])[0])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(3)
for host in (b"www.test", b"other.test"):
    hdr = b"\x00\x00\x00\x03" + bytes([len(host)]) + host + struct.pack(">H", 7)
    u.sendto(hdr + b"ping " + host, relay)
    try:
        data, _ = u.recvfrom(2048)
        print("reply", data[10:].decode())
    except socket.timeout:
        print("no reply from", host.decode())
EOF
	wr -a never --rules "$WS/udp.rules" --allow-domain www.test --allow-domain other.test -- $NPY "$WS/udp.py"
	expect_out "associate 0"
	expect_out "reply ping www.test"
	expect_out "no reply from other.test"
	expect_err "'other.test:7' refused (not-allowed)"
	grep -q "^$INET.13 udp " "$WORLD/requests" || fail "the echo got nothing"
	grep -q "^$INET.15 udp " "$WORLD/requests" && fail "a host without a socks5_udp rule got a datagram"
	# Without the rule, the pattern alone does not let datagrams out.
	wr --allow-domain www.test -- $NPY "$WS/udp.py"
	expect_out "no reply from www.test"
}

# ------------------------------------------------------------------ the servers

# ws SERVER-ARGS... -- a Python client on the server's stdin/stdout; prints what it checks.
serve_client() {
	local pre=()
	if [ -n "$AS_UID" ]; then
		chown -R "$AS_UID:$AS_UID" "$T"
		pre=(setpriv --reuid "$AS_UID" --regid "$AS_UID" --clear-groups --)
	fi
	HOME=$WS "${NSX[@]}" timeout 120 "${pre[@]}" $NPY -c "$1" "$WARD" "$WS" "$WORLD/ca.pem" "$INET" >"$T/out" 2>"$T/err"
	RC=$?
}

t_serve_process_start() {
	# ward serve: the hosts come per process, in the sandbox's permission profile.
	serve_client '
import json, subprocess, sys
ward, ws, ca, inet = sys.argv[1:5]
p = subprocess.Popen([ward, "serve", "--listen", "stdio", "--dns-server", inet + ".2",
                      "--allow-address", inet + ".0/24", "--audit-log", ws + "/audit.jsonl"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ws)
def send(o):
    p.stdin.write(json.dumps(o) + "\n"); p.stdin.flush()
send({"id": 1, "method": "initialize", "params": {"clientName": "t"}})
send({"method": "initialized"})
prof = {"type": "managed", "file_system": {"type": "restricted", "entries": [
    {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
    {"path": {"type": "path", "path": "file://" + ws}, "access": "write"}]},
    "network": {"enabled": True, "allowed_domains": ["www.test"]}}
cmd = "curl -sS --cacert %s https://www.test/hello; curl -sS --cacert %s https://denied.test/ || true" % (ca, ca)
send({"id": 2, "method": "process/start", "params": {"processId": "p", "metadata": {"toolCallId": "call_net"}, "argv": ["/bin/sh", "-c", cmd],
      "cwd": "file://" + ws, "env": {"PATH": "/usr/bin:/bin"}, "tty": False,
      "sandbox": {"permissions": prof, "cwd": "file://" + ws, "windowsSandboxLevel": "disabled"}}})
for line in p.stdout:
    m = json.loads(line)
    if m.get("method") == "process/output":
        import base64
        print("output", base64.b64decode(m["params"]["chunk"]).decode(errors="replace").strip())
    if m.get("method") == "process/exited":
        print("exited", json.dumps(m["params"].get("denials")))
        break
    if "error" in m:
        print("error", m)
        break
p.stdin.close(); p.wait(timeout=20)
'
	expect_out "hello from $INET.13"
	expect_out '"access": "network", "syscall": null, "error": null, "target": "denied.test:443", "reason": "not-allowed"'
	never "$INET.14"
	# No approver, but the audit log says where the process went, with its tool call.
	grep '"event":"network"' "$WS/audit.jsonl" | grep '"decision":"allow"' | grep -q '"tool_call":"call_net"' ||
		fail "no allowed host in the audit log: $(cat "$WS/audit.jsonl")"
	grep '"event":"network"' "$WS/audit.jsonl" | grep '"decision":"deny"' | grep -q 'denied.test' ||
		fail "no refused host in the audit log: $(cat "$WS/audit.jsonl")"
}

t_serve_descriptors_shared() {
	# A sandbox of ward serve that opens connection after connection to the proxy must not
	# take the server's descriptors (here 1024): other sandboxes' connections and new
	# processes still work while it holds them.
	serve_client '
import base64, json, subprocess, sys, time
ward, ws, ca, inet = sys.argv[1:5]
p = subprocess.Popen(["prlimit", "--nofile=1024:1024", ward, "serve", "--listen", "stdio",
                      "--dns-server", inet + ".2", "--allow-address", inet + ".0/24"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ws)
def send(o):
    p.stdin.write(json.dumps(o) + "\n"); p.stdin.flush()
send({"id": 1, "method": "initialize", "params": {"clientName": "t"}})
send({"method": "initialized"})
def start(pid, argv, net):
    prof = {"type": "managed", "file_system": {"type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
        {"path": {"type": "path", "path": "file://" + ws}, "access": "write"}]},
        "network": {"enabled": True, "allowed_domains": ["www.test"]} if net else {"enabled": False}}
    send({"id": pid, "method": "process/start", "params": {"processId": pid, "argv": argv,
          "cwd": "file://" + ws, "env": {"PATH": "/usr/bin:/bin"}, "tty": False,
          "sandbox": {"permissions": prof, "cwd": "file://" + ws, "windowsSandboxLevel": "disabled"}}})
hog = """
import socket, time
socks = []
for i in range(1000):
    try:
        s = socket.socket(); s.setblocking(False); s.connect_ex(("127.0.0.1", 3128)); socks.append(s)
    except OSError:
        break
time.sleep(1)
print("READY", flush=True)
time.sleep(8)
"""
start("A", ["/usr/bin/python3", "-c", hog], True)
out, done, started = {"A": "", "B": "", "C": ""}, set(), False
deadline = time.monotonic() + 60
while time.monotonic() < deadline and not {"B", "C"} <= done:
    m = json.loads(p.stdout.readline())
    if m.get("method") == "process/output":
        k = m["params"]["processId"]
        out[k] += base64.b64decode(m["params"]["chunk"]).decode(errors="replace")
        if k == "A" and "READY" in out["A"] and not started:
            started = True
            start("B", ["/bin/sh", "-c", "curl -sS --max-time 10 http://www.test/hello"], True)
            start("C", ["/bin/echo", "C started"], False)
    elif m.get("method") == "process/exited":
        done.add(m["params"]["processId"])
    elif "error" in m:
        print("error", m["error"].get("message"))
        done.add(m.get("id"))
print("B:", out["B"].strip()); print("C:", out["C"].strip())
send({"id": 9, "method": "process/terminate", "params": {"processId": "A"}})
p.stdin.close(); p.wait(timeout=20)
'
	expect_out "B: hello from $INET.13"
	expect_out "C: C started"
}

t_mcp_exec_command() {
	# ward mcp: the hosts come from its options; the result names the refusal.
	serve_client '
import json, subprocess, sys
ward, ws, ca, inet = sys.argv[1:5]
p = subprocess.Popen([ward, "mcp", "--allow-domain", "www.test", "--dns-server", inet + ".2",
                      "--allow-address", inet + ".0/24"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True, cwd=ws)
def send(o):
    p.stdin.write(json.dumps(o) + "\n"); p.stdin.flush()
def recv():
    return json.loads(p.stdout.readline())
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
      "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
recv()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
cmd = "curl -sS --cacert %s https://www.test/hello; curl -sS --cacert %s https://denied.test/ || true" % (ca, ca)
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "exec_command",
      "arguments": {"cmd": cmd, "yield_time_ms": 10000}}})
r = recv()
print(r["result"]["content"][0]["text"])
p.stdin.close(); p.wait(timeout=20)
'
	expect_out "hello from $INET.13"
	expect_out "Sandbox denied: network denied.test:443 (not-allowed)"
	never "$INET.14"
}

t_mcp_asks_through_elicitation() {
	# ward mcp -a: a host no pattern decides is asked about through elicitation while the
	# connection waits; two connections to it share the one question; "no" refuses.
	serve_client '
import json, subprocess, sys
ward, ws, ca, inet = sys.argv[1:5]
p = subprocess.Popen([ward, "mcp", "-a", "on-request", "--deny-domain", "denied.test",
                      "--dns-server", inet + ".2", "--allow-address", inet + ".0/24"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ws)
def send(o):
    p.stdin.write(json.dumps(o) + "\n"); p.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
      "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "1"}}})
p.stdout.readline()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
def call(cid, cmd, decision):
    send({"jsonrpc": "2.0", "id": cid, "method": "tools/call", "params": {"name": "exec_command",
          "arguments": {"cmd": cmd, "yield_time_ms": 20000}}})
    asked = 0
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("method") == "elicitation/create":
            asked += 1
            print("question:", m["params"]["message"].splitlines()[0])
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"action": "accept",
                  "content": {"decision": decision}}})
        elif m.get("id") == cid:
            print("questions", asked)
            print(m["result"]["content"][0]["text"])
            return
cmd = "curl -sS --cacert %s https://www.test/hello & curl -sS --cacert %s https://www.test/hello; wait" % (ca, ca)
call(2, cmd, "approved_for_session")
call(3, "curl -sS --cacert %s https://git.test/hello || true" % ca, "denied")
p.stdin.close(); p.wait(timeout=20)
'
	expect_out "question: A command wants to reach https://www.test:443"
	[ "$(grep -c "hello from $INET.13" "$T/out")" = 2 ] || fail "both connections should pass: $(cat "$T/out")"
	grep -q "^questions 1$" "$T/out" || fail "expected one shared question: $(cat "$T/out")"
	expect_out "Sandbox denied: network git.test:443 (asked-denied)"
	! grep -q "^$INET.11 .*GET /hello" "$WORLD/requests" || fail "the refused host was reached"
}

tcase "curl over HTTPS (CONNECT) and HTTP through the proxy" t_curl_https_and_http
tcase "a denied host fails at once, with 403, X-Proxy-Error and a denial" t_curl_denied_fails_fast
tcase "git clone over smart HTTP" t_git_clone
tcase "npm install from a registry" t_npm_install
tcase "pip download from a simple index" t_pip_download
tcase "a program that ignores the proxy variables reaches an allowed name" t_program_without_proxy_variables
tcase "a DNS query for a denied name fails fast" t_dns_denied_name
tcase "subdomain patterns and ports" t_patterns_and_ports
tcase "CONNECT to a denied host through an allowed one" t_connect_through_allowed
tcase "names resolving to 127.0.0.1 and 169.254.169.254 are refused" t_non_public_names
tcase "a public address of ward's own machine is refused" t_machine_own_address
tcase "DNS rebinding between the check and the connect" t_rebinding
tcase "SOCKS5 with an address literal" t_socks_address_literal
tcase "a question is readable whatever the command left the terminal in" t_question_after_conceal
tcase "SOCKS5 UDP only where a rule allows socks5_udp" t_socks5_udp
tcase "garbage, CL.TE and a request smuggled in a body" t_garbage_and_smuggling
tcase "10,000 connections" t_many_connections
tcase "a slow-loris client" t_slow_loris
tcase "no way around the proxy" t_udp_and_direct_blocked
tcase "refused where the sandbox has no network namespace" t_refused_without_namespaces
tcase "network_rule lines allow and deny, and the audit log has every host" t_network_rules
tcase "refusals past 1024 are one line of the audit log" t_refusals_bounded
tcase "a person is asked while the connection waits: once, session, always, no" t_asked_while_waiting
tcase "ward serve: hosts per process in the permission profile" t_serve_process_start
tcase "ward serve: one sandbox's connections leave descriptors to the others" t_serve_descriptors_shared
tcase "ward mcp: hosts from its options, refusals in the result" t_mcp_exec_command
tcase "ward mcp -a: questions through elicitation while the connection waits" t_mcp_asks_through_elicitation
finish
