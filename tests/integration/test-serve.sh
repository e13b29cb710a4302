#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# `ward serve` as a network service: the token file, authentication and the
# Origin refusal, loopback-only binding, unix sockets, connection caps, and the
# faults a server must survive (clients that vanish mid-message, a client that
# never reads while its process floods, the server itself killed) with nothing
# left running. Protocol details are in tests/protocol/serve/*.txt.
. "$(dirname "$0")/lib.sh"

CLIENT=$WARD_SRC/tests/helpers/serve-client.py
SPY=/usr/bin/python3

# serve ARGS...: starts `ward serve ARGS` in the background; its URL in URL, pid in SPID.
serve() {
	# Emptied here, not by the background job's redirection: that one may come after the
	# wait below has read the previous server's URL.
	: >"$T/.run/serve.out"
	"$WARD" serve "$@" >"$T/.run/serve.out" 2>"$T/.run/serve.err" &
	SPID=$!
	BG_PIDS+=("$SPID")
	wait_for grep -q . "$T/.run/serve.out" || fail "ward serve printed no URL: $(cat "$T/.run/serve.err")"
	URL=$(head -n 1 "$T/.run/serve.out")
}

client() {
	LAST_CMD="serve-client $*"
	timeout -k 3 60 "$SPY" "$CLIENT" "$@" >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
}

t_token_and_origin() {
	local tok
	serve --listen ws://127.0.0.1:0 --token-file "$T/token"
	assert_match "$URL" '^ws://127\.0\.0\.1:[0-9]+$' "the bound URL"
	[ "$(stat -c %a "$T/token")" = 600 ] || fail "the token file is not 0600"
	tok=$(cat "$T/token")
	assert_match "$tok" '^[0-9a-f]{64}$' "a random 256-bit token"
	client run "$URL" "$tok"
	assert_eq "$(out)" ok "an authenticated client runs a process"
	client http "$URL" / "Upgrade: websocket" "Connection: Upgrade" \
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" "Sec-WebSocket-Version: 13"
	assert_eq "$(out)" "status 401" "no token"
	client http "$URL" / "Upgrade: websocket" "Connection: Upgrade" \
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" "Sec-WebSocket-Version: 13" \
		"Authorization: Bearer ${tok}x"
	assert_eq "$(out)" "status 401" "a wrong token"
	client http "$URL" / "Upgrade: websocket" "Connection: Upgrade" \
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" "Sec-WebSocket-Version: 13" \
		"Authorization: Bearer $tok" "Origin: http://evil.example"
	assert_eq "$(out)" "status 403" "a web page (Origin) with the right token"
	client http "$URL" /readyz
	assert_eq "$(out)" "status 200" "readyz without a token"
	client http "$URL" /readyz "Origin: http://evil.example"
	assert_eq "$(out)" "status 403" "readyz from a web page"
	# The token file is reused as it is on the next start.
	kill "$SPID"
	wait "$SPID"
	serve --listen ws://127.0.0.1:0 --token-file "$T/token"
	assert_eq "$(cat "$T/token")" "$tok" "the token is kept"
	client run "$URL" "$tok"
	assert_eq "$(out)" ok "the same token works again"
}

t_refusals_at_start() {
	printf 'abcdefghijklmnopqrstuvwxyz\n' >"$T/loose"
	chmod 644 "$T/loose"
	LAST_CMD="ward serve --token-file (0644)"
	timeout 10 "$WARD" serve --listen ws://127.0.0.1:0 --token-file "$T/loose" \
		</dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "chmod 600"
	timeout 10 "$WARD" serve --listen ws://0.0.0.0:0 --no-auth \
		</dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	assert_stderr_has "--no-auth with a non-loopback address"
	timeout 10 "$WARD" serve --listen ws://0.0.0.0:0 --token-file "$T/t2" \
		</dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	assert_stderr_has "--allow-remote"
	timeout 10 "$WARD" serve --listen http://127.0.0.1:0 </dev/null >"$T/.run/stdout" \
		2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	expect_one_line_error
	timeout 10 "$WARD" serve --bogus </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	expect_one_line_error
	# Told otherwise, it listens beyond loopback, loudly.
	serve --listen ws://0.0.0.0:0 --allow-remote --token-file "$T/t3"
	grep -q WARNING "$T/.run/serve.err" || fail "no warning for a non-loopback listener"
	client run "ws://127.0.0.1:${URL##*:}" "$(cat "$T/t3")"
	assert_eq "$(out)" ok "the remote-capable listener serves"
}

# A first run with no XDG_RUNTIME_DIR (a container, su, CI) and a new account's
# home without ~/.local: the token's directories are made, 0700.
t_first_run_token_dir() {
	local home=$T/newhome
	mkdir -p "$home"
	chmod 755 "$home"
	: >"$T/.run/serve.out"
	env -u XDG_RUNTIME_DIR HOME="$home" "$WARD" serve --listen ws://127.0.0.1:0 \
		>"$T/.run/serve.out" 2>"$T/.run/serve.err" &
	SPID=$!
	BG_PIDS+=("$SPID")
	wait_for grep -q . "$T/.run/serve.out" || fail "ward serve printed no URL: $(cat "$T/.run/serve.err")"
	URL=$(head -n 1 "$T/.run/serve.out")
	local tok=$home/.local/state/ward/serve.token
	[ -f "$tok" ] || fail "no token file at $tok"
	assert_eq "$(stat -c %a "$tok")" 600 "the token file is 0600"
	assert_eq "$(stat -c %a "$home/.local/state/ward")" 700 "its directory is 0700"
	assert_eq "$(stat -c %a "$home/.local/state")" 700 "~/.local/state is made 0700"
	client run "$URL" "$(cat "$tok")"
	assert_eq "$(out)" ok "the server made on a first run serves with its token"
	kill "$SPID"
	wait "$SPID" 2>/dev/null
	# A file where the directory should be: one line naming it, 125.
	local home2=$T/newhome2
	mkdir -p "$home2"
	: >"$home2/.local"
	LAST_CMD="ward serve (HOME/.local is a file)"
	env -u XDG_RUNTIME_DIR HOME="$home2" timeout 10 "$WARD" serve --listen ws://127.0.0.1:0 \
		</dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "$home2/.local/state/ward"
}

t_unix_socket() {
	local sock=$T/s.sock
	: >"$T/plain"
	timeout 10 "$WARD" serve --listen "unix:$T/plain" --no-auth </dev/null \
		>"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	assert_stderr_has "not a socket"
	# A stale socket (nobody listens) is replaced.
	"$SPY" -c "import socket; s=socket.socket(socket.AF_UNIX); s.bind('$sock')"
	serve --listen "unix:$sock" --token-file "$T/token"
	[ "$(stat -c %a "$sock")" = 600 ] || fail "the socket is $(stat -c %a "$sock"), not 0600"
	client run "$URL" "$(cat "$T/token")"
	assert_eq "$(out)" ok "a client over the unix socket"
	kill -TERM "$SPID"
	wait "$SPID"
	assert_absent "$sock"
}

# Socket activation as systemd does it (sd_listen_fds(3)), played by a few lines of Python:
# the listening sockets from fd 3, LISTEN_FDS of them, LISTEN_PID the server's own pid
# (the launcher execs ward). activate ADDR... -- ARGS: ADDR is unix:PATH, tcp:IP (port 0),
# file:PATH (not a socket), otherpid (LISTEN_PID of another process); the bound addresses,
# one per line, in $T/.run/addrs; ward serve ARGS in the background, its pid in SPID.
activate() {
	local addrs=()
	while [ "$1" != -- ]; do
		addrs+=("$1")
		shift
	done
	shift
	"$SPY" - "$T/.run/addrs" "${addrs[@]}" -- "$WARD" serve "$@" >"$T/.run/serve.out" 2>"$T/.run/serve.err" <<'PYEOF' &
import os, socket, sys
out, rest = sys.argv[1], sys.argv[2:]
i = rest.index("--")
specs, argv = rest[:i], rest[i + 1:]
fds, urls, pid = [], [], str(os.getpid())
for spec in specs:
    kind, _, arg = spec.partition(":")
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX)
        s.bind(arg)
        s.listen(16)
        urls.append("unix:" + arg)
    elif kind == "tcp":
        s = socket.socket()
        s.bind((arg, 0))
        s.listen(16)
        urls.append("ws://%s:%d" % s.getsockname())
    elif kind == "file":
        s = open(arg, "w")
    elif kind == "otherpid":
        pid = "1"
        continue
    fds.append(s.fileno())
    globals().setdefault("keep", []).append(s)
open(out, "w").write("".join(u + "\n" for u in urls))
# Out of the way first (a socket may already sit on 3), then into place, inheritable.
high = [os.dup(fd) for fd in fds]
for n, fd in enumerate(high):
    os.dup2(fd, 3 + n, inheritable=True)
    os.set_inheritable(3 + n, True)
os.environ.update(LISTEN_FDS=str(len(fds)), LISTEN_PID=pid, LISTEN_FDNAMES=":".join(["x"] * len(fds)))
os.execv(argv[0], argv)
PYEOF
	SPID=$!
	BG_PIDS+=("$SPID")
	wait_for test -s "$T/.run/serve.err" || fail "ward serve said nothing"
}

t_socket_activation() {
	local tok u
	activate "unix:$T/a.sock" tcp:127.0.0.1 -- --listen systemd --token-file "$T/token"
	wait_for grep -q "listening on ws://" "$T/.run/serve.err" || fail "not listening: $(cat "$T/.run/serve.err")"
	tok=$(cat "$T/token")
	for u in $(cat "$T/.run/addrs"); do
		grep -q "listening on $u\$" "$T/.run/serve.err" || fail "$u not served: $(cat "$T/.run/serve.err")"
		client run "$u" "$tok"
		assert_eq "$(out)" ok "a client through the passed socket $u"
	done
	kill -TERM "$SPID"
	wait "$SPID"
	# The socket is systemd's: its path stays.
	[ -S "$T/a.sock" ] || fail "the passed socket's path was removed"
	rm -f "$T/a.sock"
	# Without --listen, the passed sockets are the default.
	activate "unix:$T/a.sock" -- --no-auth
	wait_for grep -q "listening on unix:$T/a.sock" "$T/.run/serve.err" || fail "not the default: $(cat "$T/.run/serve.err")"
	client run "unix:$T/a.sock" ""
	assert_eq "$(out)" ok "a client through the default passed socket"
	kill -TERM "$SPID"
	wait "$SPID"
	rm -f "$T/a.sock"
	# Passed to another process (LISTEN_PID not ours): not ours to serve.
	activate otherpid "unix:$T/a.sock" -- --listen systemd --no-auth
	wait "$SPID"
	WRC=$?
	expect_rc 125
	grep -q "no sockets were passed" "$T/.run/serve.err" || fail "$(cat "$T/.run/serve.err")"
	rm -f "$T/a.sock"
	# Not a socket, and a socket beyond loopback without --allow-remote: refused.
	activate "file:$T/plain" -- --listen systemd --no-auth
	wait "$SPID"
	WRC=$?
	expect_rc 125
	grep -q "descriptor 3 is not a listening stream socket" "$T/.run/serve.err" || fail "$(cat "$T/.run/serve.err")"
	activate tcp:0.0.0.0 -- --listen systemd --token-file "$T/token"
	wait "$SPID"
	WRC=$?
	expect_rc 125
	grep -q "not a loopback address: that needs --allow-remote" "$T/.run/serve.err" || fail "$(cat "$T/.run/serve.err")"
}

# Kubernetes and podman mount a secret as root's file on a read-only mount, readable by the
# pod's group, reached through symlinks (..data): ward serve, running as another user,
# accepts it as the token file; the same file where it could be changed, or readable by
# others, it does not.
t_mounted_secret() {
	# Anyone's own token file through a symlink is refused (only a secret's may be one).
	printf 'own-token-0123456789abcdef\n' >"$T/own"
	chmod 600 "$T/own"
	ln -s own "$T/own-link"
	timeout 10 "$WARD" serve --listen ws://127.0.0.1:0 --token-file "$T/own-link" </dev/null \
		>"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	assert_stderr_has "is a symlink (only a mounted secret's may be)"
	# The rest makes root's files and mounts: as root only (test.sh runs the suite as both).
	[ "$(id -u)" = 0 ] || return 0
	mkdir -p "$T/sec/..2026" "$T/home"
	printf 'mounted-secret-token-0123456789\n' >"$T/sec/..2026/token"
	chown 0:65534 "$T/sec/..2026/token"
	chmod 0440 "$T/sec/..2026/token"
	ln -s ..2026 "$T/sec/..data"
	ln -s ..data/token "$T/sec/token"
	chmod 755 "$T" "$T/sec" "$T/sec/..2026"
	chown 65534:65534 "$T/home"
	# as65534 [ro|rw] ARGS: ward serve as uid 65534 with the secret directory mounted so.
	as65534() {
		local mode=$1
		shift
		timeout 10 unshare -m sh -c 'mount --bind "$1/sec" "$1/sec" && { [ "$2" = rw ] || mount -o remount,bind,ro "$1/sec"; } &&
			shift 2 && exec setpriv --reuid 65534 --regid 65534 --clear-groups env HOME="$T/home" "$@"' \
			sh "$T" "$mode" "$WARD" serve "$@" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
		WRC=$?
	}
	as65534 ro --listen ws://127.0.0.1:0 --token-file "$T/sec/token" --max-connections 1 --session-ttl 0.001 &
	wait_for grep -q "ws://" "$T/.run/stdout" || fail "the mounted secret was refused: $(cat "$T/.run/stderr")"
	kill %1 2>/dev/null
	wait
	as65534 rw --listen ws://127.0.0.1:0 --token-file "$T/sec/token"
	expect_rc 125
	assert_stderr_has "is a symlink (only a mounted secret's may be)"
	chmod 0444 "$T/sec/..2026/token"
	as65534 ro --listen ws://127.0.0.1:0 --token-file "$T/sec/..2026/token"
	expect_rc 125
	assert_stderr_has "can be read by others"
}

t_max_connections() {
	local tok
	serve --listen ws://127.0.0.1:0 --token-file "$T/token" --max-connections 1
	tok=$(cat "$T/token")
	# The first client holds its connection while the second tries.
	(
		exec 3< <(sleep 5)
		MARK=$(marker maxconn) "$SPY" "$CLIENT" many "$URL" "$tok" 1 <&3 >"$T/first" 2>&1
	) &
	BG_PIDS+=("$!")
	wait_for grep -q started "$T/first" || fail "the first client did not connect: $(cat "$T/first")"
	client http "$URL" / "Upgrade: websocket" "Connection: Upgrade" \
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" "Sec-WebSocket-Version: 13" \
		"Authorization: Bearer $tok"
	assert_eq "$(out)" "status 503" "the second connection is refused at capacity"
}

t_dropped_connections() {
	local m
	m=$(marker dropped)
	serve --listen ws://127.0.0.1:0 --no-auth --session-ttl 1
	MARK=$m client drop "$URL" "" 100
	assert_eq "$(out)" "dropped 100" "100 connections dropped mid-message"
	client run "$URL" ""
	assert_eq "$(out)" ok "the server carries on"
	# Nobody resumed their sessions: their processes die after the TTL.
	sleep 1.5
	expect_gone "$m"
}

t_handshake_flood() {
	local fds
	# Few descriptors: 300 clients that never finish their request must not take them all.
	: >"$T/.run/serve.out"
	bash -c 'ulimit -n 200 && exec "$@"' - "$WARD" serve --listen ws://127.0.0.1:0 \
		--token-file "$T/token" >"$T/.run/serve.out" 2>"$T/.run/serve.err" &
	SPID=$!
	BG_PIDS+=("$SPID")
	wait_for grep -q . "$T/.run/serve.out" || fail "ward serve printed no URL: $(cat "$T/.run/serve.err")"
	URL=$(head -n 1 "$T/.run/serve.out")
	client halfopen "$URL" "$(cat "$T/token")" 300 "$SPID"
	assert_eq "$(head -n 1 "$T/.run/stdout")" ok "a client with the token is served beside 300 stalled handshakes"
	fds=$(sed -n 's/^fds //p' "$T/.run/stdout")
	[ "${fds:-999}" -lt 150 ] || fail "ward serve holds $fds descriptors for stalled handshakes"
}

t_detached_sessions_capped() {
	local m
	m=$(marker detached)
	serve --listen ws://127.0.0.1:0 --no-auth --max-connections 2
	# Five sessions, each with a sleeper, each left for resumption.
	MARK=$m client drop "$URL" "" 5
	assert_eq "$(out)" "dropped 5" "5 sessions detached"
	wait_for test "$(pgrep -cf -- "$m")" = 2 ||
		fail "$(pgrep -cf -- "$m") detached sessions' sleepers run, not 2 (--max-connections)"
	client run "$URL" ""
	assert_eq "$(out)" ok "the server carries on"
}

t_retained_output_has_a_server_wide_budget() {
	serve --listen ws://127.0.0.1:0 --no-auth --retain-total 100000
	client retained "$URL" ""
	set -- $(out)
	[ "$1" = retained ] || fail "no sizes: $(out) $(cat "$T/.run/stderr")"
	assert_eq "$3" 60000 "the newest process keeps all its output"
	[ "$2" -lt 60000 ] || fail "the older process kept $2 bytes: the 100,000-byte budget is exceeded"
	# Under the default budget both keep everything.
	serve --listen ws://127.0.0.1:0 --no-auth
	client retained "$URL" ""
	assert_eq "$(out)" "retained 60000 60000" "both kept under the default budget"
}

t_flood_without_reader() {
	local peak
	serve --listen ws://127.0.0.1:0 --no-auth
	client flood "$URL" "" "$SPID" 4
	peak=$(sed -n 's/^peak_rss_kib //p' "$T/.run/stdout")
	[ -n "$peak" ] || fail "no RSS sample"
	# The queue stops at its high-water mark (4 MiB) and the process is held back.
	[ "$peak" -lt 49152 ] || fail "ward serve grew to $peak KiB for a client that never reads"
	client run "$URL" ""
	assert_eq "$(out)" ok "other clients are still served"
}

# A client that pings without reading: each pong waits in the send queue, charged its
# payload and its own record, so the queue's 64 MiB is what the server really holds
# (a million 20-byte pongs held 120 MB while charged 20 MB).
t_pong_flood_without_reader() {
	local peak
	serve --listen ws://127.0.0.1:0 --no-auth
	client pongs "$URL" "" "$SPID"
	peak=$(sed -n 's/^peak_rss_kib //p' "$T/.run/stdout")
	[ -n "$peak" ] || fail "no RSS sample: $(out) $(err)"
	sanitized || [ "$peak" -lt 98304 ] || fail "ward serve grew to $peak KiB for pongs nobody reads: $(out)"
	client run "$URL" ""
	assert_eq "$(out)" ok "other clients are still served"
}

# A filesystem operation whose client left runs on in its sandbox: it keeps only what
# its answer needs (not the request, 12 MiB of ignored members here), and it counts as
# a connection until it ends, so that clients leaving one behind each time cannot
# pile them up (each kept its whole request before, and there was no bound).
t_fs_orphans_counted() {
	local rss peak d
	mkdir -p "$WS/tree"
	for d in $(seq 1 5); do
		mkdir "$WS/tree/$d"
		(cd "$WS/tree/$d" && touch $(seq 1 1000))
	done
	serve --listen ws://127.0.0.1:0 --no-auth --max-connections 2
	client orphans "$URL" "" "$SPID" 4 "$WS/tree"
	rss=$(sed -n 's/^rss_kib //p' "$T/.run/stdout")
	peak=$(sed -n 's/^peak_rss_kib //p' "$T/.run/stdout")
	[ -n "$peak" ] || fail "no RSS sample: $(out) $(err)"
	grep -qx 'refused 2' "$T/.run/stdout" || fail "the connections beyond 2 running copies are refused: $(out)"
	# The two copies still run: what they keep is their answer's, not their 12 MiB requests.
	sanitized || [ "$rss" -lt 16384 ] || fail "ward serve holds $rss KiB for operations nobody awaits"
	sanitized || [ "$peak" -lt 65536 ] || fail "ward serve grew to $peak KiB with operations nobody awaits"
	for d in $(seq 1 120); do
		client run "$URL" ""
		[ "$(out)" = ok ] && break
		sleep 0.5
	done
	assert_eq "$(out)" ok "served again once the operations ended"
}

t_killed_server_leaves_nothing() {
	local m
	m=$(marker killed)
	serve --listen ws://127.0.0.1:0 --no-auth
	(
		exec 3< <(sleep 10)
		MARK=$m "$SPY" "$CLIENT" many "$URL" "" 5 <&3 >"$T/many" 2>&1
	) &
	BG_PIDS+=("$!")
	wait_for grep -q "started 5" "$T/many" || fail "the sleepers did not start: $(cat "$T/many")"
	pgrep -f -- "$m" >/dev/null || fail "the sandboxed sleepers run"
	kill -KILL "$SPID"
	expect_gone "$m"
}

# fds SPID: how many descriptors the server holds.
# (the cgroup directories of the server's and the connections' budgets aside: held while they live)
fds() { find "/proc/$1/fd" -mindepth 1 -not -lname '/sys/fs/cgroup/*' | wc -l; }
# inotify_instances SPID
inotify_instances() { find "/proc/$1/fd" -lname 'anon_inode:inotify' | wc -l; }
# no_sandboxes SPID: waits up to 30 s for the server to have no child left (the
# kernel's teardown of many network namespaces before can hold new ones up).
no_sandboxes() {
	local i
	for i in $(seq 1 300); do
		[ "$(pgrep -c -P "$1")" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}

# A thousand sandboxes at once: beyond every per-user kernel limit a sandbox
# per process could meet on default sysctls (128 inotify instances, the first
# of them), as root and as an unprivileged user.
t_thousand_sleepers() {
	local m base n
	m=$(marker thousand)
	serve --listen ws://127.0.0.1:0 --no-auth --session-ttl 1
	# A first process sets up what the server keeps for good (the guards' inotify instance).
	client run "$URL" ""
	assert_eq "$(out)" ok "a first process"
	no_sandboxes "$SPID" || fail "the first process's sandbox is still there"
	base=$(fds "$SPID")
	mkfifo "$T/hold"
	(
		exec 3<"$T/hold"
		MARK=$m timeout -k 3 170 "$SPY" "$CLIENT" many "$URL" "" 1000 <&3 >"$T/many" 2>&1
	) &
	BG_PIDS+=("$!")
	exec 4>"$T/hold"
	for _ in $(seq 1 1200); do
		grep -q "^started" "$T/many" && break
		sleep 0.1
	done
	assert_eq "$(head -n 1 "$T/many")" "started 1000 []" "1000 sandboxed sleepers started"
	# Each is its own sandbox: a sleeper, and the init of its pid namespace (a child of ward).
	n=$(pgrep -c -f -- "$m")
	assert_eq "$n" 1000 "1000 sleepers run on the host"
	# Besides them, at most the two sandboxes kept ready for the session's next starts.
	n=$(pgrep -c -P "$SPID")
	[ "$n" -ge 1000 ] && [ "$n" -le 1002 ] || fail "the server has $n sandboxes for 1000 processes"
	assert_eq "$(inotify_instances "$SPID")" 1 "one inotify instance for every guard"
	# The session ends with its connection (and the short TTL): everything of it goes.
	exec 4>&-
	expect_gone "$m"
	no_sandboxes "$SPID" || fail "sandboxes left: $(pgrep -c -P "$SPID")"
	wait_for test "$(fds "$SPID")" = "$base" ||
		fail "the server holds $(fds "$SPID") descriptors, $base before the session"
	client run "$URL" ""
	assert_eq "$(out)" ok "the server carries on"
}

# Finished processes stay readable (30 s) without holding anything of their sandbox.
t_exited_release_their_sandbox() {
	local base
	serve --listen ws://127.0.0.1:0 --no-auth --session-ttl 1
	client run "$URL" ""
	no_sandboxes "$SPID" || fail "the first process's sandbox is still there"
	base=$(fds "$SPID")
	mkfifo "$T/hold2"
	(
		exec 3<"$T/hold2"
		timeout -k 3 120 "$SPY" "$CLIENT" exited "$URL" "" 300 <&3 >"$T/exited" 2>&1
	) &
	BG_PIDS+=("$!")
	exec 4>"$T/hold2"
	for _ in $(seq 1 600); do
		grep -q "^closed" "$T/exited" && break
		sleep 0.1
	done
	assert_eq "$(head -n 1 "$T/exited")" "closed 300" "300 processes ran and closed"
	# The sandbox prepared for the session's next start goes after 5 s unused.
	for _ in $(seq 1 100); do
		[ "$(pgrep -c -P "$SPID")" = 0 ] && break
		sleep 0.1
	done
	assert_eq "$(pgrep -c -P "$SPID")" 0 "no sandbox left (the prepared one gone unused)"
	# One more descriptor: the connection. Nothing of the 300 sandboxes.
	wait_for test "$(fds "$SPID")" = "$((base + 1))" ||
		fail "the server holds $(fds "$SPID") descriptors for 300 finished processes ($base before)"
	echo go >&4
	exec 4>&-
	wait_for grep -q "^readable" "$T/exited"
	assert_eq "$(sed -n 2p "$T/exited")" "readable 300" "their status is still readable"
}

# A session's prepared sandbox is for the connection that holds it: it goes
# when the connection does (a client resuming the session gets none of it).
t_prepared_not_across_connections() {
	local m n
	m=$(marker prepared)
	# Prepared sandboxes are for processes without a layer (review and undo off).
	serve --listen ws://127.0.0.1:0 --no-auth --record off
	mkfifo "$T/hold3"
	(
		exec 3<"$T/hold3"
		MARK=$m timeout -k 3 60 "$SPY" "$CLIENT" many "$URL" "" 1 <&3 >"$T/one" 2>&1
	) &
	BG_PIDS+=("$!")
	exec 4>"$T/hold3"
	wait_for grep -q "^started 1" "$T/one" || fail "the sleeper did not start: $(cat "$T/one")"
	# The sleeper's sandbox, and the two kept ready for the next starts.
	for _ in $(seq 1 300); do
		[ "$(pgrep -c -P "$SPID")" = 3 ] && break
		sleep 0.1
	done
	[ "$(pgrep -c -P "$SPID")" = 3 ] ||
		fail "no sandbox prepared: $(pgrep -c -P "$SPID") sandboxes"
	exec 4>&-
	# The session waits for a resume (its sleeper runs on); the prepared sandbox is gone.
	for _ in $(seq 1 40); do
		n=$(pgrep -c -P "$SPID")
		[ "$n" = 1 ] && break
		sleep 0.05
	done
	assert_eq "$n" 1 "only the detached session's process is left"
	pgrep -f -- "$m" >/dev/null || fail "the detached session's sleeper runs on"
}

t_stdio_eof() {
	local m
	m=$(marker stdio)
	"$SPY" "$WARD_SRC/tests/helpers/mcp-raw.py" -- "$WARD" serve --listen stdio \
		>"$T/.run/stdout" 2>"$T/.run/stderr" <<EOS
{"id":1,"method":"initialize","params":{"clientName":"t"}}
{"method":"initialized"}
{"id":2,"method":"process/start","params":{"processId":"p","argv":["sleep","1000","$m"],"cwd":"file://$WS","env":{"PATH":"/usr/bin:/bin"},"tty":false}}
EOS
	grep -qx 'exit=0' "$T/.run/stdout" || fail "ward serve --listen stdio exits 0 at EOF"
	expect_gone "$m"
}

# The fs queue charges what it really keeps: requests carrying a large member ward ignores,
# queued behind a slow operation, are refused past the documented 64 MiB, and the
# server does not grow with them (a hostile review's finding: 900 MiB from one client).
t_fs_queue_charges_what_it_holds() {
	local d
	# Enough files that the copy is still running when the test stops it.
	for d in $(seq 1 20); do
		mkdir -p "$WS/tree/$d"
		(cd "$WS/tree/$d" && touch $(seq 1 1000))
	done
	echo x >"$WS/a.txt"
	LAST_CMD="ward serve --listen stdio (fs queue)"
	timeout -k 3 120 "$SPY" - "$WARD" "$WS" >"$T/.run/stdout" 2>"$T/.run/stderr" <<'EOPY'
import json, os, signal, subprocess, sys, threading, time
ward, ws = sys.argv[1], sys.argv[2]
p = subprocess.Popen([ward, "serve", "--listen", "stdio", "--audit-log", "none"], cwd=ws,
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
answers = {}
def reader():
    for line in p.stdout:
        m = json.loads(line)
        if "id" in m:
            answers[m["id"]] = m
threading.Thread(target=reader, daemon=True).start()
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
def helpers():
    out = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and b"__fs-op" in open("/proc/%s/cmdline" % pid, "rb").read():
                out.append(int(pid))
        except OSError:
            pass
    return out
send({"id": 1, "method": "initialize", "params": {"clientName": "t"}})
send({"method": "initialized"})
# One operation running, held still (SIGSTOP) so that the queue behind it fills however
# fast or slow this machine is.
send({"id": 2, "method": "fs/copy", "params": {"sourcePath": "file://%s/tree" % ws,
     "destinationPath": "file://%s/tree2" % ws, "recursive": True}})
held = []
for _ in range(200):
    held = helpers()
    if held:
        break
    time.sleep(0.05)
def signal_all(sig):
    for pid in held:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
signal_all(signal.SIGSTOP)
pad = "A" * (8 << 20)
for i in range(30):
    send({"id": 100 + i, "method": "fs/getMetadata", "params": {"path": "file://%s/a.txt" % ws, "pad": pad}})
for _ in range(300):
    if len(answers) >= 22:
        break
    time.sleep(0.1)
early = len(answers)
signal_all(signal.SIGCONT)
for _ in range(600):
    if len(answers) >= 32:
        break
    time.sleep(0.1)
peak = int([l for l in open("/proc/%d/status" % p.pid) if l.startswith("VmHWM")][0].split()[1]) // 1024
refused = sum(1 for i in range(30) if "too many filesystem requests" in
              answers.get(100 + i, {}).get("error", {}).get("message", ""))
served = sum(1 for i in range(30) if answers.get(100 + i, {}).get("result", {}).get("isFile"))
print("held=%d early=%d answers=%d refused=%d served=%d peak_mib=%d" %
      (len(held), early, len(answers), refused, served, peak))
p.stdin.close(); p.wait(timeout=30)
EOPY
	WRC=$?
	local line
	line=$(grep '^held=' "$T/.run/stdout") || fail "no summary: $(err)"
	[[ $line =~ held=[1-9][0-9]*\ early=[0-9]+\ answers=32\ refused=([0-9]+)\ served=([0-9]+)\ peak_mib=([0-9]+) ]] ||
		fail "the operation was held and every request answered: $line"
	# 8 MiB each: at most 64 MiB (7 or 8 requests) wait; the rest are refused at once.
	[ "${BASH_REMATCH[1]}" -ge 20 ] || fail "requests past the 64 MiB cap refused: $line"
	[ "${BASH_REMATCH[2]}" -ge 1 ] || fail "requests within the cap served: $line"
	sanitized || [ "${BASH_REMATCH[3]}" -le 200 ] || fail "the server grew with what it refused: $line"
}

# Retained output is charged what its chunks cost, not only their bytes: commands writing
# one byte at a time keep at most --retain-output / 49 chunks each, and the server's
# peak follows (50,000 one-byte chunks held 2.6 MB while charged 50 KB).
t_retained_chunks_charge_their_cost() {
	LAST_CMD="ward serve --listen stdio (tiny chunks)"
	timeout -k 3 120 "$SPY" - "$WARD" "$WS" >"$T/.run/stdout" 2>"$T/.run/stderr" <<'EOPY'
import json, subprocess, sys, threading, time
ward, ws = sys.argv[1], sys.argv[2]
p = subprocess.Popen([ward, "serve", "--listen", "stdio", "--audit-log", "none",
                      "--retain-output", "256K"], cwd=ws, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
answers, closed = {}, set()
def reader():
    for line in p.stdout:
        m = json.loads(line)
        if "id" in m:
            answers[m["id"]] = m
        elif m.get("method") == "process/closed":
            closed.add(m["params"]["processId"])
threading.Thread(target=reader, daemon=True).start()
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
send({"id": 1, "method": "initialize", "params": {"clientName": "t"}})
send({"method": "initialized"})
code = "import os, time\nfor i in range(40000):\n    os.write(1, b'x')\n    time.sleep(0.00002)\n"
for i in range(8):
    send({"id": 10 + i, "method": "process/start", "params": {"processId": "p%d" % i,
         "argv": ["python3", "-c", code], "env": {"PATH": "/usr/bin:/bin"}}})
for _ in range(900):
    if len(closed) == 8:
        break
    time.sleep(0.1)
peak = int([l for l in open("/proc/%d/status" % p.pid) if l.startswith("VmHWM")][0].split()[1]) // 1024
send({"id": 99, "method": "process/read", "params": {"processId": "p0"}})
for _ in range(300):
    if 99 in answers:
        break
    time.sleep(0.1)
chunks = answers[99]["result"]["chunks"]
print("closed=%d chunks=%d peak_mib=%d" % (len(closed), len(chunks), peak))
p.stdin.close(); p.wait(timeout=30)
EOPY
	WRC=$?
	local line
	line=$(grep '^closed=' "$T/.run/stdout") || fail "no summary: $(err)"
	[[ $line =~ closed=8\ chunks=([0-9]+)\ peak_mib=([0-9]+) ]] || fail "every process closed: $line"
	# 256 KiB / (1 byte + 48) = 5349 chunks at most.
	[ "${BASH_REMATCH[1]}" -le 5349 ] || fail "more chunks kept than their cost allows: $line"
	[ "${BASH_REMATCH[1]}" -ge 100 ] || fail "the command's writes came as separate chunks: $line"
	sanitized || [ "${BASH_REMATCH[2]}" -le 14 ] || fail "the server grew beyond what retention charges: $line"
}

# The policy a process runs under is kept while it runs and charged what it holds with
# the sandbox's copy and its guard: one process may hold 8 MiB of it, the running
# processes of a session 64 MiB, and a process's policy goes when its output closes
# (before, 40 processes naming 200 long writable paths each held 300 MB; with the
# protected names of each root, four such paths make about 2.5 MB now).
t_process_policies_charged() {
	LAST_CMD="ward serve --listen stdio (policies)"
	timeout -k 3 180 "$SPY" - "$WARD" "$WS" "$OUT" >"$T/.run/stdout" 2>"$T/.run/stderr" <<'EOPY'
import json, os, subprocess, sys, threading, time
ward, ws, out = sys.argv[1:4]
def roots(n):
    paths = []
    for i in range(n):
        d = os.path.join(out, "d%03d" % i)
        while len(d) < 3800:
            d = os.path.join(d, "x" * 250)
        os.makedirs(d, exist_ok=True)
        paths.append(d)
    entries = [{"path": {"type": "path", "path": d}, "access": "write"} for d in paths]
    entries += [{"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
                {"path": {"type": "special", "value": {"kind": "project_roots"}}, "access": "write"}]
    return {"permissions": {"type": "managed", "network": "restricted",
            "file_system": {"type": "restricted", "entries": entries}}, "cwd": "file://" + ws}
p = subprocess.Popen([ward, "serve", "--listen", "stdio", "--audit-log", "none"], cwd=ws,
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
answers = {}
def reader():
    for line in p.stdout:
        m = json.loads(line)
        if "id" in m:
            answers[m["id"]] = m
threading.Thread(target=reader, daemon=True).start()
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
def wait(ids):
    for _ in range(1500):
        if all(i in answers for i in ids):
            return [answers[i] for i in ids]
        time.sleep(0.1)
    raise SystemExit("unanswered: %r" % [i for i in ids if i not in answers])
send({"id": 1, "method": "initialize", "params": {"clientName": "t"}})
send({"method": "initialized"})
send({"id": 2, "method": "process/start", "params": {"processId": "big", "argv": ["true"], "sandbox": roots(40)}})
big = wait([2])[0].get("error", {}).get("message", "")
sb = roots(4)
for i in range(48):
    send({"id": 100 + i, "method": "process/start", "params": {"processId": "s%d" % i,
         "argv": ["sleep", "60"], "sandbox": sb}})
got = wait([100 + i for i in range(48)])
ok = sum(1 for a in got if "result" in a)
refused = [a["error"]["message"] for a in got if "error" in a]
peak = int([l for l in open("/proc/%d/status" % p.pid) if l.startswith("VmHWM")][0].split()[1]) // 1024
# A process that ends gives its policy back.
send({"id": 200, "method": "process/terminate", "params": {"processId": "s0"}})
wait([200])
again = None
for k in range(50):
    time.sleep(0.2)
    send({"id": 300 + k, "method": "process/start", "params": {"processId": "again%d" % k,
         "argv": ["true"], "sandbox": sb}})
    if "result" in wait([300 + k])[0]:
        again = "ok"
        break
print("big=%s" % ("refused" if "at most 8388608" in big else big[:200]))
print("ok=%d refused=%d peak_mib=%d again=%s" % (ok, len(refused), peak, again))
print("why=%s" % (refused[0] if refused else ""))
p.stdin.close(); p.wait(timeout=60)
EOPY
	WRC=$?
	grep -qx 'big=refused' "$T/.run/stdout" || fail "a policy over 8 MiB is refused: $(out) $(err)"
	local line
	line=$(grep '^ok=' "$T/.run/stdout") || fail "no summary: $(out) $(err)"
	[[ $line =~ ok=([0-9]+)\ refused=([0-9]+)\ peak_mib=([0-9]+)\ again=ok ]] ||
		fail "a process started once another ended: $line"
	[ "${BASH_REMATCH[1]}" -ge 4 ] && [ "${BASH_REMATCH[2]}" -ge 1 ] ||
		fail "some start, the rest past 64 MiB of policies are refused: $line"
	sanitized || [ "${BASH_REMATCH[3]}" -le 160 ] || fail "the server grew beyond the policies it charges: $line"
	grep -q "^why=the policies of this session's running processes hold .* (at most 67108864)" \
		"$T/.run/stdout" || fail "the refusal names the limit: $(out)"
}

# Accepted writeIds are remembered (a retry is not written twice), the last 4,096 per
# process within 1 MiB per session, the session's oldest forgotten first: 16 processes
# sent 4,096 ids of 256 bytes each held 20 MB before (4.5 GB for a session of 4,096).
t_write_ids_charged() {
	LAST_CMD="ward serve --listen stdio (writeIds)"
	timeout -k 3 180 "$SPY" - "$WARD" "$WS" >"$T/.run/stdout" 2>"$T/.run/stderr" <<'EOPY'
import base64, json, subprocess, sys, threading, time
ward, ws = sys.argv[1:3]
p = subprocess.Popen([ward, "serve", "--listen", "stdio", "--audit-log", "none"], cwd=ws,
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
answers, output = {}, b""
def reader():
    global output
    for line in p.stdout:
        m = json.loads(line)
        if "id" in m:
            answers[m["id"]] = m
        elif m.get("method") == "process/output":
            output += base64.b64decode(m["params"]["chunk"])
threading.Thread(target=reader, daemon=True).start()
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode())
def wait(ids):
    p.stdin.flush()
    for _ in range(1500):
        if all(i in answers for i in ids):
            return [answers[i] for i in ids]
        time.sleep(0.1)
    raise SystemExit("unanswered: %r" % [i for i in ids if i not in answers][:3])
def write(rid, pid, wid, data):
    send({"id": rid, "method": "process/write", "params": {"processId": pid,
          "chunk": base64.b64encode(data).decode(), "writeId": wid}})
send({"id": 1, "method": "initialize", "params": {"clientName": "t"}})
send({"method": "initialized"})
send({"id": 2, "method": "process/start", "params": {"processId": "cat", "argv": ["cat"], "pipeStdin": True}})
for i in range(16):
    send({"id": 10 + i, "method": "process/start", "params": {"processId": "s%d" % i,
          "argv": ["sleep", "120"], "pipeStdin": True}})
wait([2] + [10 + i for i in range(16)])
write(3, "cat", "first", b"A")
write(4, "cat", "first", b"C")
wait([3, 4])
rid = 1000
for i in range(16):
    for k in range(4096):
        write(rid, "s%d" % i, "%03d-%05d-" % (i, k) + "w" * 245, b"")
        rid += 1
    wait([rid - 1])
statuses = {a["result"]["status"] for a in wait(list(range(1000, rid)))}
write(5, "cat", "first", b"B")
wait([5])
for _ in range(100):
    if len(output) >= 2:
        break
    time.sleep(0.1)
peak = int([l for l in open("/proc/%d/status" % p.pid) if l.startswith("VmHWM")][0].split()[1]) // 1024
print("statuses=%s output=%s peak_mib=%d" % (",".join(sorted(statuses)), output.decode(), peak))
p.stdin.close(); p.wait(timeout=60)
EOPY
	WRC=$?
	local line
	line=$(grep '^statuses=' "$T/.run/stdout") || fail "no summary: $(out) $(err)"
	# A retry is not written; once 1 MiB of newer ids came, the first is forgotten.
	[[ $line =~ statuses=accepted\ output=AB\ peak_mib=([0-9]+) ]] || fail "$line"
	sanitized || [ "${BASH_REMATCH[1]}" -le 12 ] || fail "the server grew with the ids it remembers: $line"
}

# Input the processes of a session have not read is charged across the session: 1 MiB
# per process, 8 MiB in all, refused past it naming the limit (40 processes that never
# read held 40 MiB before, a session of 4,096 would hold 4 GiB).
t_stdin_charged_per_session() {
	LAST_CMD="ward serve --listen stdio (stdin)"
	timeout -k 3 180 "$SPY" - "$WARD" "$WS" >"$T/.run/stdout" 2>"$T/.run/stderr" <<'EOPY'
import base64, json, subprocess, sys, threading, time
ward, ws = sys.argv[1:3]
p = subprocess.Popen([ward, "serve", "--listen", "stdio", "--audit-log", "none"], cwd=ws,
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
answers = {}
def reader():
    for line in p.stdout:
        m = json.loads(line)
        if "id" in m:
            answers[m["id"]] = m
threading.Thread(target=reader, daemon=True).start()
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
def wait(ids):
    for _ in range(1500):
        if all(i in answers for i in ids):
            return [answers[i] for i in ids]
        time.sleep(0.1)
    raise SystemExit("unanswered: %r" % [i for i in ids if i not in answers][:3])
send({"id": 1, "method": "initialize", "params": {"clientName": "t"}})
send({"method": "initialized"})
for i in range(40):
    send({"id": 10 + i, "method": "process/start", "params": {"processId": "s%d" % i,
          "argv": ["sleep", "120"], "pipeStdin": True}})
wait([10 + i for i in range(40)])
mib = base64.b64encode(b"x" * (1 << 20)).decode()
for i in range(40):
    send({"id": 100 + i, "method": "process/write", "params": {"processId": "s%d" % i,
          "chunk": mib, "writeId": "w%d" % i}})
got = wait([100 + i for i in range(40)])
ok = sum(1 for a in got if a.get("result", {}).get("status") == "accepted")
why = [a["error"]["message"] for a in got if "error" in a]
peak = int([l for l in open("/proc/%d/status" % p.pid) if l.startswith("VmHWM")][0].split()[1]) // 1024
# A process that ends gives its queue back.
send({"id": 200, "method": "process/terminate", "params": {"processId": "s0"}})
wait([200])
again = None
for k in range(50):
    time.sleep(0.2)
    send({"id": 300 + k, "method": "process/write", "params": {"processId": "s39",
          "chunk": mib, "writeId": "again"}})
    if wait([300 + k])[0].get("result", {}).get("status") == "accepted":
        again = "ok"
        break
print("ok=%d refused=%d peak_mib=%d again=%s" % (ok, len(why), peak, again))
print("why=%s" % (why[0] if why else ""))
p.stdin.close(); p.wait(timeout=60)
EOPY
	WRC=$?
	local line
	line=$(grep '^ok=' "$T/.run/stdout") || fail "no summary: $(out) $(err)"
	[[ $line =~ ok=7\ refused=33\ peak_mib=([0-9]+)\ again=ok ]] || fail "$line"
	sanitized || [ "${BASH_REMATCH[1]}" -le 26 ] || fail "the server grew beyond the 8 MiB it charges: $line"
	grep -q "^why=failed to write to process stdin: this session's processes hold .* (at most 8388608)" \
		"$T/.run/stdout" || fail "the refusal names the limit: $(out)"
}

# Waiting process/read calls are capped per process (64) and per connection (1,024):
# more are answered at once, as a wait that ended. Each keeps its id (up to 1 KiB):
# without the second cap a session of 4,096 processes could keep 288 MiB of them.
t_waiting_reads_capped() {
	LAST_CMD="ward serve --listen stdio (waiting reads)"
	timeout -k 3 120 "$SPY" - "$WARD" "$WS" >"$T/.run/stdout" 2>"$T/.run/stderr" <<'EOPY'
import json, subprocess, sys, threading, time
ward, ws = sys.argv[1:3]
p = subprocess.Popen([ward, "serve", "--listen", "stdio", "--audit-log", "none"], cwd=ws,
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
answers = {}
def reader():
    for line in p.stdout:
        m = json.loads(line)
        if "id" in m:
            answers[m["id"]] = m
threading.Thread(target=reader, daemon=True).start()
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
send({"id": 1, "method": "initialize", "params": {"clientName": "t"}})
send({"method": "initialized"})
for i in range(20):
    send({"id": 10 + i, "method": "process/start", "params": {"processId": "s%d" % i,
          "argv": ["sleep", "60"]}})
for _ in range(600):
    if all(10 + i in answers for i in range(20)):
        break
    time.sleep(0.1)
for i in range(20):
    for k in range(65 if i == 0 else 64):
        send({"id": "r-%02d-%03d-" % (i, k) + "x" * 1000, "method": "process/read",
              "params": {"processId": "s%d" % i, "waitMs": 60000}})
time.sleep(3)
now = sum(1 for k in answers if isinstance(k, str) and k.startswith("r-"))
print("answered_at_once=%d" % now)
p.stdin.close(); p.wait(timeout=60)
EOPY
	WRC=$?
	# 1,281 reads: the 65th on s0 and the 256 beyond 1,024 on this connection.
	assert_eq "$(grep '^answered_at_once=' "$T/.run/stdout")" "answered_at_once=257" \
		"reads past the caps are answered at once: $(err)"
}

# --max-message is the JSON reader's limit too (the transports took 32 MiB, the reader
# still refused what passed 16 MiB).
t_max_message_option() {
	echo x >"$WS/a.txt"
	LAST_CMD="ward serve --listen stdio --max-message 32M"
	timeout -k 3 60 "$SPY" - "$WARD" "$WS" >"$T/.run/stdout" 2>"$T/.run/stderr" <<'EOPY'
import json, subprocess, sys
ward, ws = sys.argv[1:3]
p = subprocess.Popen([ward, "serve", "--listen", "stdio", "--audit-log", "none", "--max-message", "32M"],
                     cwd=ws, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
send({"id": 1, "method": "initialize", "params": {"clientName": "t"}})
send({"method": "initialized"})
send({"id": 2, "method": "fs/getMetadata", "params": {"path": "file://%s/a.txt" % ws, "pad": "A" * (20 << 20)}})
send({"id": 3, "method": "fs/getMetadata", "params": {"path": "file://%s/a.txt" % ws, "pad": "A" * (33 << 20)}})
got = {}
for line in p.stdout:
    m = json.loads(line)
    got[m.get("id")] = m
    if 2 in got and 3 in got:
        break
print("20MiB", got[2].get("result", {}).get("isFile"), got[2].get("error", {}).get("message"))
print("33MiB", got[3].get("error", {}).get("message"))
p.stdin.close(); p.wait(timeout=30)
EOPY
	WRC=$?
	grep -qx '20MiB True None' "$T/.run/stdout" || fail "a 20 MiB message is read under --max-message 32M: $(out) $(err)"
	grep -q '^33MiB .*larger than 33554432 bytes' "$T/.run/stdout" || fail "a 33 MiB one is refused: $(out)"
}

# The denials a running command's sandbox keeps are capped in bytes as well as in
# number: 256 refused writes to paths of 2 KiB kept 520 KB per process before.
t_denials_capped_in_bytes() {
	local deep=$WS/ro
	while [ ${#deep} -lt 2000 ]; do deep=$deep/$(printf 'd%.0s' $(seq 1 200)); done
	mkdir -p "$deep"
	LAST_CMD="ward serve --listen stdio --protect (denials)"
	timeout -k 3 120 "$SPY" - "$WARD" "$WS" "$deep" >"$T/.run/stdout" 2>"$T/.run/stderr" <<'EOPY'
import json, subprocess, sys
ward, ws, deep = sys.argv[1:4]
p = subprocess.Popen([ward, "serve", "--listen", "stdio", "--audit-log", "none", "--protect", ws + "/ro"],
                     cwd=ws, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
send({"id": 1, "method": "initialize", "params": {"clientName": "t"}})
send({"method": "initialized"})
send({"id": 2, "method": "process/start", "params": {"processId": "d", "argv": ["sh", "-c",
      'for i in $(seq 1 300); do true >"$0/f$i" 2>/dev/null; done', deep]}})
for line in p.stdout:
    m = json.loads(line)
    if m.get("method") == "process/exited":
        d = m["params"]["denials"]
        print("denials=%d bytes=%d" % (len(d), sum(len(x["target"]) + 1 for x in d)))
        break
p.stdin.close(); p.wait(timeout=30)
EOPY
	WRC=$?
	local line
	line=$(grep '^denials=' "$T/.run/stdout") || fail "no exit: $(out) $(err)"
	[[ $line =~ denials=([0-9]+)\ bytes=([0-9]+) ]] || fail "$line"
	[ "${BASH_REMATCH[1]}" -ge 16 ] || fail "the first refusals are listed: $line"
	[ "${BASH_REMATCH[2]}" -le 65536 ] || fail "more than 64 KiB of denials kept: $line"
}

# Under a deny-read directory, process/start's cwd gets the sandbox's answer, the same
# for a hidden directory, a hidden file and a missing path (the server does not look).
t_cwd_under_deny_read() {
	mkdir -p "$T/hidden/dir"
	echo secret >"$T/hidden/file"
	LAST_CMD="ward serve --listen stdio --deny-read (cwd)"
	timeout -k 3 60 "$SPY" - "$WARD" "$WS" "$T/hidden" >"$T/.run/stdout" 2>"$T/.run/stderr" <<'EOPY'
import json, subprocess, sys
ward, ws, hidden = sys.argv[1:4]
p = subprocess.Popen([ward, "serve", "--listen", "stdio", "--audit-log", "none", "--deny-read", hidden],
                     cwd=ws, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
send({"id": 1, "method": "initialize", "params": {"clientName": "t"}})
send({"method": "initialized"})
want = {}
for i, d in enumerate(["dir", "file", "nope"]):
    send({"id": 10 + i, "method": "process/start", "params": {"processId": d, "argv": ["true"],
         "cwd": "file://%s/%s" % (hidden, d), "env": {}, "tty": False}})
    want[d] = None
for line in p.stdout:
    m = json.loads(line)
    if m.get("method") == "process/exited":
        pid = m["params"]["processId"]
        want[pid] = (m["params"]["exitCode"], m["params"].get("failure", "").replace(hidden + "/" + pid, "P"))
    if "error" in m:
        want[["dir", "file", "nope"][m["id"] - 10]] = ("error", m["error"]["message"].replace(hidden, "H"))
    if all(want.values()):
        break
for d in ["dir", "file", "nope"]:
    print(d, want[d])
p.stdin.close(); p.wait(timeout=30)
EOPY
	WRC=$?
	[ "$(cut -d' ' -f2- "$T/.run/stdout" | sort -u | wc -l)" = 1 ] ||
		fail "the three answers differ: $(out)"
	grep -q "^dir (125, " "$T/.run/stdout" || fail "the process ends at once, 125: $(out)"
}

tcase "token file, bearer authentication, Origin refused, readyz" t_token_and_origin
tcase "a cwd under a deny-read directory: the sandbox's answer, the same for every kind" t_cwd_under_deny_read
tcase "the fs queue charges the whole request it keeps (64 MiB per connection)" t_fs_queue_charges_what_it_holds
tcase "bad start-up options are refused with one line (125)" t_refusals_at_start
tcase "a first run without XDG_RUNTIME_DIR or ~/.local: the token's directory is made" t_first_run_token_dir
tcase "unix socket listener (0600, stale socket replaced)" t_unix_socket
tcase "socket activation: the sockets systemd passes (LISTEN_FDS), only when LISTEN_PID is ours" t_socket_activation
tcase "a mounted secret (root's, read-only, the group's) is accepted as the token file" t_mounted_secret
tcase "connections beyond --max-connections get 503" t_max_connections
tcase "100 connections dropped mid-request: server carries on, nothing left" t_dropped_connections
tcase "300 stalled handshakes: bounded, a client with the token still served" t_handshake_flood
tcase "detached sessions beyond --max-connections: the oldest killed" t_detached_sessions_capped
tcase "a client that never reads cannot make the server grow" t_flood_without_reader
tcase "pongs nobody reads are charged what they hold (64 MiB per connection)" t_pong_flood_without_reader
tcase "fs operations whose client left keep their answer only and count as connections" t_fs_orphans_counted
tcase "retained output has a server-wide budget, the least recent output first" t_retained_output_has_a_server_wide_budget
tcase "retained output charges each chunk its cost, not only its bytes" t_retained_chunks_charge_their_cost
tcase "process policies are charged: 8 MiB each, 64 MiB per session, freed at close" t_process_policies_charged
tcase "remembered writeIds are charged: 1 MiB per session, the oldest forgotten" t_write_ids_charged
tcase "unread stdin is charged per session (8 MiB), refused past it" t_stdin_charged_per_session
tcase "waiting process/read calls are capped per process and per connection" t_waiting_reads_capped
tcase "--max-message is the JSON reader's limit too" t_max_message_option
tcase "a sandbox keeps at most 64 KiB of denials" t_denials_capped_in_bytes
tcase "the server SIGKILLed: none of its processes survive" t_killed_server_leaves_nothing
tcase "stdio: EOF kills every process, exit 0" t_stdio_eof
tcase "1000 concurrent sandboxed processes, nothing left after the session" t_thousand_sleepers
tcase "finished processes keep their status, not their sandbox's descriptors" t_exited_release_their_sandbox
tcase "a prepared sandbox goes with its connection" t_prepared_not_across_connections
finish
