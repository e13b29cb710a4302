#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2016
#
# Captured runs (`ward run --json`, issue 3), end to end: exact caps, a flood
# with ward's peak RSS, timeouts that kill a whole tree (setsid escaper,
# stopped process), a background holder of the pipes, interleaving, exit codes,
# stdin, the environment policy, text and base64, cancellation, and exact
# denial reports (and none for commands that fail on their own).
#
# Assertions are on what the command produced (its output, inside the JSON)
# and on the host (files unchanged, no process left, the listener silent).
#
# Environment (besides lib.sh's): CAPTURE_FLOOD_BYTES, the size of the flood
# (default 10000000000, 10 GB).
. "$(dirname "$0")/lib.sh"

FLOOD=${CAPTURE_FLOOD_BYTES:-10000000000}

# j EXPR: EXPR (Python, over the JSON object d of the last run) as JSON text, so
# that comparisons are exact (strings quoted, trailing newlines kept).
j() {
	"$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps(eval(sys.argv[2], {"d": d})))' "$T/.run/stdout" "$1"
}

# expect_json EXPR WANT: EXPR evaluates to WANT (JSON text).
expect_json() {
	local got
	got=$(j "$1" 2>&1) || fail "not a JSON object on stdout ($got)"
	[ "$got" = "$2" ] || fail "$1: got $got, want $2"
}

# wj [options] -- COMMAND: `ward run --json`.
wj() {
	[ -n "$PY" ] || skip "python3 is needed to read the JSON"
	w --json "$@"
}

# ------------------------------------------------------------------ caps

t_caps_exact() {
	local len want
	for len in 63 64 65 200; do
		wj --max-output 64 --json-base64 -- "$PY" -c \
			"import sys; sys.stdout.buffer.write(bytes((i * 7 + 3) % 256 for i in range($len)))"
		expect_rc 0
		want=$("$PY" -c "
import base64, json
b = bytes((i * 7 + 3) % 256 for i in range($len))
if len(b) > 64:
    b = b[:32] + ('\n... %d bytes omitted ...\n' % (len(b) - 64)).encode() + b[-32:]
print(json.dumps(base64.b64encode(b).decode()))")
		expect_json 'd["stdout_base64"]' "$want"
		expect_json 'd["stdout_omitted_bytes"]' "$((len > 64 ? len - 64 : 0))"
		expect_json 'd["output_base64"]' "$want"
		expect_json 'd["stderr"]' '""'
	done
}

t_caps_streams() {
	local total
	total=$(seq 1 100000 | wc -c)
	wj --max-output 1000 -- sh -c 'seq 1 100000; seq 1 10 >&2'
	expect_rc 0
	expect_json 'd["stdout"][:10]' '"1\n2\n3\n4\n5\n"'
	expect_json 'd["stdout"][-13:]' '"99999\n100000\n"'
	expect_json 'd["stdout_omitted_bytes"]' "$((total - 1000))"
	expect_json 'len(d["stdout"]) - len("\n... %d bytes omitted ...\n" % d["stdout_omitted_bytes"])' 1000
	expect_json 'd["stderr"]' '"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"'
	expect_json 'd["stderr_omitted_bytes"]' 0
	# The aggregated capture has its own cap and ends with what came last.
	expect_json 'd["output_omitted_bytes"]' "$((total + 21 - 1000))"
	expect_json 'd["output"].endswith("\n8\n9\n10\n")' true
}

t_flood_rss() {
	local kib limit start
	[ -n "$PY" ] || skip "python3 is needed to read the JSON"
	[ -x /usr/bin/time ] || skip "GNU time (/usr/bin/time) is not installed"
	start=$(date +%s)
	LAST_CMD="ward run --json -- sh -c 'yes | head -c $FLOOD'"
	timeout -k 3 600 /usr/bin/time -o "$T/rss" -f %M "$WARD" run --json -- sh -c "yes | head -c $FLOOD" \
		</dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 0
	kib=$(tail -n 1 "$T/rss")
	# Issue 3: the caps (3 x 1 MiB) plus at most 8 MiB, whatever the command writes.
	limit=$((3 * 1024 + 8 * 1024))
	echo "peak RSS ${kib} KiB for $FLOOD bytes in $(($(date +%s) - start)) s"
	[ "$kib" -le "$limit" ] || fail "ward's peak RSS ${kib} KiB > ${limit} KiB"
	expect_json 'd["stdout_omitted_bytes"] + 1048576' "$FLOOD"
	expect_json 'd["output_omitted_bytes"] + 1048576' "$FLOOD"
	expect_json 'd["stdout"][-6:]' '"y\ny\ny\n"'
	expect_json 'd["stdout"][:6]' '"y\ny\ny\n"'
}

# ------------------------------------------------------------------ time and processes

t_timeout_tree() {
	local m1 m2 m3 start elapsed
	m1=$(marker escaper)
	m2=$(marker stopped)
	m3=$(marker main)
	start=$(date +%s%N)
	wj --timeout 1 -- sh -c "
		setsid '$PROBE' sleep 1000 $m1 &
		sh -c 'kill -STOP \$\$; exec \"$PROBE\" sleep 1000 $m2' &
		echo started
		exec '$PROBE' sleep 1000 $m3"
	elapsed=$((($(date +%s%N) - start) / 1000000))
	expect_rc 124
	expect_json 'd["timed_out"]' true
	expect_json 'd["exit_code"]' 124
	expect_json 'd["stdout"]' '"started\n"'
	[ "$elapsed" -lt 5000 ] || fail "returned after ${elapsed} ms"
	expect_gone "$m1"
	expect_gone "$m2"
	expect_gone "$m3"
}

t_background_holder() {
	local m start elapsed
	m=$(marker holder)
	start=$(date +%s%N)
	wj -- sh -c "'$PROBE' sleep 1000 $m & echo hi"
	elapsed=$((($(date +%s%N) - start) / 1000000))
	expect_rc 0
	expect_json 'd["stdout"]' '"hi\n"'
	expect_json 'd["timed_out"]' false
	[ "$elapsed" -lt 3000 ] || fail "a background holder of the pipes delayed the run: ${elapsed} ms"
	expect_gone "$m"
}

t_interleaving() {
	wj -- sh -c 'echo 1; sleep 0.1; echo 2 >&2; sleep 0.1; echo 3; sleep 0.1; echo 4 >&2; sleep 0.1; echo 5'
	expect_rc 0
	expect_json 'd["output"]' '"1\n2\n3\n4\n5\n"'
	expect_json 'd["stdout"]' '"1\n3\n5\n"'
	expect_json 'd["stderr"]' '"2\n4\n"'
}

t_exit_codes() {
	wj -- sh -c 'echo out; exit 3'
	expect_rc 3
	expect_json '[d["exit_code"], d["signal"], d["timed_out"], d["stdout"]]' '[3, null, false, "out\n"]'
	wj -- sh -c 'kill -KILL $$'
	expect_rc 137
	expect_json '[d["exit_code"], d["signal"], d["signal_name"]]' '[137, 9, "SIGKILL"]'
	wj -- /nonexistent/ward-no-such-command
	expect_rc 127
	expect_json 'd["exit_code"]' 127
	expect_json 'd["error"] is not None' true
	printf 'not executable\n' >"$WS/noexec"
	chmod 644 "$WS/noexec"
	wj -- "$WS/noexec"
	expect_rc 126
	expect_json 'd["exit_code"]' 126
	expect_json '[d["duration_ms"] >= 0, d["sandbox"]["network"]]' '[true, "off"]'
}

t_stdin() {
	wj -- cat
	expect_rc 0
	expect_json 'd["stdout"]' '""'
	printf 'line one\nline two\n' >"$T/in.txt"
	wj --stdin "$T/in.txt" -- cat
	expect_json 'd["stdout"]' '"line one\nline two\n"'
	LAST_CMD="ward run --json --stdin - -- cat"
	timeout -k 3 "$WARD_TEST_TIMEOUT" "$WARD" run --json --stdin - -- cat <"$T/in.txt" \
		>"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 0
	expect_json 'd["stdout"]' '"line one\nline two\n"'
	# More than a pipe holds, and a command that reads none of it.
	head -c 3000000 /dev/zero >"$T/big"
	wj --stdin "$T/big" -- wc -c
	expect_json 'd["stdout"].strip()' '"3000000"'
	wj --stdin "$T/big" -- true
	expect_rc 0
}

# env_of [ward options]: the environment /usr/bin/env sees, minus nothing, sorted.
env_of() {
	LAST_CMD="ward run --json $* -- /usr/bin/env"
	env -i PATH=/usr/bin:/bin HOME=/home/u FOO_TOKEN=t EDITOR=vi Lower_Key=k \
		timeout -k 3 "$WARD_TEST_TIMEOUT" "$WARD" run --json "$@" -- /usr/bin/env \
		</dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 0
}

# expect_env LIST: the variables the command saw are LIST, in any order.
expect_env() {
	expect_json "sorted(d['stdout'].split()) == sorted($1)" true
}

t_env_policy() {
	[ -n "$PY" ] || skip "python3 is needed to read the JSON"
	local markers='"CODEX_SANDBOX_NETWORK_DISABLED=1", "WARD_SANDBOX=1", "WARD_SANDBOX_NETWORK_DISABLED=1"'
	env_of
	expect_env "[$markers, \"EDITOR=vi\", \"FOO_TOKEN=t\", \"HOME=/home/u\", \"Lower_Key=k\", \"PATH=/usr/bin:/bin\"]"
	env_of --env-inherit core
	expect_env "[$markers, \"HOME=/home/u\", \"PATH=/usr/bin:/bin\"]"
	env_of --env-inherit none --env-set A=1 --env-set B=x=y
	expect_env "[\"A=1\", \"B=x=y\", $markers]"
	env_of --env-default-excludes --env-exclude 'edit*'
	expect_env "[$markers, \"HOME=/home/u\", \"PATH=/usr/bin:/bin\"]"
	env_of --env-unset HOME --env-include-only 'p*' --env-include-only '*TOKEN' --env-set WARD_SANDBOX=0
	expect_env "[$markers, \"FOO_TOKEN=t\", \"PATH=/usr/bin:/bin\"]"
	env_of --network on
	expect_json '[x for x in d["stdout"].split() if "SANDBOX" in x]' '["WARD_SANDBOX=1"]'
	# The caps count what the command gets: a huge environment filtered down is fine.
	LAST_CMD="ward run --json --env-include-only PATH (5000 variables)"
	env $("$PY" -c 'print(" ".join("WARD_IT_V%d=x" % i for i in range(5000)))') \
		"$WARD" run --json --env-include-only PATH -- env </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 0
	expect_json '[x.split("=")[0] for x in d["stdout"].split()]' '["PATH", "WARD_SANDBOX", "WARD_SANDBOX_NETWORK_DISABLED", "CODEX_SANDBOX_NETWORK_DISABLED"]'
	# PWD names the directory the command starts in.
	mkdir -p "$WS/sub"
	(cd "$WS" && PWD="$WS" "$WARD" run --json -C sub -- printenv PWD </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr")
	expect_json 'd["stdout"]' "\"$WS/sub\\n\""
}

t_text_and_base64() {
	wj --json-base64 -- printf 'a\377b\000c\342\202\254\n'
	expect_rc 0
	expect_json 'd["stdout"]' '"a\ufffdb\u0000c\u20ac\n"'
	expect_json 'd["stdout_base64"]' "\"$(printf 'a\377b\000c\342\202\254\n' | base64 -w0)\""
	wj -- printf 'x'
	expect_json '"stdout_base64" in d' false
	expect_json 'sorted(d)' '["cancelled", "denials", "denials_dropped", "duration_ms", "error", "exit_code", "guard_tripped", "limit", "limits", "output", "output_omitted_bytes", "sandbox", "sandbox_denied", "signal", "signal_name", "stderr", "stderr_omitted_bytes", "stdout", "stdout_omitted_bytes", "timed_out", "usage"]'
	expect_json 'sorted(d["sandbox"])' '["fallback_missing", "isolation", "landlock_abi", "network", "seccomp"]'
	# One object on one line, then a newline.
	[ "$(wc -l <"$T/.run/stdout")" = 1 ] || fail "the JSON is not one line"
}

t_cancel_sigterm() {
	local m wpid
	[ -n "$PY" ] || skip "python3 is needed to read the JSON"
	m=$(marker cancelled)
	# The marker only in the sleeper's command line (not ward's, nor the shell's):
	# once pgrep sees it, "started" has been written.
	echo "$m" >"$WS/marker"
	"$WARD" run --json -- sh -c "echo started; exec '$PROBE' sleep 1000 \$(cat marker)" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr" &
	wpid=$!
	BG_PIDS+=("$wpid")
	wait_for pgrep -f -- "$m" >/dev/null || fail "the command did not start"
	kill -TERM "$wpid"
	wait "$wpid"
	WRC=$?
	expect_json 'd["cancelled"]' true
	expect_json 'd["stdout"]' '"started\n"'
	expect_json '[d["signal_name"], d["exit_code"]]' '["SIGKILL", 137]'
	expect_rc 137
	expect_gone "$m"
}

# ------------------------------------------------------------------ denials

# Skips when this host gives ward no exact denial signal (then "denials" says
# "unavailable", which t_denials_unavailable_is_explicit checks).
need_exact_denials() {
	wj -- true
	[ "$(j 'd["denials"]')" != '"unavailable"' ] || skip "this host gives no exact denial signal"
}

t_denials_unavailable_is_explicit() {
	wj -- true
	if [ "$(j 'd["denials"]')" = '"unavailable"' ]; then
		expect_json 'd["sandbox_denied"]' null
	else
		expect_json '[d["denials"], d["sandbox_denied"]]' '[[], false]'
	fi
}

t_denial_write_outside() {
	need_exact_denials
	wj -- sh -c "echo x > '$OUT/f'"
	expect_json 'd["exit_code"] != 0' true
	expect_json 'd["sandbox_denied"]' true
	expect_json "[x['access'] in ('write', 'create') for x in d['denials'] if x['target'] == '$OUT/f']" '[true]'
	assert_absent "$OUT/f"
}

t_denial_protected() {
	need_exact_denials
	make_repo "$WS"
	wj -- sh -c 'echo evil > .git/hooks/pre-commit'
	expect_json 'd["sandbox_denied"]' true
	expect_json "any(x['target'] == '$WS/.git/hooks/pre-commit' for x in d['denials'])" true
	assert_absent "$WS/.git/hooks/pre-commit"
}

t_denial_read() {
	need_exact_denials
	printf 'secret\n' >"$WS/secret.txt"
	wj --deny-read "$WS/secret.txt" -- cat "$WS/secret.txt"
	expect_json 'd["sandbox_denied"]' true
	expect_json "any(x['target'] == '$WS/secret.txt' and x['access'] == 'read' for x in d['denials'])" true
	# The file's contents ("secret" alone on a line) must not have been read.
	expect_json '"secret\\n" in d["stdout"]' false
}

t_denial_connect() {
	need_exact_denials
	listen unix "$OUT/host.sock"
	wj -- "$PY" -c "
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect('$OUT/host.sock'); s.send(b'hello'); print('connected')
except OSError as e:
    print('refused', e.errno)"
	expect_json 'd["stdout"].split()[0]' '"refused"'
	expect_json 'd["sandbox_denied"]' true
	expect_json "any(x['target'] == '$OUT/host.sock' and x['access'] == 'connect' for x in d['denials'])" true
	expect_listener_silent
}

t_no_denial_own_failures() {
	need_exact_denials
	wj -- false
	expect_rc 1
	expect_json '[d["sandbox_denied"], d["denials"]]' '[false, []]'
	wj -- ls "$WS/nonexistent"
	expect_json '[d["sandbox_denied"], d["denials"], d["exit_code"] != 0]' '[false, [], true]'
	wj -- sh -c 'echo ok > inside.txt; cat inside.txt; rm inside.txt'
	expect_json '[d["sandbox_denied"], d["stdout"]]' '[false, "ok\n"]'
	if command -v cc >/dev/null; then
		printf 'int main(void) { return undefined_thing; }\n' >"$WS/bad.c"
		wj -- cc -o "$WS/bad" "$WS/bad.c"
		expect_json '[d["sandbox_denied"], d["denials"], d["exit_code"] != 0]' '[false, [], true]'
		expect_json '"undefined_thing" in d["stderr"]' true
	fi
}

# What the seccomp filter refuses is reported with the syscall (and its key argument),
# from the supervisor that answered it, with the errno the command got.
t_denial_seccomp() {
	need_exact_denials
	wj -- "$PROBE" socket-packet
	expect_json 'd["stdout"].split(":")[1].split()[0]' '"EPERM"'
	expect_json "[(x['access'], x['syscall'], x['error'], x['target']) for x in d['denials']]" \
		'[["socket", "socket", "EPERM", "AF_PACKET SOCK_RAW"]]'
	# A mount namespace: refused by ward's filter on every host ward isolates
	# (a host that refuses user namespaces itself answers before ward's filter).
	wj -- "$PROBE" unshare mount
	expect_json "[(x['access'], x['syscall'], x['error']) for x in d['denials']]" \
		'[["syscall", "unshare", "EPERM"]]'
	wj -- "$PROBE" tiocsti
	expect_json "any(x['syscall'] == 'ioctl' and x['target'] == 'TIOCSTI' for x in d['denials'])" true
	# Unless the host itself refuses io_uring (a container runtime's profile answers before
	# ward's filter, with its own errno, and ward never hears of the call).
	hp io-uring
	if [[ $LINE == "io-uring: ok"* ]]; then
		wj -- "$PROBE" io-uring
		expect_json "any(x['syscall'].startswith('io_uring') for x in d['denials'])" true
	fi
	# clone3 answers ENOSYS so that libc falls back to clone: not a denial.
	wj -- "$PROBE" clone3
	expect_json '[d["sandbox_denied"], d["denials"]]' '[false, []]'
}

# A tripped guard: the command was killed (SIGKILL), the creation was undone; no syscall
# failed, so syscall and error are null.
t_denial_guard() {
	need_exact_denials
	wj -- sh -c 'mkdir .codex; sleep 2'
	expect_json '[d["exit_code"], d["signal"], d["guard_tripped"], d["sandbox_denied"]]' '[137, 9, true, true]'
	expect_json "[(x['access'], x['syscall'], x['error'], x['target']) for x in d['denials']]" \
		"[[\"create\", null, null, \"$WS/.codex\"]]"
	assert_absent "$WS/.codex"
}

# A datagram to an address outside is unreachable in the sandbox's network namespace:
# reported with the address. Loopback datagrams are not.
t_denial_udp() {
	need_exact_denials
	wj -- "$PROBE" connect-udp 192.0.2.1 53
	expect_json "[(x['access'], x['error'], x['target']) for x in d['denials']]" \
		'[["sendto", "ENETUNREACH", "192.0.2.1:53"]]'
	wj -- "$PROBE" connect-udp 127.0.0.1 9
	expect_json '[d["sandbox_denied"], d["denials"]]' '[false, []]'
	wj -- "$PROBE" connect-udp ::1 9
	expect_json '[d["sandbox_denied"], d["denials"]]' '[false, []]'
}

# A write the host's own permissions refuse is the command's failure, not the sandbox's:
# unprivileged, writing /etc/passwd or a read-only file of one's own is not a denial; for
# root (who could write them outside) it is.
t_denial_own_permissions() {
	need_exact_denials
	printf 'orig\n' >"$OUT/mine"
	chmod 0444 "$OUT/mine"
	wj -- sh -c "echo x >> /etc/passwd; echo x > $OUT/mine; touch /etc/ward-it-new"
	if [ "$(id -u)" = 0 ]; then
		expect_json "sorted(x['target'] for x in d['denials'])" "[\"/etc/passwd\", \"/etc/ward-it-new\", \"$OUT/mine\"]"
	else
		expect_json '[d["sandbox_denied"], d["denials"]]' '[false, []]'
	fi
	# A file of one's own outside the roots, writable on the host: refused by the sandbox.
	chmod 0644 "$OUT/mine"
	wj -- sh -c "echo x > $OUT/mine"
	expect_json "[(x['access'], x['target']) for x in d['denials']]" "[[\"write\", \"$OUT/mine\"]]"
	assert_content "$OUT/mine" orig
}

tcase "caps: head and tail kept, middle dropped at 63, 64, 65, 200 bytes" t_caps_exact
tcase "caps: per-stream and aggregated caps and counts" t_caps_streams
tcase "a flood ($FLOOD bytes) keeps ward's RSS within the caps + 8 MiB" t_flood_rss
tcase "--timeout kills the tree (setsid escaper, stopped process), keeps output, 124" t_timeout_tree
tcase "a background holder of the pipes does not hang the run" t_background_holder
tcase "stdout and stderr interleaved in the order written" t_interleaving
tcase "exit codes: own, 128+N with the signal, 126, 127" t_exit_codes
tcase "stdin: /dev/null by default, --stdin FILE, --stdin -" t_stdin
tcase "environment policy: inherit, set, exclude, include_only, markers" t_env_policy
tcase "JSON: lossy text, exact base64, the documented fields" t_text_and_base64
tcase "SIGTERM cancels: partial result printed, sandbox killed" t_cancel_sigterm
tcase "denials: 'unavailable' is explicit, never invented" t_denials_unavailable_is_explicit
tcase "denials: a write outside the roots is reported" t_denial_write_outside
tcase "denials: a write to a protected path is reported" t_denial_protected
tcase "denials: a denied read is reported" t_denial_read
tcase "denials: a blocked connect to a host socket is reported" t_denial_connect
tcase "denials: none for false, ls of a missing file, a compiler error" t_no_denial_own_failures
tcase "denials: seccomp refusals with the syscall and its argument" t_denial_seccomp
tcase "denials: a datagram to an outside address, not to loopback" t_denial_udp
tcase "denials: a tripped guard is a kill and an undone creation" t_denial_guard
tcase "denials: none where the host's own permissions refuse" t_denial_own_permissions
finish
