#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2119,SC2016
#
# A container that hides parts of its /proc (Docker's, podman's and
# Kubernetes' default procMount), simulated by hardened-wrapper --proc-masked:
# the kernel refuses every sandbox a fresh /proc there. ward doctor predicts
# it; ward run keeps the container's /proc and every other layer (user, mount,
# pid, ipc, uts and network namespaces, Landlock, seccomp), says in one line
# what that costs, keeps the container's processes out of reach, and refuses
# with --require-isolation or without Landlock.
export WARD_TEST_HOST=proc-masked
. "$(dirname "$0")/lib.sh"

need_masked() {
	[ -x "$HARDENED" ] || skip "hardened-wrapper is not built ($HARDENED)"
	[ "$(id -u)" = 0 ] || userns_works || skip "user namespaces are unavailable here"
	"$PROBE" landlock-abi >/dev/null || skip "Landlock is not enabled in this kernel"
	# A machine whose own /proc is locked to this user (a container's) cannot host the simulation.
	if "$HARDENED" --proc-masked true 2>&1 | grep -q "cannot mask parts of /proc"; then
		skip_env "the masked /proc cannot be simulated for this user on this machine"
	fi
	# The simulation holds: a fresh procfs is refused beneath it.
	"$HARDENED" --proc-masked unshare -Urpf --mount-proc true 2>/dev/null &&
		fail "hardened-wrapper --proc-masked does not make the kernel refuse a fresh /proc"
	return 0
}

# Runs ward itself (not `ward run`) on the simulated host: WARD is the wrapper.
wd() {
	LAST_CMD="ward $*"
	timeout -k 3 "$WARD_TEST_TIMEOUT" "$WARD" "$@" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	LINE=$(head -n 1 "$T/.run/stdout")
}

t_doctor() {
	need_masked
	wd doctor
	expect_rc 1
	grep -q '^  --  private /proc  *refused: this container masks parts of its /proc' "$T/.run/stdout" ||
		fail "doctor does not name the refused /proc"
	grep -q 'hint: .*systempaths=unconfined.*procMount: Unmasked' "$T/.run/stdout" ||
		fail "doctor gives no hint for a private /proc"
	grep -q 'isolation without a private /proc' "$T/.run/stdout" || fail "doctor's summary"
	wd doctor --json
	expect_rc 1
	[ -n "$PY" ] || return 0
	"$PY" - "$T/.run/stdout" <<'EOF' || fail "doctor --json: $(out)"
import json, sys
d = json.load(open(sys.argv[1]))
f = d["features"]["private /proc"]
assert f["ok"] is False and "systempaths=unconfined" in f["hint"], f
assert d["isolation"] == "namespaces without a private /proc", d["isolation"]
assert any("a private /proc" in m for m in d["missing_guarantees"]), d["missing_guarantees"]
EOF
}

t_runs_with_namespaces() {
	need_masked
	local n host
	wp -- ns
	expect_ok
	for n in user mnt pid ipc uts net; do
		host=$(readlink "/proc/self/ns/$n" | sed 's/[][]/\\&/g')
		assert_no_match "$LINE" " $n=$host( |\$)" "$n namespace"
	done
	# One line on stderr, naming what is lost (w removes it: run the probe again raw).
	timeout 20 "$WARD" run -- "$PROBE" write "$WS/f" yes </dev/null >/dev/null 2>"$T/err"
	assert_eq "$(wc -l <"$T/err")" 1 "lines on stderr"
	grep -q "^ward: warning: running in every namespace but without a private /proc" "$T/err" ||
		fail "the warning: $(cat "$T/err")"
	assert_content "$WS/f" yes
	# Writes outside the roots are refused by the mounts as ever.
	wp -- write "$OUT/no"
	expect_denied write EROFS
	assert_absent "$OUT/no"
	# The captured form says it too.
	w --json -- true
	expect_rc 0
	[ -n "$PY" ] || return 0
	"$PY" - "$T/.run/stdout" <<'EOF' || fail "--json: $(out)"
import json, sys
s = json.load(open(sys.argv[1]))["sandbox"]
assert s["isolation"] == "namespaces", s
assert s["fallback_missing"].startswith("a private /proc"), s
EOF
}

t_refusals() {
	need_masked
	w --require-isolation -- "$PROBE" write "$WS/ran"
	expect_rc 125
	grep -q "cannot mount a fresh '/proc'.*hint: this container masks parts of its /proc.*systempaths=unconfined" \
		"$T/.run/stderr" || fail "the refusal: $(err)"
	assert_absent "$WS/ran"
	# Without Landlock the container's /proc would open ward's own memory: refused.
	printf '%s\n%s\n' "$(head -n 1 "$WARD.conf")" "--proc-masked --no-landlock" >"$T/wrapper.conf"
	ln -s "$HARDENED" "$T/ward"
	mv "$T/wrapper.conf" "$T/ward.conf"
	LAST_CMD="ward run (no Landlock) -- probe write"
	timeout 20 "$T/ward" run -- "$PROBE" write "$WS/ran" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	grep -q "without Landlock its /proc cannot be kept safely" "$T/.run/stderr" || fail "the refusal: $(err)"
	assert_absent "$WS/ran"
}

t_container_processes_out_of_reach() {
	need_masked
	local m f
	m=$(marker victim)
	start_host_sleeper "$m"
	wait_for pgrep -f -- "$m" >/dev/null || fail "the host sleeper did not start"
	# Visible, as the warning says...
	wp -- stat "/proc/$HOST_PID"
	expect_ok
	# ...but not its memory, environment, descriptors or directory (Landlock),
	for f in environ mem maps fd/0; do
		wp -- read "/proc/$HOST_PID/$f"
		expect_denied read EACCES EPERM
	done
	wp -- readlink "/proc/$HOST_PID/cwd"
	expect_denied readlink EACCES EPERM
	# and not a signal: its pid means nothing in the sandbox's pid namespace, kill(-1)
	# reaches only the sandbox, and the sandbox's init is out of reach too.
	wp -- kill "$HOST_PID" KILL
	expect_denied kill
	w -- sh -c "'$PROBE' kill -1 KILL; sleep 0.5"
	kill -0 "$HOST_PID" 2>/dev/null || fail "the container's process died"
	w -- sh -c "'$PROBE' kill 1 KILL; sleep 0.1; echo alive"
	assert_stdout_has alive
	# Nothing is left running after the command.
	m=$(marker left)
	w -- sh -c "setsid '$PROBE' sleep 1000 $m >/dev/null 2>&1 &"
	expect_gone "$m"
}

# The seccomp supervisor (in init) reads the command's directory and memory
# through /proc, which now counts in the container's pid namespace: a relative
# path must still be the command's.
t_supervisor_finds_the_command() {
	need_masked
	mkdir -p "$OUT/d"
	listen unix "$OUT/d/host.sock"
	w --allow-unix-socket "$OUT/d/host.sock" -- sh -c "cd '$OUT/d' && exec '$PROBE' connect-unix host.sock"
	expect_ok connect-unix
	expect_listener_reached
	w --json -C "$WS" -- sh -c "cd '$OUT/d' && exec '$PROBE' write rel"
	assert_absent "$OUT/d/rel"
	[ -n "$PY" ] || return 0
	"$PY" - "$T/.run/stdout" "$OUT/d/rel" <<'EOF' || fail "the denial: $(out)"
import json, sys
d = json.load(open(sys.argv[1]))["denials"]
assert any(x["target"] == sys.argv[2] for x in d), d
EOF
	# From a thread that is not its process's first.
	"$PY" -c 'import threading' 2>/dev/null || return 0
	w --allow-unix-socket "$OUT/d/host.sock" -- sh -c "cd '$OUT/d' && exec '$PY' -c '
import socket, threading
def f():
    s = socket.socket(socket.AF_UNIX)
    s.connect(\"host.sock\")
    print(\"thread: ok\")
t = threading.Thread(target=f); t.start(); t.join()'"
	assert_stdout_has "thread: ok"
	# The same before Linux 6.9 (no pidfd for such a thread: ward finds its thread group).
	printf '%s\n%s\n' "$(head -n 1 "$WARD.conf")" "--proc-masked --no-pidfd-thread" >"$T/ward.conf"
	ln -s "$HARDENED" "$T/ward"
	LAST_CMD="ward run (no PIDFD_THREAD) -- python3 thread connect"
	timeout 20 "$T/ward" run --allow-unix-socket "$OUT/d/host.sock" -- sh -c "cd '$OUT/d' && exec '$PY' -c '
import socket, threading
def f():
    s = socket.socket(socket.AF_UNIX)
    s.connect(\"host.sock\")
    print(\"thread: ok\")
t = threading.Thread(target=f); t.start(); t.join()'" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	assert_stdout_has "thread: ok"
}

tcase "ward doctor predicts the refused /proc and says how to get one" t_doctor
tcase "runs in every namespace with the container's /proc, one warning line" t_runs_with_namespaces
tcase "--require-isolation and a kernel without Landlock refuse instead" t_refusals
tcase "the container's processes are visible but out of reach" t_container_processes_out_of_reach
tcase "the supervisor still resolves the command's relative paths" t_supervisor_finds_the_command
finish
