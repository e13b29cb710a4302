# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Shared harness of the integration tests (tests/integration/test-*.sh), sourced
# by each. It produces TAP: one line per test case, each case a shell function
# run in a subshell, in a scratch directory of its own:
#
#   tcase "writes outside the roots are refused" t_outside_write
#   ...
#   finish
#
# Inside a case the current directory is the workspace "$WS" (a writable root
# when ward runs there), "$OUT" is a directory outside every writable root and
# "$T" the case's scratch directory. The first failed assertion ends the case
# and becomes the diagnostics of its "not ok" line. Every assertion that a
# sandboxed operation was refused also checks that the probe really ran (ward
# itself did not fail), so no case can pass because nothing happened.
#
# Environment: WARD, PROBE, WARD_HARDENED_WRAPPER (test binaries; defaults in
# the build directory), WARD_SRC (the source tree), WARD_TEST_TMPDIR (where
# scratch directories go; must not be inside /tmp, which is a writable root by
# default; default /var/tmp), WARD_MUST_WORK=1 (a skip counts as a failure),
# WARD_TEST_ONLY (run only the cases whose function name matches this regex).

set -u
export LC_ALL=C
umask 022

# The cases must not depend on how the suite was started: a parent that ignores
# SIGINT or SIGQUIT (nohup, a background job of a non-interactive shell, some CI
# runners) would pass that on to every ward and command started here, and a
# shell cannot undo a disposition ignored at its entry. So the script runs again
# with every signal at its default (coreutils' env --default-signal), once.
if [ -z "${WARD_TEST_SIGNALS_RESET:-}" ]; then
	WARD_TEST_SIGNALS_RESET=1 exec env --default-signal bash "$0" "$@"
fi

WARD_SRC=${WARD_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
WARD=${WARD:-$WARD_SRC/build/ward}
PROBE=${PROBE:-$WARD_SRC/build/tests/probe}
HARDENED=${WARD_HARDENED_WRAPPER:-$(dirname "$PROBE")/hardened-wrapper}
MUST_WORK=${WARD_MUST_WORK:-0}
# Upper bound for one ward invocation; every case is a handful of them.
WARD_TEST_TIMEOUT=${WARD_TEST_TIMEOUT:-30}
export WARD PROBE WARD_SRC

tap_n=0
tap_failed=0

tap_ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1"; }
tap_not_ok() {
	local name=$1
	shift
	tap_n=$((tap_n + 1))
	tap_failed=$((tap_failed + 1))
	echo "not ok $tap_n - $name"
	local l
	for l in "$@"; do
		printf '%s\n' "$l" | sed 's/^/# /'
	done
}
tap_skip() {
	if [ "$MUST_WORK" = 1 ]; then
		tap_not_ok "$1" "skipped, but WARD_MUST_WORK=1: $2"
	else
		tap_n=$((tap_n + 1))
		echo "ok $tap_n - $1 # SKIP $2"
	fi
}

bail_out() {
	echo "Bail out! $*"
	exit 1
}

for _bin in "$WARD" "$PROBE"; do
	if [ ! -x "$_bin" ]; then
		if [ "$MUST_WORK" = 1 ]; then
			bail_out "$_bin is missing (build first)"
		fi
		echo "1..0 # SKIP $_bin is missing (build first)"
		exit 0
	fi
done
unset _bin

# Scratch space, outside /tmp: /tmp is a writable root by default, and the cases
# need places that are *not* writable inside the sandbox.
_tmp=${WARD_TEST_TMPDIR:-/var/tmp}
case "$(cd "$_tmp" 2>/dev/null && pwd -P)/" in
/tmp/*) _tmp=/var/tmp ;;
esac
BASE=$(mktemp -d "$_tmp/ward-it.XXXXXX") || bail_out "cannot create a scratch directory in $_tmp"
unset _tmp
chmod 755 "$BASE"

# WARD_TEST_HOST runs the cases on a simulated hardened host, through
# hardened-wrapper started as "ward" (a symlink; it execs the real ward, so the
# pid, the name and the environment stay ward's): "userns-refused" refuses user namespaces only (root then
# builds the sandbox without one), "userns-landlock-refused" Landlock too, "proc-masked" is a
# container that hides parts of its /proc (ward keeps the container's /proc: HOST_PROC=1).
HOST_PROC=0
case "${WARD_TEST_HOST:-}" in
"") ;;
proc-masked)
	[ -x "$HARDENED" ] || bail_out "WARD_TEST_HOST needs hardened-wrapper ($HARDENED)"
	mkdir -p "$BASE/bin"
	ln -s "$HARDENED" "$BASE/bin/ward"
	printf '%s\n%s\n' "$WARD" "--proc-masked" >"$BASE/bin/ward.conf"
	WARD=$BASE/bin/ward
	HOST_PROC=1
	;;
userns-refused | userns-landlock-refused)
	[ -x "$HARDENED" ] || bail_out "WARD_TEST_HOST needs hardened-wrapper ($HARDENED)"
	mkdir -p "$BASE/bin"
	ln -s "$HARDENED" "$BASE/bin/ward"
	printf '%s\n%s\n' "$WARD" "--userns-only$([ "$WARD_TEST_HOST" = userns-landlock-refused ] &&
		echo " --no-landlock")" >"$BASE/bin/ward.conf"
	WARD=$BASE/bin/ward
	;;
*) bail_out "unknown WARD_TEST_HOST '$WARD_TEST_HOST'" ;;
esac
# A real container that masks its /proc (tests/container/run-isolation.sh): ward says so.
if [ -z "${WARD_TEST_HOST:-}" ] && "$WARD" doctor 2>/dev/null | grep -q '^  --  private /proc .*keep the container'; then
	HOST_PROC=1
fi
cleanup_base() {
	chmod -R u+rwX "$BASE" 2>/dev/null
	rm -rf "$BASE"
}
trap cleanup_base EXIT

# A predictable environment for the commands: no $TMPDIR root unless a case
# sets one, a home directory that is not a writable root (ward's scan cache
# goes to its .cache), and git that needs no configuration.
unset TMPDIR XDG_RUNTIME_DIR XDG_CACHE_HOME
export HOME=$BASE/home
mkdir -p "$HOME"
# ward's journal of changes (ward mcp and ward serve record by default) stays out of
# the home, which some cases look into.
export WARD_CHANGES_DIR=$BASE/changes
export GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=ward-test GIT_AUTHOR_EMAIL=ward-test@example.invalid
export GIT_COMMITTER_NAME=ward-test GIT_COMMITTER_EMAIL=ward-test@example.invalid
export PYTHONDONTWRITEBYTECODE=1
PY=$(command -v python3 || true)

# ------------------------------------------------------------------ cases

# tcase NAME FUNCTION: runs FUNCTION in a subshell inside a fresh scratch dir.
tcase() {
	local name=$1 fn=$2 rc
	if [ -n "${WARD_TEST_ONLY:-}" ] && ! [[ $fn =~ $WARD_TEST_ONLY ]]; then
		return 0
	fi
	T=$(mktemp -d "$BASE/$fn.XXXXXX")
	chmod 755 "$T"
	WS=$T/ws
	OUT=$T/outside
	mkdir -p "$WS" "$OUT" "$T/.run"
	(
		cd "$WS" || exit 1
		trap _case_cleanup EXIT
		"$fn"
	) >"$T/.run/log" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		tap_ok "$name"
	elif [ "$rc" = 77 ]; then
		tap_skip "$name" "$(cat "$T/.run/skip" 2>/dev/null)"
	elif [ "$rc" = 78 ]; then
		tap_n=$((tap_n + 1))
		echo "ok $tap_n - $name # SKIP $(cat "$T/.run/skip" 2>/dev/null)"
	elif [ -s "$T/.run/fail" ]; then
		tap_not_ok "$name" "$(head -n 40 "$T/.run/fail")"
	else
		tap_not_ok "$name" "exit status $rc" "$(tail -n 20 "$T/.run/log")"
	fi
}

# Background processes a case started; killed when the case ends.
BG_PIDS=()
_case_cleanup() {
	local p
	for p in "${BG_PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	return 0
}

finish() {
	echo "1..$tap_n"
	[ "$tap_failed" = 0 ]
	exit $?
}

# fail MESSAGE...: ends the case as failed, with MESSAGE and the last run's output.
fail() {
	{
		printf '%s\n' "$@"
		if [ -f "$T/.run/stdout" ]; then
			echo "last command: $(head -c 300 <<<"${LAST_CMD:-?}") (exit ${WRC:-?})"
			echo "stdout: $(head -c 1000 "$T/.run/stdout")"
			echo "stderr: $(head -c 1000 "$T/.run/stderr")"
		fi
	} >>"$T/.run/fail"
	exit 1
}

# skip REASON: ends the case as skipped (a failure under WARD_MUST_WORK=1).
skip() {
	printf '%s' "$*" >"$T/.run/skip"
	exit 77
}

# skip_env REASON: skipped for what the test machine lacks, not the kernel (a
# container's overlay root): never a failure, even under WARD_MUST_WORK=1.
skip_env() {
	printf '%s' "$*" >"$T/.run/skip"
	exit 78
}

need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "$c is not installed"
	done
}

# ------------------------------------------------------------------ running ward

# w [ward-run-options] [--] COMMAND...: `ward run`, stdin from /dev/null, output to
# $T/.run/{stdout,stderr}, status in WRC, first stdout line in LINE.
w() {
	LAST_CMD="ward run $*"
	timeout -k 3 "$WARD_TEST_TIMEOUT" "$WARD" run "$@" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	# The line saying what the container's /proc costs (test-fallback.sh checks it); the
	# rest is the command's own.
	if [ "$HOST_PROC" = 1 ]; then
		sed -i '/^ward: warning: running in every namespace but without a private \/proc/d' "$T/.run/stderr"
	fi
	LINE=$(head -n 1 "$T/.run/stdout")
}

# wp [ward-run-options] -- OP [ARG...]: the probe in the sandbox.
wp() {
	local opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	w "${opts[@]}" -- "$PROBE" "$@"
}

# Runs the probe outside the sandbox (to show the operation works on the host).
hp() {
	LAST_CMD="probe $*"
	"$PROBE" "$@" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	LINE=$(head -n 1 "$T/.run/stdout")
}

out() { cat "$T/.run/stdout"; }
err() { cat "$T/.run/stderr"; }

# The probe's line for OP in the last output.
probe_line() { grep -m 1 -- "^$1: " "$T/.run/stdout"; }

# expect_ok [OP]: the probe ran and its operation succeeded.
expect_ok() {
	local op=${1:-${LINE%%:*}} l
	l=$(probe_line "$op") || fail "no '$op:' line from the probe"
	[[ $l == "$op: ok"* ]] || fail "expected '$op: ok', got '$l'"
	if [ $# -eq 0 ] && [ "$WRC" != 0 ]; then
		fail "expected exit 0, got $WRC"
	fi
}

# expect_denied OP [ERRNO...]: the probe ran and the operation failed (with one of
# the given errno names, when given). Ward's own failure (125) does not count.
expect_denied() {
	local op=$1 l e st
	shift
	l=$(probe_line "$op") || fail "no '$op:' line from the probe (did it run?)"
	st=${l#"$op: "}
	st=${st%% *}
	[[ $st == E* ]] || fail "expected '$op' to be refused, got '$l'"
	if [ $# -gt 0 ]; then
		for e in "$@"; do
			[ "$st" = "$e" ] && return 0
		done
		fail "expected '$op' to fail with one of: $*; got '$l'"
	fi
}

# expect_rc N: ward's exit status.
expect_rc() {
	[ "$WRC" = "$1" ] || fail "expected exit status $1, got $WRC"
}

# expect_one_line_error: stderr is exactly one line, "ward: ...".
expect_one_line_error() {
	[ "$(wc -l <"$T/.run/stderr")" = 1 ] && grep -q '^ward: ' "$T/.run/stderr" ||
		fail "expected exactly one 'ward: ' line on stderr"
}

# ------------------------------------------------------------------ assertions on the host

assert_eq() { # assert_eq GOT WANT WHAT
	[ "$1" = "$2" ] || fail "$3: got '$1', want '$2'"
}
assert_match() { # assert_match STRING REGEX WHAT
	[[ $1 =~ $2 ]] || fail "$3: '$1' does not match /$2/"
}
assert_no_match() {
	! [[ $1 =~ $2 ]] || fail "$3: '$1' matches /$2/"
}
assert_absent() {
	local p
	for p in "$@"; do
		if [ -e "$p" ] || [ -L "$p" ]; then
			fail "$p exists on the host: $(ls -ld "$p")"
		fi
	done
}
assert_exists() {
	local p
	for p in "$@"; do
		[ -e "$p" ] || fail "$p is missing on the host"
	done
}
assert_content() { # assert_content FILE CONTENT
	local got
	[ -f "$1" ] || fail "$1 is missing on the host"
	got=$(cat "$1")
	[ "$got" = "$2" ] || fail "$1 on the host: got '$got', want '$2'"
}
assert_stdout_has() { # assert_stdout_has FIXED-STRING
	grep -q -F -- "$1" "$T/.run/stdout" || fail "stdout lacks '$1'"
}
assert_stderr_has() {
	grep -q -F -- "$1" "$T/.run/stderr" || fail "stderr lacks '$1'"
}

# snapshot DIR...: a listing of everything under DIR with types, modes, sizes and
# modification times (a directory's mtime changes when an entry is created and
# removed again, so a short-lived placeholder shows too).
snapshot() {
	find "$@" -printf '%y %m %s %T@ %p\n' 2>/dev/null | sort
}

# ------------------------------------------------------------------ processes

# marker NAME: a unique string to find processes by (pgrep -f).
marker() { echo "ward-it-$$-$RANDOM$RANDOM-$1"; }

# ward_killed_leaves_nothing WARD-COMMAND... --: runs a sandboxed sleeper and a setsid
# one through the given ward command line, SIGKILLs ward (the first process it
# started: a wrapper must exec ward), and expects both sleepers gone.
ward_killed_leaves_nothing() {
	local m1 m2 wpid
	m1=$(marker killed-a)
	m2=$(marker killed-b)
	"$@" sh -c "setsid '$PROBE' sleep 1000 $m1 & '$PROBE' sleep 1000 $m2" </dev/null >/dev/null 2>&1 &
	wpid=$!
	BG_PIDS+=("$wpid")
	wait_for pgrep -f -- "$m1" >/dev/null || fail "the sandboxed sleeper did not start"
	wait_for pgrep -f -- "$m2" >/dev/null || fail "the sandboxed sleeper did not start"
	kill -9 "$wpid"
	wait "$wpid" 2>/dev/null
	expect_gone "$m1"
	expect_gone "$m2"
}

# gone MARKER: true when no process with MARKER in its command line exists,
# waiting up to 3 s for dying processes to be reaped.
gone() {
	local i
	for i in $(seq 1 30); do
		pgrep -f -- "$1" >/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# expect_gone MARKER: fails (after killing them) when such processes remain.
expect_gone() {
	local pids
	if ! gone "$1"; then
		pids=$(pgrep -f -- "$1" | tr '\n' ' ')
		local p
		for p in $pids; do
			kill -9 "$p" 2>/dev/null
		done
		fail "processes left running: $pids ($1)"
	fi
}

# sanitized: true when ward was built with AddressSanitizer, whose shadow memory and
# quarantine of freed blocks make a limit on the server's peak RSS meaningless (the
# cases check what the server answered then, not what it held).
sanitized() {
	[ -n "${ASAN_OPTIONS:-}" ] || grep -qa AddressSanitizer "$WARD" 2>/dev/null
}

# wait_for COMMAND...: polls up to 5 s for COMMAND to succeed.
wait_for() {
	local i
	for i in $(seq 1 100); do
		"$@" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# A host process to attack: `probe sleep 100 MARKER`; its pid in HOST_PID.
start_host_sleeper() {
	"$PROBE" sleep 100 "$1" >/dev/null 2>&1 &
	HOST_PID=$!
	BG_PIDS+=("$HOST_PID")
}

# ------------------------------------------------------------------ host servers

# listen KIND ADDR: starts a server on the host that records every connection or
# datagram it receives in $T/.run/listener.log. KIND: tcp, udp, unix,
# unix-dgram, abstract. ADDR: a host IP ("127.0.0.1", "::1", "0.0.0.0") for tcp
# and udp (the port is chosen by the kernel and put in LPORT), a path for unix
# and unix-dgram, a name for abstract sockets.
listen() {
	[ -n "$PY" ] || skip "python3 is needed for the host-side listener"
	rm -f "$T/.run/listener.ready" "$T/.run/listener.log"
	"$PY" - "$1" "$2" "$T/.run/listener.ready" "$T/.run/listener.log" <<'EOF' &
import os, select, socket, sys, time
kind, addr, ready, log = sys.argv[1:5]
if kind in ("tcp", "udp"):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 0))
    port = s.getsockname()[1]
else:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM if kind == "unix-dgram" else socket.SOCK_STREAM)
    s.bind(("\0" + addr) if kind == "abstract" else addr)
    port = 0
if kind != "udp" and kind != "unix-dgram":
    s.listen(8)
with open(ready + ".tmp", "w") as f:
    f.write(str(port))
os.rename(ready + ".tmp", ready)
deadline = time.time() + 60
while time.time() < deadline:
    r, _, _ = select.select([s], [], [], 0.2)
    if not r:
        continue
    if kind in ("udp", "unix-dgram"):
        data = s.recv(4096)
    else:
        c, _ = s.accept()
        c.settimeout(1)
        try:
            data = c.recv(4096)
        except OSError:
            data = b""
        c.close()
    with open(log, "a") as f:
        f.write("got %r\n" % data)
EOF
	BG_PIDS+=("$!")
	LISTENER_PID=$!
	wait_for test -f "$T/.run/listener.ready" || fail "the host listener did not start"
	LPORT=$(cat "$T/.run/listener.ready")
}

# The listener's log after a short grace period for in-flight connections.
listener_log() {
	sleep 0.2
	cat "$T/.run/listener.log" 2>/dev/null
}

expect_listener_silent() {
	local l
	l=$(listener_log)
	[ -z "$l" ] || fail "the host listener was reached: $l"
}

expect_listener_reached() {
	local l
	l=$(listener_log)
	[ -n "$l" ] || fail "the host listener saw nothing (positive control)"
}

# in_tty COMMAND-STRING: runs a shell command line under script(1), so it has a
# terminal; output (with CR removed) in $T/.run/stdout, status in WRC.
in_tty() {
	need_cmd script
	LAST_CMD="script: $1"
	timeout -k 3 "$WARD_TEST_TIMEOUT" script -qefc "$1" /dev/null </dev/null 2>"$T/.run/stderr" |
		tr -d '\r' >"$T/.run/stdout"
	WRC=${PIPESTATUS[0]}
	LINE=$(head -n 1 "$T/.run/stdout")
}

# A git repository with one commit in DIR.
make_repo() {
	need_cmd git
	git init -q "$1" || fail "git init $1"
	printf 'one\n' >"$1/file.txt"
	git -C "$1" add file.txt && git -C "$1" commit -q -m one || fail "git commit in $1"
}

# Is a kernel feature there? (For skips, which WARD_MUST_WORK=1 turns into failures.)
userns_works() {
	unshare -U true 2>/dev/null
}
