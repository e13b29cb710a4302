#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2119,SC2016
#
# The network: with the network off (the default) nothing on the host is
# reachable, TCP, UDP, pathname and abstract unix sockets alike, and every case
# checks that the host-side listener saw nothing; --network on and
# --allow-unix-socket are the positive controls that show the listeners work.
# Loopback inside the sandbox works.
. "$(dirname "$0")/lib.sh"

host_ip() {
	ip -4 -o addr show scope global 2>/dev/null | awk '{ sub(/\/.*/, "", $4); print $4; exit }'
}

t_tcp_loopback_host() {
	listen tcp 127.0.0.1
	wp -- connect-tcp 127.0.0.1 "$LPORT"
	expect_denied connect-tcp
	expect_listener_silent
	wp --network on -- connect-tcp 127.0.0.1 "$LPORT"
	expect_ok
	expect_listener_reached
}

t_tcp_host_address() {
	local ip
	ip=$(host_ip)
	[ -n "$ip" ] || skip "the host has no global IPv4 address"
	listen tcp 0.0.0.0
	wp -- connect-tcp "$ip" "$LPORT"
	expect_denied connect-tcp
	wp -- connect-tcp 127.0.0.1 "$LPORT"
	expect_denied connect-tcp
	expect_listener_silent
}

t_tcp6() {
	[ -e /proc/net/if_inet6 ] || skip "IPv6 is disabled"
	listen tcp ::1
	wp -- connect-tcp ::1 "$LPORT"
	expect_denied connect-tcp
	expect_listener_silent
}

t_udp() {
	listen udp 127.0.0.1
	# The datagram may well be "sent" into the sandbox's own loopback; what
	# matters is that the host never receives it.
	wp -- connect-udp 127.0.0.1 "$LPORT"
	probe_line connect-udp >/dev/null || fail "the probe did not run"
	expect_listener_silent
	wp --network on -- connect-udp 127.0.0.1 "$LPORT"
	expect_ok
	expect_listener_reached
}

t_unix_host_socket() {
	listen unix "$OUT/host.sock"
	wp -- connect-unix "$OUT/host.sock"
	expect_denied connect-unix
	expect_listener_silent
	wp --allow-unix-socket "$OUT/host.sock" -- connect-unix "$OUT/host.sock"
	expect_ok
	expect_listener_reached
}

t_unix_host_socket_in_workspace() {
	# A socket a host process bound inside the workspace is still the host's.
	listen unix "$WS/host.sock"
	wp -- connect-unix "$WS/host.sock"
	expect_denied connect-unix
	# Through a symlink and through a hard link made inside.
	ln -s "$WS/host.sock" "$WS/link.sock"
	wp -- connect-unix "$WS/link.sock"
	expect_denied connect-unix
	w -- sh -c "ln '$WS/host.sock' '$WS/hard.sock' && '$PROBE' connect-unix '$WS/hard.sock'"
	expect_denied connect-unix
	expect_listener_silent
}

t_unix_dgram_host_socket() {
	listen unix-dgram "$OUT/dgram.sock"
	wp -- sendto-unix "$OUT/dgram.sock"
	expect_denied sendto-unix
	expect_listener_silent
}

t_abstract_host_socket() {
	local name
	name=ward-it-$$-$RANDOM
	listen abstract "$name"
	wp -- connect-abstract "$name"
	expect_denied connect-abstract
	expect_listener_silent
	# With the network on there is no network namespace: abstract sockets of the
	# host stay out of reach through Landlock's scoping (ABI 6), and where that is
	# not in force ward says so instead.
	wp --network on -- connect-abstract "$name"
	local abi
	abi=$("$WARD" run --json --network on -- true | sed -n 's/.*"landlock_abi":\([0-9]*\).*/\1/p')
	if [ "${abi:-0}" -ge 6 ]; then
		expect_denied connect-abstract
		expect_listener_silent
	else
		"$WARD" policy show --network on >"$T/.run/policy" || fail "ward policy show failed"
		grep -q 'abstract unix sockets' "$T/.run/policy" ||
			fail "Landlock ABI ${abi:-0} < 6 and policy show does not name the abstract sockets: $(cat "$T/.run/policy")"
	fi
}

t_unix_inside() {
	w -- sh -c '
		"$0" listen-unix "$1" 5 &
		for i in $(seq 1 100); do "$0" connect-unix "$1" >/dev/null && break; sleep 0.05; done
		wait' "$PROBE" "$WS/in.sock"
	grep -q '^listen-unix: ok accepted' "$T/.run/stdout" || fail "no connection inside"
	assert_stdout_has 'received "probe\n"'
}

t_loopback_inside() {
	local port=$((20000 + RANDOM % 20000)) host
	for host in 127.0.0.1 ::1; do
		if [ "$host" = ::1 ] && [ ! -e /proc/net/if_inet6 ]; then
			continue
		fi
		w -- sh -c '
			"$0" listen-tcp "$1" "$2" 5 &
			for i in $(seq 1 100); do "$0" connect-tcp "$1" "$2" >/dev/null && break; sleep 0.05; done
			wait' "$PROBE" "$host" "$port"
		grep -q "^listen-tcp: ok accepted on $host" "$T/.run/stdout" || fail "no loopback connection on $host"
		assert_stdout_has 'received "probe\n"'
	done
	[ -n "$PY" ] || return 0
	w -- "$PY" -c '
import socket, threading
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
threading.Thread(target=lambda: s.accept()[0].sendall(b"pong")).start()
c = socket.create_connection(s.getsockname()); print(c.recv(4).decode())'
	expect_rc 0
	assert_eq "$LINE" pong "python loopback"
}

t_interfaces() {
	need_cmd ip
	w -- ip -o link
	expect_rc 0
	assert_eq "$(awk -F': ' '{print $2}' "$T/.run/stdout" | tr '\n' ' ')" "lo " "interfaces inside"
	grep -q 'UP' "$T/.run/stdout" || fail "lo is not up inside: $(out)"
	local host_net
	host_net=$(readlink /proc/self/ns/net)
	wp -- ns
	expect_ok
	assert_no_match "$LINE" "net=$host_net" "network namespace"
}

tcase "TCP to the host's 127.0.0.1 is refused; the listener sees nothing" t_tcp_loopback_host
tcase "TCP to the host's own address is refused" t_tcp_host_address
tcase "TCP to the host's ::1 is refused" t_tcp6
tcase "UDP datagrams never reach the host" t_udp
tcase "host unix sockets are unreachable; --allow-unix-socket opens one" t_unix_host_socket
tcase "a host socket inside the workspace is unreachable (also via links)" t_unix_host_socket_in_workspace
tcase "host unix datagram sockets are unreachable" t_unix_dgram_host_socket
tcase "abstract unix sockets of the host are unreachable" t_abstract_host_socket
tcase "unix sockets bound inside work" t_unix_inside
tcase "loopback server and client inside (127.0.0.1, ::1, python)" t_loopback_inside
tcase "only lo, up, in a network namespace of its own" t_interfaces
finish
