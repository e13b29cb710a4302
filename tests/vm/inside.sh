#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The limits suite inside the booted Debian 12 machine (tests/vm/run-limits.sh
# copies this directory in and runs this as root): cgroup v2 with every
# controller, systemd as PID 1, user `tester` (uid 1000) with a lingering user
# manager that delegates memory, pids and cpu. What cannot be seen on the
# development machines (a hybrid cgroup host without systemd) runs here:
#   - root: ward's subtree as a transient scope of the system manager, and as
#     its own cgroup when started alone in a delegated scope (the supervisor
#     leaf, the no-internal-process rule);
#   - tester: a transient scope with Delegate=yes from the user manager over
#     D-Bus (the ward-scope helper, sd-bus), and its own delegated scope;
#   - the unit tests (a real sandbox cgroup: memory hog, pids, kill, budgets)
#     and the integration tests (tests/integration/test-limits.sh), as both.
# Prints TAP-like lines and ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 2
TOP=$PWD
BIN=$TOP/bin
export LD_LIBRARY_PATH=$TOP/lib
export WARD=$BIN/ward PROBE=$BIN/probe WARD_SRC=$TOP WARD_MUST_WORK=1
# An emulated CPU is 5-10x slower than the host's, more when the host is busy.
export WARD_TEST_TIMEOUT=150
chmod -R a+rX "$TOP"
passed=0 failed=0

ok() { passed=$((passed + 1)); echo "ok - $*"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $*"; }
# check NAME COMMAND...: one result from the exit status, the output indented on failure.
check() {
	local name=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc = 0 ]; then
		ok "$name"
	else
		not_ok "$name (exit $rc)"
		printf '%s\n' "$out" | tail -n 40 | sed 's/^/#   /'
	fi
}
# tap NAME COMMAND...: a TAP producer; every line shown, one result per failed line.
tap() {
	local name=$1 out rc p f
	shift
	out=$("$@" 2>&1)
	rc=$?
	p=$(grep -c '^ok ' <<<"$out")
	f=$(grep -c '^not ok ' <<<"$out")
	printf '%s\n' "$out" | sed 's/^/#   /'
	passed=$((passed + p))
	failed=$((failed + f))
	if [ $rc != 0 ] && [ "$f" = 0 ]; then
		failed=$((failed + 1))
	fi
	echo "# $name: $p passed, $f failed, exit $rc"
}
as_tester() {
	runuser -u tester -- env XDG_RUNTIME_DIR=/run/user/1000 LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
		WARD="$WARD" PROBE="$PROBE" WARD_SRC="$WARD_SRC" WARD_MUST_WORK=1 \
		WARD_TEST_TIMEOUT="$WARD_TEST_TIMEOUT" \
		PATH=/usr/local/bin:/usr/bin:/bin "$@"
}
doctor_is() { # doctor_is PYTHON-CONDITION (on d, ward doctor --json)
	"$WARD" doctor --json | python3 -c 'import json, sys
d = json.load(sys.stdin)["limits"]
print(d)
sys.exit(0 if eval(sys.argv[1], {"d": d}) else 1)' "$1"
}
no_cgroups_left() {
	local left
	left=$(find /sys/fs/cgroup -type d -name 'ward-*' 2>/dev/null | grep -v '\.scope$' | head -5)
	[ -z "$left" ] || { echo "left: $left"; return 1; }
}
export -f doctor_is no_cgroups_left

echo "# $(uname -r); $(systemctl is-system-running 2>&1); cgroup: $(stat -fc %T /sys/fs/cgroup)"
echo "# root controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
echo "# tester's: $(cat /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/cgroup.controllers 2>&1)"

# ------------------------------------------------------------------ what ward finds
check "root: ward doctor, every limit by cgroup v2 (a system scope)" \
	doctor_is 'd["memory"] == d["pids"] == d["cpu"] == "cgroup-v2" and d["scope"]'
check "tester: ward doctor, every limit by cgroup v2 (a user scope through D-Bus)" \
	as_tester bash -c 'doctor_is "d[\"memory\"] == d[\"pids\"] == d[\"cpu\"] == \"cgroup-v2\" and d[\"scope\"].endswith(\".scope\")"'
own_cgroup() { # own_cgroup WRAPPER...: ward doctor alone in a delegated scope uses it as is
	"$@" "$WARD" doctor --json | python3 -c 'import json, sys
d = json.load(sys.stdin)["limits"]
print(d)
sys.exit(0 if d["memory"] == "cgroup-v2" and d["scope"] is None else 1)'
}
check "root alone in a delegated scope: its own cgroup, no scope of its own" \
	own_cgroup systemd-run --scope -p Delegate=yes --quiet
check "tester alone in a delegated user scope: its own cgroup" \
	own_cgroup as_tester systemd-run --user --scope -p Delegate=yes --quiet

# ------------------------------------------------------------------ a run, both ways
run_hog() { # run_hog [WRAPPER...]: a hog under --memory 64M, killed and reported by cgroup v2
	"$@" "$WARD" run --json --memory 64M --pids 64 --timeout 60 -- "$PROBE" alloc 512 </dev/null |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print({k: d[k] for k in ("exit_code","limits","usage","limit")})
sys.exit(0 if d["exit_code"] == 137 and d["limit"]["resource"] == "memory" and d["limits"] == {"memory": "cgroup-v2", "pids": "cgroup-v2"} else 1)'
}
export -f run_hog
check "root: a memory hog killed at its limit" run_hog
check "root in its own delegated scope: the same, from the supervisor leaf" \
	systemd-run --scope -p Delegate=yes --quiet bash -c "$(declare -f run_hog); run_hog"
check "tester: the same through the user manager" as_tester bash -c "$(declare -f run_hog); run_hog"
check "tester in its own delegated user scope: the same" \
	as_tester systemd-run --user --scope -p Delegate=yes --quiet bash -c "$(declare -f run_hog); run_hog"
check "no cgroup left behind" no_cgroups_left

# ------------------------------------------------------------------ the suites
tap "unit tests (root)" timeout 600 "$BIN/test-limits"
tap "unit tests (tester)" as_tester timeout 600 "$BIN/test-limits"
tap "integration tests (root)" timeout 1200 bash "$TOP/tests/integration/test-limits.sh"
tap "integration tests (tester)" as_tester timeout 1200 bash "$TOP/tests/integration/test-limits.sh"
check "no cgroup left behind after the suites" no_cgroups_left

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
