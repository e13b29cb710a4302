#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2119,SC2016
#
# The command's process: capabilities, no_new_privs, seccomp, identity,
# namespaces, a new session, ward's init as PID 1, and the lifetime rules:
# nothing survives the command, nor ward's death; signals are forwarded.
. "$(dirname "$0")/lib.sh"

t_caps() {
	wp -- caps
	expect_ok
	local k
	for k in CapInh CapPrm CapEff CapBnd CapAmb; do
		assert_match "$LINE" " $k=0000000000000000( |$)" "$k"
	done
	assert_match "$LINE" " NoNewPrivs=1( |$)" "NoNewPrivs"
	assert_match "$LINE" " Seccomp=2( |$)" "Seccomp (filter mode)"
	# Securebits locked: a uid 0 inside regains nothing at execve and no setuid
	# fix-up applies (NOROOT, NO_SETUID_FIXUP, KEEP_CAPS, NO_CAP_AMBIENT_RAISE
	# and their locks: 0xef).
	if [ -n "$PY" ]; then
		w -- "$PY" -c 'import ctypes; print(ctypes.CDLL(None).prctl(27, 0, 0, 0, 0))'
		assert_eq "$LINE" 239 "securebits (PR_GET_SECUREBITS)"
	fi
	# Root on a host that refuses user namespaces: init, in the host's user
	# namespace, kept CAP_SYS_PTRACE alone (to read the command's memory) and
	# an empty bounding set.
	if [[ ${WARD_TEST_HOST:-} == userns-* ]]; then
		w -- sh -c 'grep -E "^(CapPrm|CapEff|CapBnd|CapInh|CapAmb|NoNewPrivs):" /proc/1/status | tr -d "\t"'
		assert_eq "$(tr '\n' ' ' <"$T/.run/stdout")" "CapInh:0000000000000000 CapPrm:0000000000080000 CapEff:0000000000080000 CapBnd:0000000000000000 CapAmb:0000000000000000 NoNewPrivs:1 " "init's privileges"
	fi
	# Through a shell and a setuid-root binary nothing is regained.
	if [ -u /usr/bin/su ] || [ -u /bin/su ]; then
		w -- sh -c "su -c id root </dev/null; grep CapEff /proc/self/status"
		grep -q 'uid=0' "$T/.run/stdout" && [ "$(id -u)" != 0 ] && fail "su gave root: $(out)"
		grep -q 'CapEff:[[:space:]]*0000000000000000' "$T/.run/stdout" || fail "capabilities inside a shell: $(out)"
	fi
	return 0
}

t_identity() {
	wp -- whoami
	expect_ok
	assert_match "$LINE" "^whoami: ok uid=$(id -u) euid=$(id -u) gid=$(id -g) egid=$(id -g)" "identity inside"
	printf 'mine\n' >"$WS/f"
	wp -- stat "$WS/f"
	expect_ok
	assert_match "$LINE" " uid=$(id -u) gid=$(id -g) " "owner of a workspace file inside"
	wp -- write "$WS/g"
	assert_eq "$(stat -c %u:%g "$WS/g")" "$(id -u):$(id -g)" "owner of a file created inside, on the host"
}

t_namespaces() {
	local n host own="user mnt pid ipc uts net"
	wp -- ns
	expect_ok
	# Root on a host that refuses user namespaces: the others, created directly.
	if [[ ${WARD_TEST_HOST:-} == userns-* ]]; then
		own="mnt pid ipc uts net"
		host=$(readlink /proc/self/ns/user | sed 's/[][]/\\&/g')
		assert_match "$LINE" " user=$host( |\$)" "user namespace (the host's)"
	fi
	for n in $own; do
		# The brackets of "net:[4026531840]" escaped: the name is matched literally.
		host=$(readlink "/proc/self/ns/$n" | sed 's/[][]/\\&/g')
		assert_no_match "$LINE" " $n=$host( |\$)" "$n namespace"
		assert_match "$LINE" " $n=$n:\\[" "$n namespace"
	done
}

t_session() {
	wp -- sid
	expect_ok
	local sid pid pgrp ppid
	sid=$(sed -n 's/.* sid=\([0-9]*\).*/\1/p' <<<"$LINE")
	pid=$(sed -n 's/.* pid=\([0-9]*\).*/\1/p' <<<"$LINE")
	pgrp=$(sed -n 's/.* pgrp=\([0-9]*\).*/\1/p' <<<"$LINE")
	ppid=$(sed -n 's/.* ppid=\([0-9]*\).*/\1/p' <<<"$LINE")
	assert_eq "$sid" "$pid" "the command leads a session of its own"
	assert_eq "$pgrp" "$pid" "and its process group"
	assert_eq "$ppid" 1 "its parent is the sandbox's PID 1"
	assert_no_match "$sid" "^$(ps -o sid= $$ | tr -d ' ')$" "session"
}

t_pid1_init() {
	local w1 zombies
	if [ "$HOST_PROC" = 1 ]; then
		# The container's /proc counts in the container's pid namespace: PID 1 there is
		# the container's; the sandbox's init is the command's parent.
		w -- sh -c "p=\$(awk '/^PPid:/ {print \$2}' /proc/self/status)
			exec '$PROBE' cmdline \$(awk '/^PPid:/ {print \$2}' /proc/\$p/status)"
	else
		wp -- cmdline 1
	fi
	expect_ok
	w1=$(cut -d' ' -f3 <<<"$LINE")
	assert_eq "$(basename "$w1")" "$(basename "$WARD")" "PID 1's command line starts with ward"
	# Only the sandbox's processes are visible (with the container's /proc, what ward
	# says it lost).
	if [ "$HOST_PROC" != 1 ]; then
		w -- sh -c 'ls -d /proc/[0-9]* | wc -l'
		[ "$LINE" -le 6 ] 2>/dev/null || fail "processes visible inside: $LINE"
	fi
	# PID 1 cannot be killed by the command.
	w -- sh -c "'$PROBE' kill 1 KILL; sleep 0.1; echo alive"
	assert_stdout_has alive
	# Orphans are reaped: no zombies pile up. With the container's /proc, where other
	# sandboxes' processes show too, only those of this sandbox's init count.
	zombies='grep -l "^State:.*Z" /proc/[0-9]*/status 2>/dev/null | wc -l'
	[ "$HOST_PROC" = 1 ] && zombies='p=$(awk "/^PPid:/ {print \$2}" /proc/self/status)
		i=$(awk "/^PPid:/ {print \$2}" /proc/$p/status)
		for f in /proc/[0-9]*/status; do
			awk -v i="$i" "/^State:.*Z/ {z=1} /^PPid:/ {pp=\$2} END {exit !(z && pp == i)}" "$f" 2>/dev/null && echo "$f"
		done | wc -l'
	w -- sh -c "for i in 1 2 3 4 5; do (sh -c 'exit 0' &) ; done; sleep 0.3; $zombies"
	assert_eq "$(tail -n 1 "$T/.run/stdout")" 0 "zombies inside"
}

t_nothing_left() {
	local m1 m2 m3
	m1=$(marker setsid)
	m2=$(marker escaper)
	m3=$(marker nohup)
	w -- sh -c "setsid sh -c '\"$PROBE\" sleep 1000 $m1 &'; nohup '$PROBE' sleep 1000 $m3 >/dev/null 2>&1 &"
	expect_rc 0
	expect_gone "$m1"
	expect_gone "$m3"
	wp -- spawn-escaper "$WS/escaper.pid" "$m2"
	expect_ok
	assert_exists "$WS/escaper.pid"
	expect_gone "$m2"
	# Double fork plus a stopped process.
	w -- sh -c "('$PROBE' sleep 1000 $m1 & kill -STOP \$!) &"
	expect_gone "$m1"
}

t_ward_killed() {
	ward_killed_leaves_nothing "$WARD" run --
}

# Starts ward in the background with every signal at its default disposition
# (env --default-signal): a non-interactive shell starts background jobs with
# SIGINT and SIGQUIT ignored, and so may whatever started the test suite (nohup,
# a CI runner); ward's command would inherit that, as exec(2) passes ignored
# signals on. Its pid in WPID.
ward_bg() {
	env --default-signal "$WARD" run "$@" </dev/null >/dev/null 2>&1 &
	WPID=$!
	BG_PIDS+=("$WPID")
}

t_signal_forwarding() {
	local m rc sig
	for sig in TERM INT HUP; do
		m=$(marker "sig-$sig")
		ward_bg -- "$PROBE" sleep 30 "$m"
		wait_for pgrep -f -- "$m" >/dev/null || fail "the sandboxed sleeper did not start"
		kill -"$sig" "$WPID"
		wait "$WPID"
		rc=$?
		assert_eq "$rc" "$((128 + $(kill -l "$sig")))" "exit status after SIG$sig"
		expect_gone "$m"
	done
	# A command that handles the signal decides its own status.
	ward_bg -- sh -c 'trap "exit 42" TERM; : > "$0"; sleep 30 & wait' "$WS/ready"
	wait_for test -f "$WS/ready" || fail "the trapping shell did not start"
	kill -TERM "$WPID"
	wait "$WPID"
	assert_eq "$?" 42 "exit status of a command trapping SIGTERM"
}

# A caller that ignores a signal passes that on, as exec(2) does (nohup ward run
# ...): the command starts with it ignored; ward still forwards what it receives.
t_ignored_signals_inherited() {
	local m
	m=$(marker sig-ignored)
	(
		trap '' INT
		exec "$WARD" run -- sh -c "grep '^SigIgn:' /proc/self/status >'$WS/sigign.tmp'; mv '$WS/sigign.tmp' '$WS/sigign'; exec '$PROBE' sleep 30 \$0" "$m"
	) </dev/null >/dev/null 2>&1 &
	WPID=$!
	BG_PIDS+=("$WPID")
	wait_for test -s "$WS/sigign" || fail "the sandboxed shell did not start"
	wait_for pgrep -f -- "$m" >/dev/null || fail "the sandboxed sleeper did not start"
	# SIGINT is bit 2 of the mask (signal 2): ignored inside.
	local ign
	ign=$(awk '{print $2}' "$WS/sigign")
	[ $((0x$ign & 2)) = 2 ] || fail "SIGINT is not ignored inside: SigIgn $ign"
	kill -INT "$WPID"
	sleep 0.3
	kill -0 "$WPID" 2>/dev/null || fail "ward ended on a SIGINT its command ignores"
	kill -TERM "$WPID"
	wait "$WPID"
	assert_eq "$?" 143 "exit status after SIGTERM"
	expect_gone "$m"
}

t_timeout() {
	local m start end
	m=$(marker timeout)
	start=$(date +%s%N)
	w --timeout 0.5 -- sh -c "setsid '$PROBE' sleep 1000 $m & '$PROBE' sleep 30"
	end=$(date +%s%N)
	expect_rc 124
	[ $(((end - start) / 1000000)) -lt 5000 ] || fail "the timeout took $(((end - start) / 1000000)) ms"
	expect_gone "$m"
}

t_stdio() {
	LAST_CMD="printf | ward run -- cat"
	local got
	got=$(printf 'line1\nline2\n' | timeout 20 "$WARD" run -- cat)
	assert_eq "$got" "$(printf 'line1\nline2')" "stdin through a pipe"
	head -c 3000000 /dev/urandom >"$T/big"
	got=$(timeout 20 "$WARD" run -- sha256sum <"$T/big" | cut -d' ' -f1)
	assert_eq "$got" "$(sha256sum <"$T/big" | cut -d' ' -f1)" "3 MB through stdin"
	got=$(timeout 20 "$WARD" run -- sh -c 'echo out; echo err >&2' 2>"$T/err2")
	assert_eq "$got" out "stdout"
	if [ "$HOST_PROC" = 1 ]; then
		sed -i '/^ward: warning: running in every namespace but without a private \/proc/d' "$T/err2"
	fi
	assert_eq "$(cat "$T/err2")" err "stderr"
	# stdout to a file (append mode kept), stdin from a file.
	printf 'from-file\n' >"$T/in"
	timeout 20 "$WARD" run -- cat <"$T/in" >>"$T/outfile"
	timeout 20 "$WARD" run -- cat <"$T/in" >>"$T/outfile"
	assert_eq "$(cat "$T/outfile")" "$(printf 'from-file\nfrom-file')" "stdout appended to a file"
	# Closed stdout: the command sees EPIPE/SIGPIPE, ward does not hang.
	timeout 20 "$WARD" run -- sh -c 'yes | head -c 100000000' | head -c 10 >/dev/null
	[ "${PIPESTATUS[0]}" != 124 ] || fail "ward hung writing to a closed pipe"
}

t_env() {
	WARD_IT_VAR=hello wp -- env WARD_IT_VAR
	expect_ok
	assert_eq "$LINE" "env: ok hello" "environment passed through"
	w -C "$WS" -- pwd
	assert_eq "$LINE" "$(cd "$WS" && pwd -P)" "working directory"
	mkdir "$WS/sub"
	cd "$WS/sub" || fail "cd"
	w -- pwd
	assert_eq "$LINE" "$(pwd -P)" "working directory inherited"
}

tcase "no capabilities, no_new_privs, seccomp filter mode" t_caps
tcase "the caller's uid and gid inside and on created files" t_identity
tcase "user, mount, pid, ipc, uts, net namespaces of its own" t_namespaces
tcase "the command leads a new session; its parent is PID 1" t_session
tcase "PID 1 is ward's init: only sandbox processes, reaps orphans" t_pid1_init
tcase "nothing is left running after the command (setsid, nohup, double fork)" t_nothing_left
tcase "nothing is left running after ward is SIGKILLed" t_ward_killed
tcase "signals are forwarded; 128+N on death by signal" t_signal_forwarding
tcase "signals the caller ignores stay ignored in the command" t_ignored_signals_inherited
tcase "--timeout kills everything and exits 124" t_timeout
tcase "stdin, stdout and stderr pass straight through" t_stdio
tcase "environment and working directory" t_env
finish
