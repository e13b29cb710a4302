#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2119,SC2016
#
# The command line: help, version, exit statuses (the command's own, 128+N,
# 125 ward failed with a one-line reason, 126, 127), options after the command,
# --policy (ward's own JSON form, Codex's legacy SandboxPolicy, and the
# rejections that name the file, the field and the reason), `ward policy show`,
# `ward doctor`, and the man page matching --help.
. "$(dirname "$0")/lib.sh"

# ward_cmd ARGS...: ward itself (not `ward run`), output like w().
ward_cmd() {
	LAST_CMD="ward $*"
	timeout -k 3 "$WARD_TEST_TIMEOUT" "$WARD" "$@" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	LINE=$(head -n 1 "$T/.run/stdout")
}

t_help_version() {
	ward_cmd run --help
	expect_rc 0
	assert_stdout_has "Usage: ward run"
	local o
	for o in --sandbox --cd --writable --protect --deny-read --network --allow-unix-socket --policy \
		--exclude-slash-tmp --exclude-tmpdir-env-var --require-isolation --keep-fd --timeout; do
		assert_stdout_has "$o"
	done
	ward_cmd --help
	expect_rc 0
	assert_stdout_has "run"
	ward_cmd --version
	expect_rc 0
	assert_match "$LINE" "^ward [0-9]+\.[0-9]+" "--version"
	ward_cmd run --version
	expect_rc 0
	assert_match "$LINE" "^ward [0-9]+\.[0-9]+" "run --version"
}

t_man_page() {
	local man=$WARD_SRC/docs/ward.1 o
	[ -f "$man" ] || fail "$man is missing"
	ward_cmd run --help
	# Every long option --help shows is documented in the man page.
	for o in $(grep -o -E -- '--[a-z][a-z0-9-]+' "$T/.run/stdout" | sort -u); do
		grep -q -F -- "${o//-/\\-}" "$man" || grep -q -F -- "$o" "$man" ||
			fail "the man page lacks $o"
	done
}

t_exit_codes() {
	w -- true
	expect_rc 0
	w -- sh -c 'exit 7'
	expect_rc 7
	w -- sh -c 'kill -TERM $$'
	expect_rc 143
	w -- sh -c 'kill -KILL $$'
	expect_rc 137
	w -- sh -c 'kill -SEGV $$'
	expect_rc 139
	printf 'not a program\n' >"$WS/notexec"
	w -- "$WS/notexec"
	expect_rc 126
	expect_one_line_error
	w -- "$WS"
	expect_rc 126
	w -- ward-it-no-such-command
	expect_rc 127
	expect_one_line_error
	assert_stderr_has ward-it-no-such-command
	w -- "$WS/missing/prog"
	expect_rc 127
	w -- ''
	expect_rc 127
	expect_one_line_error
	# A PATH directory the command cannot search is "not found", as in a shell.
	mkdir "$T/locked"
	chmod 000 "$T/locked"
	w --env-set "PATH=$T/locked:/usr/bin:/bin" -- ward-it-no-such-command
	expect_rc 127
	w --env-set "PATH=$T/locked:/usr/bin:/bin" -- true
	expect_rc 0
	chmod 700 "$T/locked"
	# Exit statuses above 125 of the command itself stay the command's.
	w -- sh -c 'exit 126'
	expect_rc 126
}

t_bad_options() {
	local args
	for args in "--sandbox bogus" "--network maybe" "--bogus-option" "-Z" "--keep-fd x" \
		"--timeout -1" "--timeout 0" "--policy $T/missing.json" "--cd $T/missing-dir" \
		"--max-output 100" "--json --max-output 300M" "--timeout"; do
		# shellcheck disable=SC2086
		w $args -- true
		expect_rc 125
		expect_one_line_error
		[ -s "$T/.run/stdout" ] && fail "output on stdout for '$args'"
	done
	w
	expect_rc 125
	expect_one_line_error
	ward_cmd bogus-command
	expect_rc 125
	expect_one_line_error
	ward_cmd
	expect_rc 125
	# A bad option must not have run anything.
	w --bogus -- "$PROBE" write "$WS/ran"
	assert_absent "$WS/ran"
}

t_options_after_command() {
	w -- sh -c 'echo "$@"' argv0 --network on -s danger-full-access
	expect_rc 0
	assert_eq "$LINE" "--network on -s danger-full-access" "arguments after the command"
	w sh -c 'echo "$@"' argv0 --help
	assert_eq "$LINE" "--help" "option after the command name"
	w -s read-only sh -c 'echo "$@"' argv0 -w x -C /
	assert_eq "$LINE" "-w x -C /" "options after the command name"
}

# policy FILE CONTENT
policy_file() {
	printf '%s\n' "$2" >"$1"
}

t_policy_codex() {
	mkdir "$T/extra"
	policy_file "$T/ro.json" '{"type":"read-only"}'
	wp --policy "$T/ro.json" -- write "$WS/f"
	expect_denied write
	assert_absent "$WS/f"
	policy_file "$T/ww.json" "{\"type\":\"workspace-write\",\"writable_roots\":[\"$T/extra\"],\"network_access\":false,\"exclude_tmpdir_env_var\":false,\"exclude_slash_tmp\":true}"
	wp --policy "$T/ww.json" -- write "$T/extra/f" yes
	expect_ok
	assert_content "$T/extra/f" yes
	wp --policy "$T/ww.json" -- write "$WS/g" yes
	expect_ok
	local tf=/tmp/ward-it-policy-$$
	wp --policy "$T/ww.json" -- write "$tf"
	expect_denied write
	assert_absent "$tf"
	printf 'orig\n' >"$OUT/file"
	policy_file "$T/dfa.json" '{"type":"danger-full-access"}'
	wp --policy "$T/dfa.json" -- write "$OUT/file" changed
	expect_ok
	assert_content "$OUT/file" changed
	policy_file "$T/ro-net.json" '{"type":"read-only","network_access":true}'
	w --policy "$T/ro-net.json" -- true
	expect_rc 0
}

t_policy_own() {
	# ward's own form, as `ward policy show` describes it and docs/policy.md documents it.
	mkdir "$T/extra"
	policy_file "$T/own.json" "{\"mode\":\"workspace-write\",\"writable\":[\"$T/extra\"],\"protect\":[\"$WS/keep\"],\"deny_read\":[\"$WS/secret\"],\"network\":false,\"exclude_slash_tmp\":true}"
	mkdir "$WS/keep"
	printf 'secret\n' >"$WS/secret"
	wp --policy "$T/own.json" -- write "$T/extra/f" yes
	expect_ok
	wp --policy "$T/own.json" -- write "$WS/keep/f"
	expect_denied write
	wp --policy "$T/own.json" -- read "$WS/secret"
	expect_denied read
	assert_content "$T/extra/f" yes
	assert_absent "$WS/keep/f"
}

# expect_policy_rejected FILE FIELD: exit 125, one line naming the file and the field.
expect_policy_rejected() {
	w --policy "$1" -- "$PROBE" write "$WS/ran"
	expect_rc 125
	expect_one_line_error
	grep '^ward: ' "$T/.run/stderr" | grep -q -F -- "$1" || fail "the message does not name $1"
	grep '^ward: ' "$T/.run/stderr" | grep -q -F -- "$2" || fail "the message does not name the field $2"
	assert_absent "$WS/ran"
}

t_policy_rejected() {
	policy_file "$T/unknown.json" '{"type":"read-only","bogus_field":1}'
	expect_policy_rejected "$T/unknown.json" bogus_field
	grep -q -i -E 'unknown|unexpected|not allowed|invalid' "$T/.run/stderr" || fail "no reason given"
	policy_file "$T/type.json" '{"type":"workspace-write","network_access":"yes"}'
	expect_policy_rejected "$T/type.json" network_access
	grep -q -i -E 'boolean|bool|type|expected' "$T/.run/stderr" || fail "no reason given"
	policy_file "$T/rel.json" '{"type":"workspace-write","writable_roots":["relative/dir"]}'
	expect_policy_rejected "$T/rel.json" writable_roots
	grep -q -i 'absolute' "$T/.run/stderr" || fail "the reason does not say the path must be absolute"
	policy_file "$T/mode.json" '{"type":"full-power"}'
	expect_policy_rejected "$T/mode.json" type
	policy_file "$T/syntax.json" '{"type":'
	w --policy "$T/syntax.json" -- true
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "$T/syntax.json"
	policy_file "$T/array.json" '[1,2]'
	w --policy "$T/array.json" -- true
	expect_rc 125
	expect_one_line_error
	head -c 2000000 /dev/zero | tr '\0' ' ' >"$T/huge.json"
	w --policy "$T/huge.json" -- true
	expect_rc 125
	expect_one_line_error
}

# j EXPR: evaluates a python expression on the JSON in stdout (d), prints it.
j() {
	"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); v = eval(sys.argv[2]); print(v if isinstance(v, str) else json.dumps(v, sort_keys=True))' \
		"$T/.run/stdout" "$1"
}

t_policy_show() {
	[ -n "$PY" ] || skip "python3 is needed to read JSON"
	need_cmd git
	make_repo "$WS"
	mkdir "$T/real"
	ln -s "$T/real" "$T/link"
	printf 's\n' >"$WS/secret"
	ward_cmd policy show -C "$WS" -w "$T/link" --deny-read "$WS/secret" --protect "$WS/file.txt"
	expect_rc 0
	j 'd' >/dev/null || fail "not JSON: $(out)"
	local all
	all=$(j 'd')
	assert_match "$all" "\"$T/real\"" "the writable root after symlink resolution"
	assert_no_match "$all" "\"$T/link\"" "the unresolved symlink"
	assert_match "$all" "\"$WS\"" "the working directory as a root"
	assert_match "$all" "\"$WS/.git/hooks\"" "the protected hooks"
	assert_match "$all" "\"$WS/.git/config\"" "the protected config"
	assert_match "$all" "\"$WS/file.txt\"" "the --protect path"
	assert_match "$all" "\"$WS/secret\"" "the deny-read path"
	assert_match "$all" "\"$WS/.codex\"" "the missing .codex"
	assert_match "$all" '[Ll]andlock' "the enforcement layers"
	assert_match "$all" '[Ss]eccomp' "the enforcement layers"
	assert_match "$all" '"network"' "the network setting"
	ward_cmd policy show --network on
	expect_rc 0
	local on off
	on=$(j 'd.get("network")')
	ward_cmd policy show
	off=$(j 'd.get("network")')
	[ "$on" != "$off" ] || fail "network on and off look the same: $on"
	ward_cmd policy show --keep-fd 1
	expect_rc 125
	ward_cmd policy show --timeout 5
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "'--timeout' only applies to 'ward run'"
	ward_cmd policy show --sandbox bogus
	expect_rc 125
	expect_one_line_error
	# danger-full-access has the network on; /tmp and $TMPDIR (shared with other users)
	# get no implicit protections.
	ward_cmd policy show -s danger-full-access
	expect_rc 0
	assert_eq "$(j 'd.get("network")')" on "network in danger-full-access"
	ward_cmd policy show -C "$WS"
	assert_no_match "$(j 'd["protected"]')" "'/tmp/" "protected paths under /tmp"
}

# danger-full-access is no sandbox at all: asking it for something only a sandbox can
# enforce is refused, not silently ignored.
t_danger_refuses_restrictions() {
	printf 'secret\n' >"$OUT/secret"
	local args
	for args in "--deny-read $OUT/secret" "--network off" "--protect $WS/x"; do
		# shellcheck disable=SC2086
		w -s danger-full-access $args -- cat "$OUT/secret"
		expect_rc 125
		expect_one_line_error
		assert_stderr_has "danger-full-access"
		[ -s "$T/.run/stdout" ] && fail "the command ran with '$args'"
	done
	printf '{"mode":"danger-full-access","network":"off"}' >"$T/p.json"
	w --policy "$T/p.json" -- true
	expect_rc 125
	w -s danger-full-access -- cat "$OUT/secret"
	expect_rc 0
}

t_doctor() {
	ward_cmd doctor
	expect_rc 0
	grep -q -i 'user namespace' "$T/.run/stdout" || fail "doctor does not report user namespaces"
	grep -q -i 'landlock' "$T/.run/stdout" || fail "doctor does not report Landlock"
	grep -q -i 'seccomp' "$T/.run/stdout" || fail "doctor does not report seccomp"
	grep -q -i 'cgroup' "$T/.run/stdout" || fail "doctor does not report cgroups"
	[ -n "$PY" ] || return 0
	ward_cmd doctor --json
	expect_rc 0
	j 'd' >/dev/null || fail "doctor --json is not JSON"
}

# The command's signal dispositions are its own: SIGPIPE default (ward ignores it for
# itself), and a caller that ignores SIGCHLD does not hang the run.
t_signal_dispositions() {
	LAST_CMD="ward run -- yes | head -c 1"
	"$WARD" run -- yes </dev/null 2>/dev/null | head -c 1 >/dev/null
	assert_eq "${PIPESTATUS[0]}" 141 "exit status of yes into a closed pipe"
	w -- grep -E '^SigIgn:' /proc/self/status
	assert_match "$LINE" '^SigIgn:[[:space:]]+0+$' "ignored signals in the command"
	[ -n "$PY" ] || return 0
	LAST_CMD="ward run with SIGCHLD ignored"
	timeout -k 3 20 "$PY" -c 'import signal, subprocess, sys
r = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, capture_output=True,
                   preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
print(r.returncode)' "$WARD" run -- sh -c 'exit 3' >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 0
	assert_eq "$(cat "$T/.run/stdout")" 3 "exit status with SIGCHLD ignored"
}

# A quick command's status can arrive with the start-up reports; ward must not wait
# for more (it used to hang now and then). Many short runs, each bounded.
t_quick_commands_return() {
	local i rc hung=0
	for i in $(seq 150); do
		timeout -s KILL 5 "$WARD" run -- true </dev/null >"$T/.run/stdout" 2>&1 &
		wait $!
		rc=$?
		[ "$rc" = 137 ] && hung=$((hung + 1))
		timeout -s KILL 5 "$WARD" run --json -- sh -c 'exit 7' </dev/null >"$T/.run/stdout" 2>&1
		rc=$?
		[ "$rc" = 7 ] || hung=$((hung + 1))
	done
	LAST_CMD="150 x (ward run -- true; ward run --json -- sh -c 'exit 7')"
	assert_eq "$hung" 0 "runs that hung or failed"
}

tcase "--help and --version" t_help_version
tcase "the man page documents every option of --help" t_man_page
tcase "exit statuses: 0, 7, 128+N, 126, 127" t_exit_codes
tcase "bad options exit 125 with one line, running nothing" t_bad_options
tcase "options after the command belong to the command" t_options_after_command
tcase "--policy with Codex's legacy SandboxPolicy forms" t_policy_codex
tcase "--policy with ward's own form" t_policy_own
tcase "bad policies: exit 125 naming the file, the field, the reason" t_policy_rejected
tcase "ward policy show prints the resolved policy as JSON" t_policy_show
tcase "danger-full-access refuses what it cannot enforce" t_danger_refuses_restrictions
tcase "signal dispositions: SIGPIPE default, SIGCHLD ignored by the caller" t_signal_dispositions
tcase "quick commands always return" t_quick_commands_return
tcase "ward doctor reports the kernel features" t_doctor
finish
