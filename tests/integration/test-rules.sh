#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2016
#
# Command rules from the command line: `ward policy check` (Codex's JSON, and with
# --effective the decision ward enforces through wrappers and scripts; the
# rules sources and their order, errors naming file:line:col) and
# `ward policy allow` (the rule lands in the user's rules file, banned
# prefixes are refused, the file stays loadable), as root and unprivileged.
. "$(dirname "$0")/lib.sh"

DATA=$WARD_SRC/tests/data/rules

ward_cmd() {
	LAST_CMD="ward $*"
	timeout -k 3 "$WARD_TEST_TIMEOUT" "$WARD" "$@" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	LINE=$(head -n 1 "$T/.run/stdout")
}

t_check_codex_example() {
	ward_cmd policy check --rules "$DATA/codex-example.rules" -- git reset --hard HEAD
	expect_rc 0
	assert_eq "$LINE" '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git","reset","--hard"],"decision":"forbidden","justification":"destructive operation"}}],"decision":"forbidden"}' "check"
	ward_cmd policy check -r "$DATA/codex-example.rules" -- make
	expect_rc 0
	assert_eq "$LINE" '{"matchedRules":[]}' "no match"
	ward_cmd policy check --pretty --rules "$DATA/codex-example.rules" -- cp a b
	expect_rc 0
	assert_eq "$(out)" '{
  "matchedRules": [
    {
      "prefixRuleMatch": {
        "matchedPrefix": [
          "cp"
        ],
        "decision": "prompt"
      }
    }
  ],
  "decision": "prompt"
}' "pretty"
}

# The whole table the unit tests and the Codex comparison use, through the CLI.
t_check_table() {
	local f flags argv expected n=0
	cd "$DATA" || fail "cd $DATA"
	while IFS=$'\t' read -r f flags argv expected; do
		[[ $f == \#* || -z $f ]] && continue
		local args=()
		mapfile -d '' -t args < <(python3 -c 'import json,sys; sys.stdout.write("\0".join(json.loads(sys.argv[1])) + "\0")' "$argv")
		local extra=()
		[ "$flags" = resolve ] && extra=(--resolve-host-executables)
		ward_cmd policy check --rules "$f" "${extra[@]}" -- "${args[@]}"
		expect_rc 0
		assert_eq "$(out)" "$expected" "$f $argv"
		n=$((n + 1))
	done <"$DATA/check.table"
	[ "$n" -ge 50 ] || fail "only $n rows"
}

# --effective: what the approvals enforce, with the wrapper chain; without it, Codex's answer.
t_check_effective() {
	printf 'prefix_rule(pattern=["rm"], decision="forbidden")\nprefix_rule(pattern=["npm", "test"])\n' >"$T/w.rules"
	ward_cmd policy check --rules "$T/w.rules" -- sudo env X=1 nice rm f
	expect_rc 0
	assert_eq "$LINE" '{"matchedRules":[]}' "Codex's answer"
	ward_cmd policy check --effective --rules "$T/w.rules" -- sudo env X=1 nice rm f
	expect_rc 0
	assert_eq "$LINE" '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["rm"],"decision":"forbidden","command":["rm","f"],"chain":["sudo","env","nice"]}}],"unmatchedCommands":[{"command":["sudo","env","X=1","nice","rm","f"],"chain":[],"decision":"allow"},{"command":["env","X=1","nice","rm","f"],"chain":["sudo"],"decision":"allow"}],"decision":"forbidden","runsOutsideSandbox":false,"readExactly":true,"approvalMode":"on-request"}' "effective"
	ward_cmd policy check --effective -a untrusted --rules "$T/w.rules" -- bash -lc "nice npm test && timeout 5 ls"
	expect_rc 0
	assert_eq "$LINE" '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["npm","test"],"decision":"allow","command":["npm","test"],"chain":["bash","nice"]}}],"unmatchedCommands":[{"command":["ls"],"chain":["bash","timeout"],"decision":"allow"}],"decision":"allow","runsOutsideSandbox":false,"readExactly":true,"approvalMode":"untrusted"}' "script"
	ward_cmd policy check --effective --rules "$T/w.rules" -- timeout --bogus 5 rm f
	expect_rc 0
	assert_match "$LINE" '"candidate":true.*"decision":"forbidden".*"readExactly":false,"unread":\{"command":\["timeout","--bogus","5","rm","f"\],"chain":\[\],"why":"an option ward does not know' "inexact"
	ward_cmd policy check --effective --pretty --rules "$T/w.rules" -- nice npm test
	expect_rc 0
	assert_stdout_has '  "runsOutsideSandbox": true,'
	ward_cmd policy check -a never --rules "$T/w.rules" -- ls
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "--ask-for-approval needs --effective"
	ward_cmd policy check --effective -a sometimes --rules "$T/w.rules" -- ls
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "unknown approval mode 'sometimes'"
}

t_check_errors() {
	ward_cmd policy check --rules "$DATA/bad/decision.rules" -- ls
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "bad/decision.rules:1:38: invalid decision 'deny'"
	ward_cmd policy check --rules "$T/missing.rules" -- ls
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "cannot read rules file '$T/missing.rules'"
	ward_cmd policy check --rules "$DATA/codex-example.rules"
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "no command given"
	ward_cmd policy check --bogus -- ls
	expect_rc 125
	expect_one_line_error
	ward_cmd policy check --rules "$T" -- ls
	expect_rc 125
	assert_stderr_has "is not a regular file"
	ward_cmd policy check --rules "$DATA/codex-example.rules" -- ls $'\xff'
	expect_rc 125
	assert_stderr_has "not valid UTF-8"
	head -c 1048577 /dev/zero | tr '\0' '#' >"$T/big.rules"
	ward_cmd policy check --rules "$T/big.rules" -- ls
	expect_rc 125
	assert_stderr_has "larger than 1048576 bytes"
}

# Without --rules: ward's own rules directory, then the project's .ward/rules, in that order.
t_check_default_sources() {
	export XDG_CONFIG_HOME=$T/config
	mkdir -p "$XDG_CONFIG_HOME/ward/rules" "$WS/.git" "$WS/.ward/rules" "$WS/sub/.ward/rules"
	printf 'prefix_rule(pattern=["make"], decision="prompt")\n' >"$XDG_CONFIG_HOME/ward/rules/user.rules"
	printf 'prefix_rule(pattern=["make"], justification="project")\n' >"$WS/.ward/rules/a.rules"
	printf 'prefix_rule(pattern=["make", "test"], decision="forbidden")\n' >"$WS/sub/.ward/rules/b.rules"
	printf 'broken(\n' >"$WS/sub/.ward/rules/ignored.txt"
	ward_cmd policy check -C "$WS/sub" -- make test
	expect_rc 0
	assert_eq "$LINE" '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["make"],"decision":"prompt"}},{"prefixRuleMatch":{"matchedPrefix":["make"],"decision":"allow","justification":"project"}},{"prefixRuleMatch":{"matchedPrefix":["make","test"],"decision":"forbidden"}}],"decision":"forbidden"}' "sources in order"
	# --rules alone: only that file.
	ward_cmd policy check -C "$WS/sub" --rules "$DATA/codex-example.rules" -- make test
	assert_eq "$LINE" '{"matchedRules":[]}' "--rules replaces the default sources"
	# A broken project file stops the check with its location.
	printf 'prefix_rule(pattern=["x"])\n  oops\n' >"$WS/.ward/rules/z.rules"
	ward_cmd policy check -C "$WS" -- make
	expect_rc 125
	assert_stderr_has ".ward/rules/z.rules:2:1: unexpected indentation"
}

t_check_codex_rules() {
	export CODEX_HOME=$T/codex
	mkdir -p "$CODEX_HOME/rules"
	printf 'prefix_rule(pattern=["npm", "test"])\n' >"$CODEX_HOME/rules/default.rules"
	ward_cmd policy check --codex-rules -- npm test
	expect_rc 0
	assert_eq "$LINE" '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["npm","test"],"decision":"allow"}}],"decision":"allow"}' "codex rules"
	unset CODEX_HOME
	mkdir -p "$HOME/.codex/rules"
	printf 'prefix_rule(pattern=["npm"], decision="prompt")\n' >"$HOME/.codex/rules/x.rules"
	ward_cmd policy check --codex-rules -- npm test
	assert_eq "$LINE" '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["npm"],"decision":"prompt"}}],"decision":"prompt"}' "~/.codex/rules"
}

t_allow_appends() {
	export XDG_CONFIG_HOME=$T/config
	local f=$XDG_CONFIG_HOME/ward/rules/default.rules
	ward_cmd policy allow -- npm test
	expect_rc 0
	assert_stdout_has "added to '$f': npm test"
	assert_content "$f" 'prefix_rule(pattern=["npm", "test"], decision="allow")'
	ward_cmd policy allow -- npm test
	expect_rc 0
	assert_stdout_has "already in"
	ward_cmd policy allow -- make "it's \"x\""
	expect_rc 0
	assert_content "$f" 'prefix_rule(pattern=["npm", "test"], decision="allow")
prefix_rule(pattern=["make", "it'"'"'s \"x\""], decision="allow")'
	# The rule works: check reads it back.
	ward_cmd policy check -- make "it's \"x\"" now
	assert_eq "$LINE" '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["make","it'"'"'s \"x\""],"decision":"allow"}}],"decision":"allow"}' "round trip"
	ward_cmd policy allow --file "$T/other.rules" -- cargo build
	expect_rc 0
	assert_content "$T/other.rules" 'prefix_rule(pattern=["cargo", "build"], decision="allow")'
}

t_allow_refuses() {
	export XDG_CONFIG_HOME=$T/config
	local p
	for p in python3 "bash -lc" git env sudo "npm run" "node -e" "/usr/bin/python3" "python3 -u"; do
		# shellcheck disable=SC2086
		ward_cmd policy allow -- $p
		expect_rc 125
		expect_one_line_error
		assert_stderr_has "cannot add a rule for '$p'"
	done
	assert_absent "$XDG_CONFIG_HOME/ward/rules/default.rules"
	ward_cmd policy allow
	expect_rc 125
	assert_stderr_has "no prefix given"
	# A broken rules file is left alone.
	mkdir -p "$XDG_CONFIG_HOME/ward/rules"
	printf 'prefix_rule(pattern=["ls"], decision="maybe")\n' >"$XDG_CONFIG_HOME/ward/rules/default.rules"
	ward_cmd policy allow -- make
	expect_rc 125
	assert_stderr_has "does not load"
	assert_content "$XDG_CONFIG_HOME/ward/rules/default.rules" 'prefix_rule(pattern=["ls"], decision="maybe")'
}

# Without HOME: the home directory comes from the password file (or there is none); either way
# the check works (a missing rules directory is no error).
t_check_without_home() {
	LAST_CMD="env -u HOME ward policy check -- true"
	env -u HOME -u XDG_CONFIG_HOME "$WARD" policy check -- true >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 0
	assert_match "$(out)" '^\{"matchedRules":\[' "output"
}

tcase "policy check prints Codex's JSON for Codex's example rules" t_check_codex_example
tcase "policy check gives every answer of check.table" t_check_table
tcase "policy check --effective: the decision ward enforces, with the wrapper chain" t_check_effective
tcase "policy check errors name the file, line and column" t_check_errors
tcase "policy check reads ward's rules, then the project's, in order" t_check_default_sources
tcase "policy check --codex-rules reads CODEX_HOME/rules" t_check_codex_rules
tcase "policy allow appends a loadable rule once" t_allow_appends
tcase "policy allow refuses banned prefixes and broken files" t_allow_refuses
tcase "policy check works without HOME" t_check_without_home
finish
