#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2016
#
# `ward run --ask-for-approval`: the terminal front end driven on a pty as a
# person would (tests/helpers/pty-ask.py types the keys when the prompt
# appears), asserting what reached the host: a file outside the writable roots
# is written only after the retry outside the sandbox was approved; forbidden
# commands never run, also behind wrappers (env, sudo, nice, find -exec,
# xargs, ... and in bash -lc), and an allow passes only through wrappers that
# change nothing else; without a terminal the answer is no; the terminal is
# restored whatever ends the question; the audit log records it all. Plain
# and --json runs, as root and unprivileged.
. "$(dirname "$0")/lib.sh"

ASK=$WARD_SRC/tests/helpers/pty-ask.py

setup_approval() {
	need_cmd python3
	export XDG_STATE_HOME=$T/state XDG_CONFIG_HOME=$T/config
	unset CODEX_HOME
}

# ask KEYS WARD-RUN-ARGS...: ward run on a pty, KEYS typed at the prompts.
ask() {
	local keys=$1
	shift
	LAST_CMD="(keys '$keys') ward run $*"
	timeout -k 3 60 python3 "$ASK" --keys "$keys" -- "$WARD" run "$@" >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
}

prompts() { sed -n 's/^prompts: //p' "$T/.run/stdout"; }

t_retry_outside_only_after_approval() {
	setup_approval
	local f=$OUT/written
	# The retry denied: the sandboxed attempt failed, nothing on the host.
	ask yn -a untrusted -- sh -c "echo hi > '$f'"
	expect_rc 123
	assert_eq "$(prompts)" 2 "questions"
	assert_stdout_has "approval needed to run this command (in the sandbox)"
	assert_stdout_has "run it again OUTSIDE the sandbox?"
	assert_stdout_has "denied     create $f"
	assert_stdout_has "termios: restored"
	assert_stdout_has "ward: run: not run: rejected by user"
	assert_absent "$f"
	# The retry approved: written on the host, by the run outside the sandbox.
	ask yy -a untrusted -- sh -c "echo hi > '$f'"
	expect_rc 0
	assert_eq "$(prompts)" 2 "questions"
	assert_content "$f" hi
	"$WARD" audit --json -n 0 >"$T/audit" || fail "ward audit failed"
	grep -q '"event":"run","command":\["sh","-c",.*"sandboxed":false,"exit_code":0' "$T/audit" ||
		fail "no audit record of the run outside the sandbox: $(cat "$T/audit")"
	grep -q '"decision":"denied","source":"person"' "$T/audit" || fail "no denied answer in the audit log"
}

t_keys_decide() {
	setup_approval
	local f=$WS/made
	ask n -a untrusted -- touch "$f"
	expect_rc 123
	assert_absent "$f"
	assert_stdout_has "ward: run: not run: rejected by user"
	ask q -a untrusted -- touch "$f"
	expect_rc 123
	assert_stdout_has "aborted by user"
	ask $'\x03' -a untrusted -- touch "$f"
	expect_rc 123
	assert_absent "$f"
	# Keys that answer nothing are ignored until one does.
	ask xzy -a untrusted -- touch "$f"
	expect_rc 0
	assert_exists "$f"
	# A known-safe command is not asked about.
	ask "" -a untrusted -- ls
	expect_rc 0
	assert_eq "$(prompts)" 0 "questions for ls"
}

t_forbidden_never_runs() {
	setup_approval
	local f=$WS/forbidden
	printf 'prefix_rule(pattern=["touch"], decision="forbidden", justification="no touching")\n' >"$T/f.rules"
	for mode in untrusted on-request never granular; do
		ask yyyy -a "$mode" --rules "$T/f.rules" -- touch "$f"
		expect_rc 123
		assert_eq "$(prompts)" 0 "questions ($mode)"
		assert_absent "$f"
	done
	grep -q "ward: run: not run: \`touch $f\` rejected: no touching" "$T/.run/stdout" ||
		fail "output: $(out)"
	# In a script, too.
	ask y -a on-request --rules "$T/f.rules" -- bash -c "true && touch '$f'"
	expect_rc 123
	assert_absent "$f"
}

# A forbidden program stays forbidden behind every wrapper ward reads, nested and in scripts.
t_forbidden_behind_wrappers() {
	setup_approval
	local f=$WS/forbidden wrap
	printf 'prefix_rule(pattern=["touch"], decision="forbidden", justification="no touching")\n' >"$T/f.rules"
	printf '%s\n' "$f" >"$T/list"
	mkdir -p "$WS/d"
	local -a wrappers=(
		"env X=1" "env -i" "env -u HOME" "env -C /" "/usr/bin/env --chdir=/ X=1"
		"nice" "nice -n 5" "ionice -c 3" "nohup" "setsid -f" "timeout 5" "timeout -s KILL 1m"
		"stdbuf -oL" "time -p" "taskset 1" "taskset -c 0" "chrt -o 0" "flock $T/lock"
		"sudo" "sudo -u root -E --" "doas -u root" "sudo env X=1 nice" "timeout 5 env -i stdbuf -o0"
	)
	for wrap in "${wrappers[@]}"; do
		# shellcheck disable=SC2086
		w -a on-request --rules "$T/f.rules" -- $wrap touch "$f"
		expect_rc 123
		assert_stderr_has "rejected: no touching (run through"
		assert_absent "$f"
	done
	local -a forms=(
		"env -S 'touch $f'" "flock $T/lock -c 'touch $f'" "xargs -a $T/list touch"
		"find $WS/d -exec touch $f ';'" "find $WS/d -execdir touch {} +" "find $WS/d -ok touch $f ';'"
	)
	for wrap in "${forms[@]}"; do
		local -a words=()
		eval "words=($wrap)"
		w -a on-request --rules "$T/f.rules" -- "${words[@]}"
		expect_rc 123
		assert_absent "$f"
	done
	for wrap in "env X=1 touch $f" "exec touch $f" "command touch $f" "true && nice timeout 5 touch $f" \
		"sudo -u root env X=1 touch $f" "exec -a x touch $f" "time -p touch $f" "nohup touch $f &"; do
		for mode in on-request never untrusted; do
			w -a "$mode" --rules "$T/f.rules" -- bash -lc "$wrap"
			expect_rc 123
			assert_absent "$f"
		done
	done
	# Options ward does not know: still forbidden, from the words that follow them.
	w -a on-request --rules "$T/f.rules" -- timeout --no-such-option 5 touch "$f"
	expect_rc 123
	assert_absent "$f"
}

# An allow passes through a wrapper that changes nothing else, and takes the command out of the
# sandbox; through one that changes the environment it does not.
t_allow_through_wrappers() {
	setup_approval
	printf 'prefix_rule(pattern=["touch"])\n' >"$T/a.rules"
	w -a on-request --rules "$T/a.rules" -- nice -n 1 timeout 10 touch "$OUT/nice"
	expect_rc 0
	assert_exists "$OUT/nice"
	w -a on-request --rules "$T/a.rules" -- bash -lc "stdbuf -oL touch '$OUT/script'"
	expect_rc 0
	assert_exists "$OUT/script"
	w -a on-request --rules "$T/a.rules" -- env X=1 touch "$OUT/env"
	[ "$WRC" != 0 ] || fail "env X=1 touch ran outside the sandbox"
	assert_absent "$OUT/env"
	w -a untrusted --rules "$T/a.rules" -- env X=1 touch "$OUT/env"
	expect_rc 123
	assert_absent "$OUT/env"
	"$WARD" policy check --effective -a untrusted --rules "$T/a.rules" -- env X=1 touch x >"$T/.run/stdout"
	assert_stdout_has '"unmatchedCommands":[{"command":["env","X=1","touch","x"],"chain":[],"decision":"prompt"},{"command":["touch","x"],"chain":["env"],"decision":"prompt"}]'
}

t_no_terminal_means_no() {
	setup_approval
	local f=$WS/made
	LAST_CMD="setsid ward run -a untrusted"
	setsid -w "$WARD" run -a untrusted -- touch "$f" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 123
	expect_one_line_error
	assert_stderr_has "not approved: nobody could be asked: there is no terminal (/dev/tty)"
	assert_absent "$f"
	setsid -w "$WARD" run --json -a untrusted -- touch "$f" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 123
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["ran"] is False and j["approval"]["status"] == "denied", j' \
		"$T/.run/stdout" || fail "json: $(out)"
}

# A signal while the question waits: the terminal is restored, then the signal ends ward.
t_signal_restores_terminal() {
	setup_approval
	LAST_CMD="pty-ask --signal 15 ward run -a untrusted"
	timeout -k 3 60 python3 "$ASK" --signal 15 -- "$WARD" run -a untrusted -- touch "$WS/x" \
		>"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 143
	assert_stdout_has "termios: restored"
	assert_absent "$WS/x"
	timeout -k 3 60 python3 "$ASK" --signal 1 -- "$WARD" run -a untrusted -- touch "$WS/x" \
		>"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 129
	assert_stdout_has "termios: restored"
}

# A rule's allow runs outside the sandbox without a question; a project's stays inside.
t_rule_allow_and_project_rules() {
	setup_approval
	local f=$OUT/by-rule
	printf 'prefix_rule(pattern=["sh", "-c", "echo ok > %s"])\n' "$f" >"$T/a.rules"
	ask "" -a on-request --rules "$T/a.rules" -- sh -c "echo ok > $f"
	expect_rc 0
	assert_eq "$(prompts)" 0 "questions"
	assert_content "$f" ok
	rm -f "$f"
	mkdir -p "$WS/.git" "$WS/.ward/rules"
	cp "$T/a.rules" "$WS/.ward/rules/p.rules"
	ask "" -a on-request -- sh -c "echo ok > $f"
	assert_eq "$(prompts)" 0 "questions"
	[ "$WRC" != 0 ] || fail "the project's rule took the command out of the sandbox"
	assert_absent "$f"
}

t_deny_read_never_outside() {
	setup_approval
	local f=$OUT/written
	mkdir -p "$WS/secret"
	ask yy -a untrusted --deny-read "$WS/secret" -- sh -c "echo hi > '$f'"
	[ "$WRC" != 0 ] || fail "expected the sandboxed run to fail"
	assert_eq "$(prompts)" 1 "questions"
	assert_stdout_has "not retried outside the sandbox: the policy denies reads"
	assert_absent "$f"
	ask y --sandbox-permissions require-escalated --deny-read "$WS/secret" -- sh -c "echo hi > '$f'"
	assert_absent "$f"
}

t_require_escalated() {
	setup_approval
	local f=$OUT/escalated
	ask y --sandbox-permissions require-escalated --justification "writes the release notes" \
		--prefix-rule sh -- sh -c "echo hi > '$f'"
	expect_rc 123
	assert_stdout_has "prefix_rule \`sh\` cannot be offered"
	ask n --sandbox-permissions require-escalated --justification "writes the release notes" \
		-- sh -c "echo hi > '$f'"
	expect_rc 123
	assert_stdout_has "OUTSIDE the sandbox"
	assert_stdout_has "note       writes the release notes"
	assert_absent "$f"
	ask y --sandbox-permissions require-escalated -- sh -c "echo hi > '$f'"
	expect_rc 0
	assert_content "$f" hi
	# Only in on-request.
	ask y -a untrusted --sandbox-permissions require-escalated -- true
	expect_rc 123
	assert_stdout_has "approval policy is untrusted; reject command"
	ask y --justification x -- true
	expect_rc 123
	assert_stdout_has "justification is only valid with"
}

t_amendment_from_the_prompt() {
	setup_approval
	local f=$OUT/amended
	ask p -a untrusted -- touch "$f"
	assert_stdout_has "[p] yes, and always allow \`touch $f\`"
	assert_content "$XDG_CONFIG_HOME/ward/rules/default.rules" "prefix_rule(pattern=[\"touch\", \"$f\"], decision=\"allow\")"
	# Now a rule allows it: no question, outside the sandbox.
	ask "" -a untrusted -- touch "$f"
	expect_rc 0
	assert_eq "$(prompts)" 0 "questions"
	assert_exists "$f"
}

t_json_run_with_approval() {
	setup_approval
	local f=$OUT/json
	ask yy --json -a untrusted -- sh -c "echo hi > '$f'"
	expect_rc 0
	assert_content "$f" hi
	python3 - "$T/.run/stdout" <<'EOF' || fail "json: $(out)"
import json, sys
text = open(sys.argv[1]).read()
line = [l for l in text.splitlines() if l.startswith("{")][-1]
j = json.loads(line)
assert j["exit_code"] == 0, j
assert j["approval"] == {"mode": "untrusted", "status": "ran_unsandboxed", "runs": 2}, j["approval"]
EOF
}

# The rules that decide what runs outside cannot be rewritten from inside the sandbox.
t_rules_protected_inside() {
	setup_approval
	export XDG_CONFIG_HOME=$WS/config
	mkdir -p "$XDG_CONFIG_HOME/ward/rules"
	ask "" -a never -- sh -c "echo 'prefix_rule(pattern=[\"curl\"])' > '$XDG_CONFIG_HOME/ward/rules/evil.rules'"
	[ "$WRC" != 0 ] || fail "the rules directory was writable inside"
	assert_absent "$XDG_CONFIG_HOME/ward/rules/evil.rules"
	# Missing at the start, it is made and protected: no command plants the first rules file.
	export XDG_CONFIG_HOME=$WS/config2
	ask "" -a never -- sh -c "mkdir -p '$XDG_CONFIG_HOME/ward/rules' && echo 'prefix_rule(pattern=[\"curl\"])' > '$XDG_CONFIG_HOME/ward/rules/evil.rules'"
	[ "$WRC" != 0 ] || fail "a missing rules directory could be made and written inside"
	assert_absent "$XDG_CONFIG_HOME/ward/rules/evil.rules"
	[ -d "$XDG_CONFIG_HOME/ward/rules" ] || fail "the rules directory was not made"
}

t_audit_command() {
	setup_approval
	ask n -a untrusted -- touch "$WS/x"
	ward_out() { "$WARD" "$@" >"$T/.run/stdout" 2>"$T/.run/stderr"; WRC=$?; }
	ward_out audit
	expect_rc 0
	assert_stdout_has "decision  prompt"
	assert_stdout_has "answer    denied"
	assert_stdout_has "$ touch $WS/x"
	ward_out audit -n 1 --json
	expect_rc 0
	assert_eq "$(wc -l <"$T/.run/stdout")" 1 "lines"
	python3 -c 'import json,sys; j=json.loads(open(sys.argv[1]).read()); assert j["event"] == "answer" and j["decision"] == "denied", j' \
		"$T/.run/stdout" || fail "json: $(out)"
	ward_out audit -n x
	expect_rc 125
	ward_out audit --file "$T/none.jsonl"
	expect_rc 0
	assert_stderr_has "no entries"
}

t_bad_options() {
	setup_approval
	w -a sometimes -- true
	expect_rc 125
	expect_one_line_error
	w --granular rules -- true
	expect_rc 125
	assert_stderr_has "--granular applies to --ask-for-approval granular"
	w -a granular --granular bogus -- true
	expect_rc 125
	w --sandbox-permissions maybe -- true
	expect_rc 125
	w --rules "$T/missing.rules" -- true
	expect_rc 125
	assert_stderr_has "cannot read rules file"
	printf 'prefix_rule(pattern=["x"], decision="nope")\n' >"$T/bad.rules"
	w --rules "$T/bad.rules" -- true
	expect_rc 125
	assert_stderr_has "bad.rules:1:37: invalid decision"
}

tcase "untrusted: a denied write reaches the host only after the retry is approved" t_retry_outside_only_after_approval
tcase "keys answer the question: n, q, Ctrl-C, y" t_keys_decide
tcase "a forbidden command never runs, in any mode" t_forbidden_never_runs
tcase "a forbidden program stays forbidden behind every wrapper" t_forbidden_behind_wrappers
tcase "an allow passes through transparent wrappers only" t_allow_through_wrappers
tcase "without a terminal the answer is no" t_no_terminal_means_no
tcase "a signal while asking restores the terminal" t_signal_restores_terminal
tcase "a rule's allow leaves the sandbox, a project's does not" t_rule_allow_and_project_rules
tcase "deny-read: never outside the sandbox" t_deny_read_never_outside
tcase "require-escalated asks to run outside, with its justification" t_require_escalated
tcase "'always allow' from the prompt adds the rule" t_amendment_from_the_prompt
tcase "ward run --json with approvals" t_json_run_with_approval
tcase "the rules directory is read-only inside the sandbox" t_rules_protected_inside
tcase "ward audit shows the log" t_audit_command
tcase "approval options are checked" t_bad_options
finish
