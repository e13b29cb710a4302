#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2119,SC2016
#
# Hardened hosts that refuse namespaces (Docker's default seccomp profile,
# Ubuntu 24.04's AppArmor userns restriction), simulated by hardened-wrapper:
# ward falls back to Landlock + seccomp, says so in one stderr line naming what
# it cannot guarantee, still refuses writes outside the roots, and with
# --require-isolation exits 125 instead of running.
. "$(dirname "$0")/lib.sh"

# hw [ward-run-options] -- OP ARGS: the probe through ward on the simulated host.
hw() {
	local opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	LAST_CMD="hardened-wrapper ward run ${opts[*]} -- probe $*"
	timeout -k 3 "$WARD_TEST_TIMEOUT" "$HARDENED" "$WARD" run "${opts[@]}" -- "$PROBE" "$@" \
		</dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	LINE=$(head -n 1 "$T/.run/stdout")
}

need_wrapper() {
	[ -x "$HARDENED" ] || skip "hardened-wrapper is not built ($HARDENED)"
	"$PROBE" landlock-abi >/dev/null || skip "Landlock is not enabled in this kernel"
	# The wrapper really refuses namespaces here.
	"$HARDENED" "$PROBE" unshare user >/dev/null && fail "hardened-wrapper does not refuse unshare"
	return 0
}

# The single warning line.
expect_warning() {
	local n
	n=$(grep -c '^ward: warning: ' "$T/.run/stderr")
	[ "$n" = 1 ] || fail "expected one 'ward: warning:' line on stderr, got $n"
	[ "$(grep -c -v '^ward: warning: ' "$T/.run/stderr")" = 0 ] || fail "more than the warning on stderr"
	grep -q -i 'namespace' "$T/.run/stderr" || fail "the warning does not name the missing namespaces"
}

t_warning_and_runs() {
	need_wrapper
	hw -- ns
	expect_ok
	expect_warning
	# It really ran without namespaces (the wrapper works), so the rest means something.
	# The host's own user namespace (brackets escaped: the name is matched literally).
	local hostns
	hostns=$(readlink /proc/self/ns/user | sed 's/[][]/\\&/g')
	assert_match "$LINE" " user=$hostns( |\$)" "user namespace"
	hw -- write "$WS/f" yes
	expect_ok
	assert_content "$WS/f" yes
}

t_writes_outside_refused() {
	need_wrapper
	printf 'orig\n' >"$OUT/file"
	hw -- write "$OUT/file" changed
	expect_denied write
	hw -- write "$OUT/new"
	expect_denied write
	hw -- unlink "$OUT/file"
	expect_denied unlink
	hw -- mkdir "$OUT/dir"
	expect_denied mkdir
	local name=ward-it-fb-$$-$RANDOM
	hw -- write "/etc/$name"
	expect_denied write
	ln -s "$OUT/file" "$WS/link"
	hw -- write "$WS/link" changed
	expect_denied write
	hw -- link "$OUT/file" "$WS/hard"
	expect_denied link
	assert_content "$OUT/file" orig
	assert_absent "$OUT/new" "$OUT/dir" "/etc/$name" "$WS/hard"
	hw -s read-only -- write "$WS/ro"
	expect_denied write
	assert_absent "$WS/ro"
}

t_require_isolation() {
	need_wrapper
	hw --require-isolation -- write "$WS/ran"
	expect_rc 125
	expect_one_line_error
	assert_absent "$WS/ran"
	[ -s "$T/.run/stdout" ] && fail "the probe ran"
	return 0
}

t_process_hardening() {
	need_wrapper
	hw -- caps
	expect_ok
	local k caps="CapInh CapEff CapPrm CapAmb"
	# Emptying the bounding set needs CAP_SETPCAP, which only root has here; for
	# anyone else it is moot: no capability is held, and no_new_privs stops
	# setuid and file capabilities from granting any.
	[ "$(id -u)" = 0 ] && caps="$caps CapBnd"
	for k in $caps; do
		assert_match "$LINE" " $k=0000000000000000( |$)" "$k"
	done
	assert_match "$LINE" " NoNewPrivs=1( |$)" "NoNewPrivs"
	assert_match "$LINE" " Seccomp=2( |$)" "Seccomp"
	hw -- fds
	expect_ok
	assert_eq "$LINE" "fds: ok 0 1 2" "descriptors"
	hw -- sid
	expect_ok
	local sid pid
	sid=$(sed -n 's/.* sid=\([0-9]*\).*/\1/p' <<<"$LINE")
	pid=$(sed -n 's/.* pid=\([0-9]*\).*/\1/p' <<<"$LINE")
	assert_eq "$sid" "$pid" "a new session"
	hw -- io-uring
	expect_denied io-uring
	hw -- keyctl
	expect_denied keyctl
	hw -- socket-raw
	expect_denied socket-raw
}

t_host_process() {
	need_wrapper
	local m
	m=$(marker fb-victim)
	start_host_sleeper "$m"
	wait_for pgrep -f -- "$m" >/dev/null || fail "the host sleeper did not start"
	hw -- kill "$HOST_PID" KILL
	expect_denied kill
	hw -- ptrace "$HOST_PID"
	expect_denied ptrace
	hw -- process-vm-read "$HOST_PID"
	expect_denied process-vm-read
	kill -0 "$HOST_PID" 2>/dev/null || fail "the host process died"
	grep -q '^TracerPid:[[:space:]]*0$' "/proc/$HOST_PID/status" || fail "the host process is traced"
}

t_sockets() {
	need_wrapper
	listen tcp 127.0.0.1
	hw -- connect-tcp 127.0.0.1 "$LPORT"
	expect_denied connect-tcp
	expect_listener_silent
	local name=ward-it-fb2-$$-$RANDOM
	listen abstract "$name"
	hw -- connect-abstract "$name"
	expect_denied connect-abstract
	expect_listener_silent
	listen unix "$OUT/host.sock"
	hw -- connect-unix "$OUT/host.sock"
	expect_denied connect-unix
	expect_listener_silent
}

t_protected_or_named() {
	need_wrapper
	need_cmd git
	make_repo "$WS"
	hw -- write "$WS/.git/hooks/pre-commit" evil
	assert_absent "$WS/.git/hooks/pre-commit"
	# The warning says how they are protected here.
	assert_stderr_has "guarded instead"
}

t_nothing_left() {
	need_wrapper
	local m1 m2
	m1=$(marker fb-escaper)
	m2=$(marker fb-setsid)
	hw -- spawn-escaper "$WS/pid" "$m1"
	expect_ok
	expect_gone "$m1"
	LAST_CMD="hardened-wrapper ward run -- sh -c setsid..."
	timeout -k 3 20 "$HARDENED" "$WARD" run -- sh -c "setsid sh -c '\"$PROBE\" sleep 1000 $m2 &'" \
		</dev/null >/dev/null 2>&1
	expect_gone "$m2"
}

t_tiocsti() {
	need_wrapper
	in_tty "'$HARDENED' '$WARD' run -- '$PROBE' tiocsti; read -t 1 line; echo \"after=[\$line]\""
	expect_denied tiocsti
	assert_no_match "$(probe_line tiocsti)" "=ok" "TIOCSTI variants"
	grep -q 'after=\[\]' "$T/.run/stdout" || fail "text reached the terminal: $(out)"
}

# Without a pid namespace, ward's death must still end everything inside (init's
# parent-death signal makes it kill the tree), or a survivor could go on after the
# seccomp supervisor's listener is gone.
t_fallback_ward_killed() {
	need_wrapper
	ward_killed_leaves_nothing "$HARDENED" "$WARD" run --json --
}

# Without a pid namespace, init is the command's parent: it must stay out of the
# command's reach (Landlock signal scoping, ABI 6), or killing it would orphan the
# command out of the sandbox.
t_fallback_init_unkillable() {
	need_wrapper
	[ "$("$PROBE" landlock-abi | grep -o '[0-9]*' | head -n 1)" -ge 6 ] 2>/dev/null ||
		skip "signal scoping needs Landlock ABI 6"
	LAST_CMD="hardened-wrapper ward run -- sh -c 'probe kill \$PPID KILL'"
	timeout -k 3 "$WARD_TEST_TIMEOUT" "$HARDENED" "$WARD" run -- sh -c "'$PROBE' kill \$PPID KILL; echo done" \
		</dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	LINE=$(head -n 1 "$T/.run/stdout")
	expect_denied kill EPERM
	assert_stdout_has done
	expect_rc 0
}

# ------------------------------------------------------------------ the guard of protected paths

# The protected paths of a repository as the host sees them: type, mode, size,
# modification time and content of everything at and beneath each.
guard_state() {
	local p
	for p in "$@"; do
		if [ -e "$p" ] || [ -L "$p" ]; then
			find "$p" -printf '%y %m %s %T@ %p -> %l\n' | sort
			find "$p" -type f -exec sha256sum {} + | sort
		else
			echo "absent $p"
		fi
	done
}

# A repository with an existing hook, agent configuration and a --protect file.
guard_repo() {
	make_repo "$WS"
	printf '#!/bin/sh\necho kept\n' >"$WS/.git/hooks/pre-commit"
	chmod 755 "$WS/.git/hooks/pre-commit"
	mkdir -p "$WS/.codex/sub"
	printf 'model = "x"\n' >"$WS/.codex/config.toml"
	printf 'deep\n' >"$WS/.codex/sub/deep"
	printf 'keep me\n' >"$WS/prot.txt"
	chmod 640 "$WS/prot.txt"
	GUARDED=("$WS/.git/config" "$WS/.git/hooks" "$WS/.codex" "$WS/.agents" "$WS/.ward" "$WS/prot.txt")
}

# guard_attack DESCRIPTION SHELL-COMMAND TARGET: runs the command in the fallback
# (captured), and expects the sandbox killed before it got further, the host's
# protected paths byte for byte as before, and TARGET among the denials.
guard_attack() {
	local what=$1 cmd=$2 target=$3 before after
	before=$(guard_state "${GUARDED[@]}")
	LAST_CMD="hardened-wrapper ward run --json --protect prot.txt -- sh -c '$cmd' ($what)"
	timeout -k 3 "$WARD_TEST_TIMEOUT" "$HARDENED" "$WARD" run --json --protect "$WS/prot.txt" -- \
		sh -c "$cmd; sleep 3; echo survived" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	after=$(guard_state "${GUARDED[@]}")
	[ "$before" = "$after" ] || fail "$what: the host's protected paths changed:" "$(diff <(echo "$before") <(echo "$after"))"
	"$PY" - "$T/.run/stdout" "$target" "$what" <<'PYEOF' || fail "$what: the result does not report it"
import json, sys
d = json.load(open(sys.argv[1]))
target, what = sys.argv[2], sys.argv[3]
assert d["guard_tripped"] is True, d
assert d["exit_code"] == 137 and d["signal_name"] == "SIGKILL", (d["exit_code"], d["signal_name"])
assert "survived" not in d["stdout"], d["stdout"]
assert d["sandbox_denied"] is True
hits = [x for x in d["denials"] if x["target"] == target or x["target"].startswith(target + "/")]
assert hits, (target, d["denials"])
assert all(x["syscall"] is None and x["error"] is None for x in hits), hits
assert "guard_left" not in d, d.get("guard_left")
PYEOF
	expect_rc 137
}

t_guard_existing_paths() {
	need_wrapper
	[ -n "$PY" ] || skip "python3 is needed to read the JSON"
	guard_repo
	local p
	# Each protected path in turn: planted (a new entry), edited, renamed, removed.
	guard_attack "plant a hook" "echo evil >.git/hooks/post-checkout; chmod +x .git/hooks/post-checkout" "$WS/.git/hooks/post-checkout"
	guard_attack "edit a hook" "echo evil >>.git/hooks/pre-commit" "$WS/.git/hooks/pre-commit"
	guard_attack "rename a hook" "mv .git/hooks/pre-commit .git/hooks/pre-commit.off" "$WS/.git/hooks/pre-commit"
	guard_attack "remove a hook" "rm .git/hooks/pre-commit" "$WS/.git/hooks/pre-commit"
	guard_attack "plant in .git/config" "printf '[core]\\n\\tfsmonitor = evil\\n' >>.git/config" "$WS/.git/config"
	guard_attack "replace .git/config" "printf 'x' >c.new; mv c.new .git/config" "$WS/.git/config"
	guard_attack "rename .git/config" "mv .git/config .git/config.old" "$WS/.git/config"
	guard_attack "remove .git/config" "rm -f .git/config" "$WS/.git/config"
	guard_attack "rename .git/hooks" "mv .git/hooks .git/hooks.old" "$WS/.git/hooks"
	guard_attack "remove .git/hooks" "rm -rf .git/hooks" "$WS/.git/hooks"
	guard_attack "plant in .codex" "echo evil >.codex/new" "$WS/.codex/new"
	guard_attack "edit .codex" "echo evil >>.codex/sub/deep" "$WS/.codex/sub/deep"
	guard_attack "rename .codex" "mv .codex .codex.old" "$WS/.codex"
	guard_attack "remove .codex" "rm -rf .codex" "$WS/.codex"
	guard_attack "plant .agents (missing)" "mkdir .agents; echo evil >.agents/a" "$WS/.agents"
	guard_attack "plant .ward (missing)" "echo evil >.ward" "$WS/.ward"
	guard_attack "edit --protect" "echo evil >>prot.txt" "$WS/prot.txt"
	guard_attack "chmod --protect" "chmod 777 prot.txt" "$WS/prot.txt"
	guard_attack "rename --protect" "mv prot.txt prot.old" "$WS/prot.txt"
	guard_attack "remove --protect" "rm prot.txt" "$WS/prot.txt"
	# Replacing .git itself: renamed away and rebuilt with a planted hook.
	guard_attack "replace .git" "mv .git .git.old; mkdir -p .git/hooks; echo evil >.git/hooks/pre-commit" "$WS/.git"
	# A shared writable mapping (no write event ever): the open for writing is stopped.
	guard_attack "mmap .git/config" "\"$PY\" -c 'import mmap, os; f = os.open(\".git/config\", os.O_RDWR); m = mmap.mmap(f, 0); m[0:1] = b\"X\"; m.flush()'" "$WS/.git/config"
	# git itself still works in the fallback: commits do not touch protected paths.
	hw -- true
	LAST_CMD="hardened-wrapper ward run -- git commit"
	timeout 20 "$HARDENED" "$WARD" run -- git commit -q --allow-empty -m inside </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 0
	assert_eq "$(git -C "$WS" log -1 --format=%s)" inside "the commit made inside"
}

# Plain ward run says it on stderr: which path, that the sandbox stopped, that it was restored.
t_guard_plain_run() {
	need_wrapper
	guard_repo
	LAST_CMD="hardened-wrapper ward run -- sh -c 'echo evil >>.git/config'"
	timeout 20 "$HARDENED" "$WARD" run -- sh -c 'echo evil >>.git/config; echo survived' </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 137
	assert_stderr_has "ward: run: the command changed protected path '$WS/.git/config' (write, git config); the sandbox was stopped and the path restored"
	grep -q survived "$T/.run/stdout" && fail "the command went on"
	grep -q evil "$WS/.git/config" && fail ".git/config kept the write"
	return 0
}

# The restoration follows no symlink the command planted and touches nothing outside.
t_guard_no_follow() {
	need_wrapper
	[ -n "$PY" ] || skip "python3 is needed to read the JSON"
	guard_repo
	mkdir "$OUT/dir"
	printf 'outside\n' >"$OUT/target"
	printf 'outside\n' >"$OUT/dir/pre-commit"
	local out_before
	out_before=$(guard_state "$OUT")
	guard_attack "config becomes a symlink out" "rm .git/config; ln -s '$OUT/target' .git/config" "$WS/.git/config"
	guard_attack "hooks becomes a symlink out" "rm -rf .git/hooks; ln -s '$OUT/dir' .git/hooks" "$WS/.git/hooks"
	guard_attack "a hook becomes a symlink out" "rm .git/hooks/pre-commit; ln -s '$OUT/dir/pre-commit' .git/hooks/pre-commit" "$WS/.git/hooks/pre-commit"
	assert_eq "$(guard_state "$OUT")" "$out_before" "the files outside"
	[ -L "$WS/.git/config" ] && fail ".git/config is still a symlink"
	return 0
}

# What ward cannot keep, it refuses to run with, clearly (exit 125).
t_guard_bounds() {
	need_wrapper
	make_repo "$WS"
	mkdir "$WS/.codex"
	head -c $((9 * 1024 * 1024)) /dev/zero >"$WS/.codex/big"
	hw -- write "$WS/ran"
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "cannot guard protected file '$WS/.codex/big' without namespaces"
	assert_absent "$WS/ran"
}

tcase "falls back with one warning line and runs" t_warning_and_runs
tcase "writes outside the roots are still refused (Landlock)" t_writes_outside_refused
tcase "--require-isolation exits 125 and runs nothing" t_require_isolation
tcase "no capabilities, no_new_privs, seccomp, closed fds, new session" t_process_hardening
tcase "host processes cannot be killed or traced" t_host_process
tcase "TCP, abstract and host unix sockets are refused" t_sockets
tcase "protected paths are enforced or their absence is named" t_protected_or_named
tcase "nothing is left running" t_nothing_left
tcase "no terminal injection" t_tiocsti
tcase "nothing is left running after ward is SIGKILLed, without a pid namespace" t_fallback_ward_killed
tcase "the command cannot kill init, without a pid namespace" t_fallback_init_unkillable
tcase "protected paths planted, edited, renamed, removed: sandbox killed, host restored, reported" t_guard_existing_paths
tcase "a plain run names the changed protected path on stderr" t_guard_plain_run
tcase "the restoration follows no planted symlink and touches nothing outside" t_guard_no_follow
tcase "a protected file over the guard's bound is refused with a clear error" t_guard_bounds
finish
