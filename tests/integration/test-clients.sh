#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The real agents against ward: the Codex CLI with `ward serve` as its
# environment and with `ward mcp` as an MCP server, and Claude Code with
# `ward mcp`, each talking to a scripted model API of our own on loopback
# (tests/helpers/mock-model.py) instead of a model: no network, no keys.
#
# Each case is one non-interactive turn. The mock answers the client's first
# request with one call of ward's tool (Codex's own exec_command when ward is
# its environment) running one command, and the request that brings the
# tool's result back with a final message. The case then asserts the effect on
# the host (the file the command wrote in the workspace, or the write outside
# it that the sandbox refused) and what the client told the model (the tool
# result the mock received).
#
# The configuration is the README's: the Codex snippets (environments.toml,
# config.toml's [mcp_servers.ward]) are read from README.md and used as
# printed, with `ward` found in PATH; the Claude Code cases use the README's
# mcpServers entry with --mcp-config, and its `claude mcp add` line. Each client gets a home of its own in
# the case's scratch directory (and a TMPDIR: Claude Code leaves a directory
# for each project in it), and every startup traffic they have (update
# checks, telemetry, plugin and feature-flag fetches) is switched off, as
# checked under strace: they connect to nothing but the mock.
#
# The clients are the versions pinned in tests/mcp/package.json and
# package-lock.json, installed by scripts/setup-node.sh. To move to others:
#   cd tests/mcp && npm install --package-lock-only --ignore-scripts --save-exact \
#       @openai/codex@VERSION @anthropic-ai/claude-code@VERSION
# (both files change), then scripts/setup-node.sh and this test (meson test -C
# build clients), as root and as uid 65534. A new version may add startup
# traffic: run it once under `strace -f -e trace=connect,sendto,sendmmsg` and
# look for any address but 127.0.0.1.
#
# Environment: WARD_TEST_CLIENTS_KEEP=DIR keeps every case's requests (the
# mock's log: NNN.json for each request, told.json / told.txt for the tool
# result) in DIR/CASE/; WARD_TEST_CLIENT_TIMEOUT bounds one client run
# (default 60 s).
. "$(dirname "$0")/lib.sh"
# shellcheck source=node-prefix.sh
. "$WARD_SRC/tests/integration/node-prefix.sh"

MOCK=$WARD_SRC/tests/helpers/mock-model.py
README=$WARD_SRC/README.md
CLIENT_TIMEOUT=${WARD_TEST_CLIENT_TIMEOUT:-60}
CODEX_JS=$NODE_PREFIX/node_modules/@openai/codex/bin/codex.js
# The Claude Code package's postinstall only copies the binary of the platform's
# package over its bin/claude.exe placeholder; setup-node.sh runs no install
# scripts, so the test runs that same binary where npm put it.
case "$(uname -m)" in
x86_64) CLAUDE=$NODE_PREFIX/node_modules/@anthropic-ai/claude-code-linux-x64/claude ;;
aarch64) CLAUDE=$NODE_PREFIX/node_modules/@anthropic-ai/claude-code-linux-arm64/claude ;;
*) CLAUDE=/nonexistent ;;
esac
FINAL="The command ran; nothing more to do."
# The command the model asks for in the workspace; $WARD_SANDBOX is 1 only in
# ward's sandbox, so the file says who ran it.
# shellcheck disable=SC2016 # expanded by the shell in the sandbox
MADE='echo "written by $WARD_SANDBOX" > made.txt && cat made.txt'

# `ward` in PATH for the README's snippets: this build's (or the hardened
# wrapper's, under WARD_TEST_HOST).
mkdir -p "$BASE/bin"
[ -e "$BASE/bin/ward" ] || ln -s "$WARD" "$BASE/bin/ward"
CLIENT_PATH=$BASE/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# readme_block PATTERN: the first ```toml block of README.md with a line
# that is exactly PATTERN.
readme_block() {
	awk -v want="$1" '
		/^```toml$/ { inb = 1; buf = ""; hit = 0; next }
		inb && /^```$/ { if (hit) { printf "%s", buf; exit } inb = 0; next }
		inb { buf = buf $0 "\n"; if ($0 == want) hit = 1 }
	' "$README"
}

# cmd_json COMMAND: exec_command's arguments for COMMAND.
cmd_json() { "$PY" -c 'import json, sys; print(json.dumps({"cmd": sys.argv[1]}))' "$1"; }

# start_mock API TOOL ARGS: the scripted model API; its port in PORT, its
# records in $T/model.
start_mock() {
	[ -n "$PY" ] || skip "python3 is needed for the mock model API"
	"$PY" "$MOCK" --api "$1" --tool "$2" --args "$3" --final "$FINAL" \
		--logdir "$T/model" --lifetime $((CLIENT_TIMEOUT + 30)) >"$T/.run/mock.log" 2>&1 &
	BG_PIDS+=("$!")
	wait_for test -s "$T/model/port" || fail "the mock model API did not start: $(cat "$T/.run/mock.log")"
	PORT=$(cat "$T/model/port")
}

# keep_records: copies the mock's records to WARD_TEST_CLIENTS_KEEP/CASE.
keep_records() {
	[ -n "${WARD_TEST_CLIENTS_KEEP:-}" ] || return 0
	local f d
	for f in "${FUNCNAME[@]}"; do
		[[ $f == t_* ]] && break
	done
	d=$WARD_TEST_CLIENTS_KEEP/${f#t_}
	rm -rf "$d" && mkdir -p "$d" && cp -r "$T/model/." "$d/"
	[ -f "$T/.run/stdout" ] && cp "$T/.run/stdout" "$d/client-stdout.txt"
	[ -f "$T/.run/stderr" ] && cp "$T/.run/stderr" "$d/client-stderr.txt"
	return 0
}

# told: the text of the tool result the client sent to the model.
told() { cat "$T/model/told.txt" 2>/dev/null; }

# expect_turn_done: the client exited 0 after the mock's final message, having
# sent the tool's result.
expect_turn_done() {
	[ "$WRC" = 0 ] || fail "the client exited with status $WRC"
	[ -f "$T/model/told.json" ] || fail "the client never sent the tool's result to the model"
	assert_stdout_has "$FINAL"
}

# ------------------------------------------------------------------ Codex

# codex_home: $T/codex with config.toml for the mock (PORT) and no traffic of
# its own: analytics off, plugins off (their marketplace is a git clone from
# the network and an API lookup at startup). The sandbox mode is what Codex
# asks its environment for, so workspace-write lets the command write there.
codex_home() {
	[ -f "$CODEX_JS" ] || skip "the Codex CLI is not installed in $NODE_PREFIX (scripts/setup-node.sh)"
	mkdir -p "$T/codex"
	cat >"$T/codex/config.toml" <<EOF
model = "mock-model"
model_provider = "mock"
sandbox_mode = "workspace-write"
approval_policy = "never"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false

[model_providers.mock]
name = "mock model API on loopback"
base_url = "http://127.0.0.1:$PORT/v1"
wire_api = "responses"
supports_websockets = false
requires_openai_auth = false
request_max_retries = 0
stream_max_retries = 0

EOF
}

# run_codex PROMPT: `codex exec` in the workspace, through the npm package's
# launcher; --strict-config refuses any key this version does not know, so a
# README snippet with a wrong key fails here.
run_codex() {
	LAST_CMD="codex exec $1"
	mkdir -p "$T/tmp"
	(cd "$WS" && timeout -k 5 "$CLIENT_TIMEOUT" env -i PATH="$CLIENT_PATH" HOME="$T/home" \
		TMPDIR="$T/tmp" CODEX_HOME="$T/codex" LANG=C.UTF-8 TERM=dumb NO_PROXY=127.0.0.1,localhost \
		"$NODE" "$CODEX_JS" exec --strict-config --skip-git-repo-check "$1") \
		</dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	keep_records
}

# The environment: README's environments.toml snippet as printed.
codex_env_setup() {
	codex_home
	readme_block '[[environments]]' >"$T/codex/environments.toml"
	grep -q '^default = "ward"' "$T/codex/environments.toml" ||
		fail "README.md has no environments.toml snippet with default = \"ward\""
	mkdir -p "$T/home"
}

# The MCP server: README's [mcp_servers.ward] snippet as printed.
codex_mcp_setup() {
	codex_home
	readme_block '[mcp_servers.ward]' >>"$T/codex/config.toml"
	grep -q '^default_tools_approval_mode = ' "$T/codex/config.toml" ||
		fail "README.md's [mcp_servers.ward] snippet has no default_tools_approval_mode"
	mkdir -p "$T/home"
}

t_codex_env_writes_workspace() {
	start_mock responses exec_command "$(cmd_json "$MADE")"
	codex_env_setup
	run_codex "Write made.txt."
	expect_turn_done
	# WARD_SANDBOX=1 is set only in ward's sandbox: ward ran it, not Codex.
	assert_content "$WS/made.txt" "written by 1"
	told | grep -qx 'written by 1' || fail "the model was not told the command's output: $(told)"
	told | grep -q 'Process exited with code 0' || fail "the model was not told the exit code: $(told)"
}

t_codex_env_refuses_outside() {
	start_mock responses exec_command "$(cmd_json "echo sandbox=\$WARD_SANDBOX; echo escaped > $OUT/escaped.txt")"
	codex_env_setup
	run_codex "Write outside the workspace."
	expect_turn_done
	assert_absent "$OUT/escaped.txt"
	told | grep -q 'sandbox=1' || fail "the command did not run in ward's sandbox: $(told)"
	told | grep -q "$OUT/escaped.txt: \(Read-only file system\|Permission denied\)" ||
		fail "the model was not told the shell's error: $(told)"
	told | grep -q 'Process exited with code [1-9]' || fail "the model was not told the failure: $(told)"
}

# Codex offers the model its other environments by id; the README's snippet
# leaves none but ward, so a call naming Codex's own is refused, not run on
# the host. (The file would say "written by " had Codex run it.)
t_codex_env_no_local() {
	start_mock responses exec_command "$("$PY" -c 'import json, sys
print(json.dumps({"cmd": sys.argv[1], "environment_id": "local"}))' "$MADE")"
	codex_env_setup
	run_codex "Write made.txt on the host."
	expect_turn_done
	assert_absent "$WS/made.txt"
	told | grep -q "unknown turn environment id .local." ||
		fail "the model was not told that there is no such environment: $(told)"
}

t_codex_mcp_writes_workspace() {
	start_mock responses mcp__ward/exec_command "$(cmd_json "$MADE")"
	codex_mcp_setup
	run_codex "Write made.txt."
	expect_turn_done
	assert_content "$WS/made.txt" "written by 1"
	told | grep -qF '"output":"written by 1\n"' || fail "the model was not told the command's output: $(told)"
	told | grep -qF '"exit_code":0' || fail "the model was not told the exit code: $(told)"
}

t_codex_mcp_refuses_outside() {
	start_mock responses mcp__ward/exec_command "$(cmd_json "echo sandbox=\$WARD_SANDBOX; echo escaped > $OUT/escaped.txt")"
	codex_mcp_setup
	run_codex "Write outside the workspace."
	expect_turn_done
	assert_absent "$OUT/escaped.txt"
	told | grep -q 'sandbox=1' || fail "the command did not run in ward's sandbox: $(told)"
	told | grep -qF '"sandbox_denied":true' || fail "the model was not told of the denial: $(told)"
	told | grep -qF "\"denials\":[\"create $OUT/escaped.txt by openat (Read-only file system; outside the writable roots)\"]" || fail "the model was not told what was refused: $(told)"
}

# ------------------------------------------------------------------ Claude Code

# claude ARG...: Claude Code in the workspace, with a home of its own and the
# mock as its API. CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC turns off what it
# would fetch (update checks, telemetry, error reports, feature flags); the
# three after it say the same for each. ENABLE_TOOL_SEARCH=false offers the
# MCP tools to the model directly rather than behind a search tool.
claude() {
	[ -x "$CLAUDE" ] || skip "Claude Code is not installed in $NODE_PREFIX (scripts/setup-node.sh)"
	mkdir -p "$T/home/.claude" "$T/tmp"
	LAST_CMD="claude $*"
	(cd "$WS" && timeout -k 5 "$CLIENT_TIMEOUT" env -i PATH="$CLIENT_PATH" HOME="$T/home" \
		TMPDIR="$T/tmp" CLAUDE_CONFIG_DIR="$T/home/.claude" LANG=C.UTF-8 TERM=dumb \
		NO_PROXY=127.0.0.1,localhost \
		ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY=mock-key-not-a-secret \
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
		DISABLE_ERROR_REPORTING=1 ENABLE_TOOL_SEARCH=false "$CLAUDE" "$@") \
		</dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
}

# run_claude PROMPT: `claude -p` as the README prints it: the README's
# mcpServers entry (the workspace for -C) in a file, that server only, its
# exec_command allowed up front.
run_claude() {
	local entry
	entry=$(grep -m 1 -F '{ "mcpServers": { "ward":' "$README") ||
		fail "README.md has no mcpServers entry for ward"
	printf '%s\n' "${entry//\/path\/to\/project/$WS}" >"$T/mcp.json"
	claude -p "$1" --mcp-config "$T/mcp.json" --strict-mcp-config \
		--allowedTools mcp__ward__exec_command --max-turns 3
	keep_records
}

t_claude_mcp_writes_workspace() {
	start_mock messages mcp__ward__exec_command "$(cmd_json "$MADE")"
	run_claude "Write made.txt."
	expect_turn_done
	assert_content "$WS/made.txt" "written by 1"
	told | grep -qF '"output":"written by 1\n"' || fail "the model was not told the command's output: $(told)"
	told | grep -qF '"exit_code":0' || fail "the model was not told the exit code: $(told)"
}

t_claude_mcp_refuses_outside() {
	start_mock messages mcp__ward__exec_command "$(cmd_json "echo sandbox=\$WARD_SANDBOX; echo escaped > $OUT/escaped.txt")"
	run_claude "Write outside the workspace."
	expect_turn_done
	assert_absent "$OUT/escaped.txt"
	told | grep -q 'sandbox=1' || fail "the command did not run in ward's sandbox: $(told)"
	told | grep -qF '"sandbox_denied":true' || fail "the model was not told of the denial: $(told)"
	told | grep -qF "\"denials\":[\"create $OUT/escaped.txt by openat (Read-only file system; outside the writable roots)\"]" || fail "the model was not told what was refused: $(told)"
}

# The README's `claude mcp add` line, run in the workspace, then `claude -p`
# with the server it added (no --mcp-config).
t_claude_mcp_added() {
	local add
	add=$(grep -m 1 -x 'claude mcp add ward -- ward mcp -C "$PWD"' "$README") ||
		fail "README.md has no 'claude mcp add ward' line"
	start_mock messages mcp__ward__exec_command "$(cmd_json "$MADE")"
	# The README's words as a shell reads them ($PWD is the workspace here).
	eval "claude ${add#claude }"
	[ "$WRC" = 0 ] || fail "claude mcp add failed ($WRC)"
	claude -p "Write made.txt." --allowedTools mcp__ward__exec_command --max-turns 3
	keep_records
	expect_turn_done
	assert_content "$WS/made.txt" "written by 1"
}

if [ ! -x "$NODE" ]; then
	[ "$MUST_WORK" = 1 ] && bail_out "the test clients are not installed in $NODE_PREFIX (scripts/setup-node.sh)"
	echo "1..0 # SKIP the test clients are not installed (run scripts/setup-node.sh)"
	exit 0
fi

tcase "codex, ward serve as its environment: a command writes in the workspace" t_codex_env_writes_workspace
tcase "codex, ward serve as its environment: a write outside is refused, the model told" t_codex_env_refuses_outside
tcase "codex, ward serve as its environment: Codex's own environment is not offered" t_codex_env_no_local
tcase "codex, ward mcp: a command writes in the workspace" t_codex_mcp_writes_workspace
tcase "codex, ward mcp: a write outside is refused, the model told" t_codex_mcp_refuses_outside
tcase "claude code, ward mcp: a command writes in the workspace" t_claude_mcp_writes_workspace
tcase "claude code, ward mcp: a write outside is refused, the model told" t_claude_mcp_refuses_outside
tcase "claude code, ward mcp added by 'claude mcp add': a command writes in the workspace" t_claude_mcp_added
finish
