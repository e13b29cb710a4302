#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# `ward mcp` at the protocol level (raw JSON-RPC lines through
# tests/helpers/mcp-raw.py) and through the MCP Inspector's CLI mode: version
# negotiation, errors that keep the server up, limits, shutdown with nothing
# left behind, the policy applied to every command.
. "$(dirname "$0")/lib.sh"
# shellcheck source=node-prefix.sh
. "$WARD_SRC/tests/integration/node-prefix.sh"

RAW=$WARD_SRC/tests/helpers/mcp-raw.py
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
INITED='{"jsonrpc":"2.0","method":"notifications/initialized"}'

# mcp [ward-mcp-options...] <<< LINES: a raw session; output in $T/.run/stdout.
mcp() {
	[ -n "$PY" ] || skip "python3 is needed"
	LAST_CMD="ward mcp $*"
	timeout -k 3 60 "$PY" "$RAW" -- "$WARD" mcp "$@" >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
}

# reply ID: the response line for request ID.
reply() { grep -m 1 -E "\"id\":$1[,}]" "$T/.run/stdout"; }

# jget LINE PYTHON-EXPR: evaluates EXPR on the parsed line (as m).
jget() { "$PY" -c "import json,sys; m=json.loads(sys.argv[1]); print($2)" "$1"; }

t_negotiation() {
	mcp <<<"$INIT"
	jget "$(reply 1)" 'm["result"]["protocolVersion"]' | grep -qx 2025-06-18 ||
		fail "a supported revision is echoed"
	mcp <<<'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
	jget "$(reply 1)" 'm["result"]["protocolVersion"]' | grep -qx 2025-11-25 ||
		fail "an unknown revision is answered with the latest"
	mcp <<EOS
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
EOS
	jget "$(reply 2)" '"outputSchema" in m["result"]["tools"][0]' | grep -qx False ||
		fail "no outputSchema for 2024-11-05"
}

t_errors_keep_the_server_up() {
	mcp <<EOS
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"ping"}
$INIT
{bad json
[{"jsonrpc":"2.0","id":9,"method":"ping"}]
{"id":4,"method":"ping"}
{"jsonrpc":"2.0","id":5,"method":"resources/list"}
{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{}}}
{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"true","bogus":1}}}
{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"write_stdin","arguments":{"session_id":"x"}}}
{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"echo alive"}}}
EOS
	jget "$(reply 2)" 'm["error"]["code"]' | grep -qx -- -32600 || fail "tools/list before initialize"
	jget "$(reply 3)" 'm["result"]' | grep -qx '{}' || fail "ping before initialize"
	grep -q '"id":null,"error":{"code":-32700' "$T/.run/stdout" || fail "parse error with id null"
	grep -q '"id":null,"error":{"code":-32600,"message":"batches are not supported"' \
		"$T/.run/stdout" || fail "batches are refused"
	jget "$(reply 4)" 'm["error"]["code"]' | grep -qx -- -32600 || fail "missing jsonrpc member"
	jget "$(reply 5)" 'm["error"]["code"]' | grep -qx -- -32601 || fail "unknown method"
	jget "$(reply 6)" 'm["error"]["code"]' | grep -qx -- -32602 || fail "unknown tool"
	# A member ward does not know is ignored (a newer client keeps working), as Codex's server does.
	jget "$(reply 7)" 'not m["result"]["isError"] and m["result"]["structuredContent"]["exit_code"] == 0' |
		grep -qx True || fail "an unknown argument is ignored"
	jget "$(reply 8)" 'm["result"]["isError"]' | grep -qx True || fail "bad session_id: a tool error"
	jget "$(reply 10)" 'm["result"]["structuredContent"]["output"]' | grep -qx alive ||
		fail "the server still works after all that"
	grep -qx 'exit=0' "$T/.run/stdout" || fail "ward mcp exits 0 when stdin closes"
}

t_oversized_message() {
	"$PY" -c '
import sys
sys.stdout.write("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"" + "a" * (17 << 20) + "\"}}\n")
sys.stdout.write("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")' >"$T/big"
	mcp <"$T/big"
	jget "$(reply 1)" 'm["error"]["code"]' | grep -qx -- -32600 ||
		fail "an oversized message gets -32600 with its id"
	jget "$(reply 2)" 'm["result"]' | grep -qx '{}' || fail "the next message is served"
}

t_full_store() {
	mcp --max-sessions 1 <<EOS
$INIT
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"sleep 100","yield_time_ms":250}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"sleep 100","yield_time_ms":250}}}
EOS
	jget "$(reply 2)" '"session_id" in m["result"]["structuredContent"]' | grep -qx True ||
		fail "the first session starts"
	jget "$(reply 3)" 'm["result"]["isError"] and "too many sessions" in m["result"]["content"][0]["text"]' |
		grep -qx True || fail "a full store is a clear tool error"
}

t_eof_kills_everything() {
	local m
	m=$(marker eof)
	mcp <<EOS
$INIT
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"$PROBE sleep 1000 $m","yield_time_ms":500}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"setsid $PROBE sleep 1000 $m & $PROBE sleep 1000 $m","tty":true,"yield_time_ms":500}}}
EOS
	grep -qx 'exit=0' "$T/.run/stdout" || fail "exit 0 at EOF"
	expect_gone "$m"
}

t_signals_and_kill() {
	local m sig pid
	for sig in TERM KILL; do
		m=$(marker "sig$sig")
		"$PY" "$RAW" --hold 30 -- "$WARD" mcp >"$T/.run/stdout" 2>"$T/.run/stderr" <<EOS &
$INIT
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"$PROBE sleep 1000 $m","yield_time_ms":250}}}
EOS
		BG_PIDS+=("$!")
		wait_for grep -q '"id":2' "$T/.run/stdout" || fail "the session did not start"
		pid=$(sed -n 's/^pid=//p' "$T/.run/stdout")
		# The reply may come before the command's exec on a loaded machine (the yield
		# window counts from the spawn): wait for it rather than look once.
		wait_for pgrep -f -- "$m" >/dev/null || fail "the sandboxed sleeper runs"
		kill -"$sig" "$pid"
		expect_gone "$m"
		if [ "$sig" = TERM ]; then
			wait_for grep -qx 'exit=0' "$T/.run/stdout" || fail "SIGTERM: exit 0"
		fi
	done
}

t_policy_applies() {
	echo TOPSECRET >"$OUT/secret"
	mcp --deny-read "$OUT/secret" -C "$WS" <<EOS
$INIT
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"cat $OUT/secret; echo x > $OUT/new; echo ok > mine"}}}
EOS
	local r
	r=$(reply 2)
	jget "$r" '"TOPSECRET" in m["result"]["structuredContent"]["output"]' | grep -qx False ||
		fail "a denied read is unreadable"
	assert_absent "$OUT/new"
	assert_content "$WS/mine" ok
}

t_bad_options() {
	timeout 10 "$WARD" mcp --max-sessions 0 </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	expect_one_line_error
	timeout 10 "$WARD" mcp surplus </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	expect_one_line_error
	timeout 10 "$WARD" mcp --timeout 5 </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	expect_one_line_error
	timeout 10 "$WARD" mcp --login-snapshot maybe </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	expect_one_line_error
}

t_inspector_cli() {
	local insp=$NODE_PREFIX/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js
	[ -x "$NODE" ] && [ -f "$insp" ] || skip "the MCP Inspector is not installed (scripts/setup-node.sh)"
	timeout 60 "$NODE" "$insp" --cli "$WARD" mcp -C "$WS" --no-login --method tools/list \
		>"$T/.run/stdout" 2>"$T/.run/stderr" || fail "inspector tools/list failed"
	for t in exec_command write_stdin list_sessions kill_session; do
		grep -q "\"name\": \"$t\"" "$T/.run/stdout" || fail "inspector does not list $t"
	done
	timeout 60 "$NODE" "$insp" --cli "$WARD" mcp -C "$WS" --no-login --method tools/call \
		--tool-name exec_command --tool-arg 'cmd=echo from-inspector > seen; cat seen; exit 2' \
		>"$T/.run/stdout" 2>"$T/.run/stderr" || fail "inspector tools/call failed"
	grep -q 'Process exited with code 2' "$T/.run/stdout" || fail "inspector: exit code"
	grep -q '"output": "from-inspector\\n"' "$T/.run/stdout" || fail "inspector: output"
	assert_content "$WS/seen" from-inspector
}

# A script that sends its calls and closes stdin at once still gets their results.
t_eof_lets_quick_calls_finish() {
	[ -n "$PY" ] || skip "python3 is needed"
	printf '%s\n' "$INIT" \
		'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"sleep 0.3; echo finished-$((6*7))"}}}' |
		timeout 30 "$WARD" mcp -C "$WS" --no-login >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 0
	jget "$(reply 2)" 'm["result"]["structuredContent"]["output"] == "finished-42\n" and m["result"]["structuredContent"]["exit_code"] == 0' |
		grep -qx True || fail "the call in flight finished on its own: $(reply 2)"
}

# SIGTERM: every session dies, the call waiting on one is answered, exit 0.
t_sigterm_answers_waiting_calls() {
	local m fifo pid
	[ -n "$PY" ] || skip "python3 is needed"
	m=$(marker term)
	fifo=$T/.run/in
	mkfifo "$fifo"
	"$WARD" mcp -C "$WS" --no-login <"$fifo" >"$T/.run/stdout" 2>"$T/.run/stderr" &
	pid=$!
	BG_PIDS+=("$pid")
	exec 7>"$fifo"
	printf '%s\n' "$INIT" \
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"exec_command\",\"arguments\":{\"cmd\":\"$PROBE sleep 1000 $m\",\"yield_time_ms\":250}}}" >&7
	wait_for grep -q '"id":2' "$T/.run/stdout" || fail "the session did not start"
	local sid
	sid=$(jget "$(reply 2)" 'm["result"]["structuredContent"]["session_id"]')
	printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"write_stdin\",\"arguments\":{\"session_id\":$sid,\"yield_time_ms\":60000}}}" >&7
	sleep 0.3
	kill -TERM "$pid"
	wait "$pid"
	WRC=$?
	exec 7>&-
	expect_rc 0
	jget "$(reply 3)" '"exit_code" in m["result"]["structuredContent"]' | grep -qx True ||
		fail "the waiting poll is answered with the end: $(reply 3)"
	expect_gone "$m"
}

# A progress token is kept for the whole call: a huge one is refused.
t_progress_token_capped() {
	local big
	big=$(head -c 2000 /dev/zero | tr '\0' a)
	mcp <<EOS
$INIT
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"true"},"_meta":{"progressToken":"$big"}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"echo ok"},"_meta":{"progressToken":"small"}}}
EOS
	jget "$(reply 2)" 'm["error"]["code"]' | grep -qx -- -32602 || fail "a 2000-byte token is -32602"
	jget "$(reply 3)" 'm["result"]["structuredContent"]["output"]' | grep -qx ok ||
		fail "the next call is served"
}

# What an approval keeps while the person is asked is bounded: a command past the
# session's 128 KiB limit is refused before anything keeps it or asks (twenty 8 MB
# commands waiting for answers held 1 GB), and at most 16 questions wait at once (each
# keeps its command several times over; 256 of 128 KiB held 250 MiB).
t_approval_questions_bounded() {
	[ -n "$PY" ] || skip "python3 is needed"
	LAST_CMD="ward mcp -a untrusted (questions)"
	timeout -k 3 120 "$PY" - "$WARD" "$WS" >"$T/.run/stdout" 2>"$T/.run/stderr" <<'EOPY'
import json, subprocess, sys, threading, time
ward, ws = sys.argv[1:3]
p = subprocess.Popen([ward, "mcp", "-C", ws, "-a", "untrusted", "--audit-log", "none"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
got = []
def reader():
    for line in p.stdout:
        got.append(json.loads(line))
threading.Thread(target=reader, daemon=True).start()
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
      "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "1"}}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
def call(i, cmd):
    send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "exec_command",
          "arguments": {"cmd": cmd}}})
for i in range(6):
    call(100 + i, "frob " + "a" * (8 << 20))
for i in range(40):
    call(200 + i, "frob " + "b" * 128000)
for _ in range(300):
    if sum(1 for m in got if isinstance(m.get("id"), int) and m["id"] >= 100 and "result" in m) >= 30:
        break
    time.sleep(0.1)
time.sleep(0.5)
texts = {m["id"]: m["result"]["content"][0]["text"] for m in got
         if "result" in m and isinstance(m.get("id"), int) and m["id"] >= 100}
asked = sum(1 for m in got if m.get("method") == "elicitation/create")
long_refused = sum(1 for i in range(6) if "cmd is longer than 131071 bytes" in texts.get(100 + i, ""))
busy = sum(1 for i in range(40) if "16 questions already wait" in texts.get(200 + i, ""))
peak = int([l for l in open("/proc/%d/status" % p.pid) if l.startswith("VmHWM")][0].split()[1]) // 1024
print("asked=%d long_refused=%d busy=%d peak_mib=%d" % (asked, long_refused, busy, peak))
p.kill()
EOPY
	WRC=$?
	local line
	line=$(grep '^asked=' "$T/.run/stdout") || fail "no summary: $(out) $(err)"
	[[ $line =~ asked=16\ long_refused=6\ busy=24\ peak_mib=([0-9]+) ]] || fail "$line"
	sanitized || [ "${BASH_REMATCH[1]}" -le 64 ] || fail "ward mcp grew with the questions it keeps: $line"
}

# Typed input is kept once: a write_stdin's chars, once in the session's stdin queue
# (which the store's 64 MiB input budget counts), are not kept again by its call (32
# calls of 1 MiB held 64 MiB for 32 counted). A session keeps the first 1,024 bytes of
# its command for list_sessions, not all 128 KiB.
t_typed_input_kept_once() {
	[ -n "$PY" ] || skip "python3 is needed"
	LAST_CMD="ward mcp (typed input)"
	timeout -k 3 120 "$PY" - "$WARD" "$WS" >"$T/.run/stdout" 2>"$T/.run/stderr" <<'EOPY'
import json, subprocess, sys, threading, time
ward, ws = sys.argv[1:3]
p = subprocess.Popen([ward, "mcp", "-C", ws, "--audit-log", "none"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
got = {}
def reader():
    for line in p.stdout:
        m = json.loads(line)
        if "id" in m:
            got[m["id"]] = m
threading.Thread(target=reader, daemon=True).start()
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
def wait(ids, secs=60):
    for _ in range(secs * 10):
        if all(i in got for i in ids):
            return [got[i] for i in ids]
        time.sleep(0.1)
    raise SystemExit("unanswered: %r" % [i for i in ids if i not in got][:3])
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
      "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
wait([1])
ids = []
for i in range(32):
    send({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": {"name": "exec_command",
          "arguments": {"cmd": "sleep 60 # " + "c" * 2000, "tty": True, "yield_time_ms": 250}}})
for a in wait([100 + i for i in range(32)]):
    ids.append(a["result"]["structuredContent"]["session_id"])
base = int([l for l in open("/proc/%d/status" % p.pid) if l.startswith("VmRSS")][0].split()[1]) // 1024
for k, sid in enumerate(ids):
    send({"jsonrpc": "2.0", "id": 200 + k, "method": "tools/call", "params": {"name": "write_stdin",
          "arguments": {"session_id": sid, "chars": "x" * (1 << 20), "yield_time_ms": 20000}}})
time.sleep(4)
peak = int([l for l in open("/proc/%d/status" % p.pid) if l.startswith("VmHWM")][0].split()[1]) // 1024
send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_sessions", "arguments": {}}})
listed = wait([3])[0]["result"]["structuredContent"]["sessions"]
print("base_mib=%d peak_mib=%d" % (base, peak))
print("listed=%d command_bytes=%d" % (len(listed), max(len(x["command"].encode()) for x in listed)))
p.kill()
EOPY
	WRC=$?
	local line
	line=$(grep '^base_mib=' "$T/.run/stdout") || fail "no summary: $(out) $(err)"
	[[ $line =~ base_mib=([0-9]+)\ peak_mib=([0-9]+) ]] || fail "$line"
	# 32 MiB queued, plus what a message costs while it is read; 64 MiB more before.
	sanitized || [ $((BASH_REMATCH[2] - BASH_REMATCH[1])) -le 56 ] || fail "the typed input was kept twice: $line"
	assert_eq "$(grep '^listed=' "$T/.run/stdout")" "listed=32 command_bytes=1027" \
		"list_sessions shows the first 1,024 bytes of each command"
}

# The structured result is what a model reads (Codex and Claude Code pass it on as JSON
# and drop the text): the text's information, its wall time to 0.1 ms, each refusal as
# the text's sentence; list_sessions answers one shape in text and structure.
t_structured_is_what_the_model_reads() {
	# Outside the writable roots but the user's own on the host: refused by the sandbox for
	# any uid (a write to /etc would be refused by the host's own permissions for uid 65534).
	# Without a login shell: a login command waits for its shell's snapshot, and
	# list_sessions, sent at once, would not see it yet.
	mkdir -p "$T/outside"
	local target=$T/outside/ward-mcp-model
	mcp --no-login --audit-log "$T/audit.jsonl" <<EOS
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"codex-mcp-client","version":"1"}}}
$INITED
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"sleep 0.05; touch $target; echo rc=\$?"},"_meta":{"callId":"call_7","threadId":"th-1"}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"sleep 30","yield_time_ms":250}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}
EOS
	local r2 r4
	r2=$(reply 2)
	[ -n "$r2" ] || fail "no reply to the command"
	[ ! -e "$target" ] || fail "the write reached the host"
	# The wall time as written on the wire: at most four decimals.
	grep -m 1 -E '"id":2[,}]' "$T/.run/stdout" | grep -qE '"wall_time_seconds":[0-9]+(\.[0-9]{1,4})?[,}]' ||
		fail "the wall time is not written to 0.1 ms: $(grep -o '"wall_time_seconds":[^,]*' "$T/.run/stdout" | head -1)"
	jget "$r2" 'list(m["result"]["structuredContent"])' |
		grep -qx "\['chunk_id', 'wall_time_seconds', 'exit_code', 'original_token_count', 'limits', 'usage', 'limit', 'sandbox_denied', 'denials', 'output'\]" ||
		fail "the structured result's members: $(jget "$r2" 'list(m["result"]["structuredContent"])')"
	jget "$r2" 'm["result"]["structuredContent"]["denials"]' |
		grep -qF "['create $target by openat (Read-only file system; outside the writable roots)']" ||
		fail "the refusal as the text says it: $(jget "$r2" 'm["result"]["structuredContent"]["denials"]')"
	jget "$r2" 'm["result"]["content"][0]["text"]' |
		grep -qF "Sandbox denied: create $target by openat (Read-only file system; outside the writable roots)" ||
		fail "the text says the refusal too"
	jget "$r2" 'm["result"]["structuredContent"]["output"]' | grep -qx "rc=1" || fail "the output"
	r4=$(reply 4)
	jget "$r4" 'json.loads(m["result"]["content"][0]["text"]) == m["result"]["structuredContent"]' |
		grep -qx True || fail "list_sessions: the text is the structured result"
	jget "$r4" '"sleep 30" in [x["command"] for x in m["result"]["structuredContent"]["sessions"] if x["running"]]' |
		grep -qx True || fail "list_sessions lists the running session: $r4"
	# The audit log says which tool call of which client ran what.
	grep '"event":"start"' "$T/audit.jsonl" | grep '"client":"codex-mcp-client"' |
		grep '"thread":"th-1"' | grep -q '"tool_call":"call_7"' ||
		fail "the audit log has the start with the client's thread and tool call: $(cat "$T/audit.jsonl")"
	[ "$(grep -c '"event":"start"' "$T/audit.jsonl")" = 2 ] || fail "one start record per command"
}

# Under a deny-read directory, a workdir gets the sandbox's answer, the same for a
# hidden directory, a hidden file and a missing path (the server does not look itself).
t_workdir_under_deny_read() {
	mkdir -p "$T/hidden/dir"
	echo secret >"$T/hidden/file"
	local d answers=""
	for d in dir file nope; do
		mcp --deny-read "$T/hidden" <<EOS
$INIT
$INITED
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"true","workdir":"$T/hidden/$d"}}}
EOS
		answers+="$(jget "$(reply 2)" 'm["result"]["structuredContent"].get("exit_code"), m["result"]["structuredContent"].get("note","").replace("'"$T/hidden/$d"'","P")')"$'\n'
	done
	[ "$(printf '%s' "$answers" | sort -u | wc -l)" = 1 ] ||
		fail "the three answers differ: $answers"
	printf '%s' "$answers" | grep -q "^125 " || fail "the command does not start: $answers"
}

# ------------------------------------------------------------------ login shells

# exec_line ID ARGS-JSON: a tools/call of exec_command.
exec_line() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"exec_command","arguments":%s}}\n' "$1" "$2"; }

# out ID: the output of result ID; note ID: its note ("" without one).
out() { jget "$(reply "$1")" 'm["result"]["structuredContent"]["output"]'; }
note() { jget "$(reply "$1")" 'm["result"]["structuredContent"].get("note", "")'; }

# noisy_home [LINE]: a home whose login profile counts its runs in the workspace,
# exports, defines a function and an alias, sets variables ward sets itself, and is
# noisy: stdout, stderr, and a write the sandbox refuses (as pyenv's rehash in a
# read-only home). LINE ends the profile.
noisy_home() {
	export HOME=$T/home
	mkdir -p "$HOME"
	cat >"$HOME/.bash_profile" <<EOF
echo ran >>'$WS/runs'
export PROFILE_VAR=from-profile
export PAGER=less NO_COLOR=profile TERM=profile WARD_MINE=profile
myfn() { echo "myfn \$1"; }
alias myal='echo aliased'
shopt -s expand_aliases
echo profile-noise-err >&2
echo profile-noise-out
touch /etc/ward-profile-ro
${1:-}
EOF
}

# The login shell runs once, in a sandbox: each login command sees its variables,
# functions and aliases, none of its output, none of its refusals; ward's own
# variables win; login:false and a workdir are as before; nothing lands in the
# workspace but what the profile itself wrote there.
t_login_snapshot() {
	noisy_home
	mkdir "$WS/sub"
	local want='from-profile
myfn x
aliased
cat 1 dumb ward'
	mcp -C "$WS" --shell /bin/bash --env-set WARD_MINE=ward --audit-log none <<EOS
$INIT
$(exec_line 2 '{"cmd":"echo \"$PROFILE_VAR\"; myfn x; myal; echo \"$PAGER $NO_COLOR $TERM $WARD_MINE\""}')
$(exec_line 3 '{"cmd":"echo \"$PROFILE_VAR $TERM\"; myfn y; ls -l /proc/$$/fd/ | grep -c memfd","tty":true}')
$(exec_line 4 '{"cmd":"echo \"[$PROFILE_VAR]\"; type myfn >/dev/null 2>&1 || echo no-fn","login":false}')
$(exec_line 5 '{"cmd":"echo \"$PWD\"; pwd; shopt -q login_shell || echo not-login","workdir":"sub"}')
$(exec_line 6 '{"cmd":"cat; echo stdin-empty"}')
$(exec_line 7 '{"cmd":"env | grep -c -e __ward -e BASH_ENV","yield_time_ms":5000}')
EOS
	[ -n "$(reply 7)" ] || fail "no reply to the last command"
	assert_eq "$(out 2)" "$want" "a login command"
	out 3 | tr -d '\r' | grep -qx 'from-profile xterm-256color' || fail "a terminal command: $(out 3)"
	out 3 | tr -d '\r' | grep -qx 'myfn y' || fail "a terminal command's function: $(out 3)"
	out 3 | tr -d '\r' | grep -qx '0' || fail "the terminal command keeps no memfd: $(out 3)"
	assert_eq "$(out 4)" "[]
no-fn" "login:false"
	assert_eq "$(out 5)" "$WS/sub
$WS/sub
not-login" "a workdir"
	assert_eq "$(out 6)" "stdin-empty" "stdin after the snapshot"
	assert_eq "$(out 7)" "0" "no helper variable is left"
	local i
	for i in 2 3 4 5 6 7; do
		reply "$i" | grep -q profile-noise && fail "result $i has the profile's output: $(reply "$i")"
		reply "$i" | grep -q ward-profile-ro && fail "result $i has the profile's refusal: $(reply "$i")"
		[ "$(jget "$(reply "$i")" 'm["result"]["structuredContent"]["sandbox_denied"]')" = False ] ||
			fail "result $i says the sandbox denied something: $(reply "$i")"
		[ -z "$(note "$i")" ] || fail "result $i has a note: $(note "$i")"
	done
	assert_eq "$(cat "$WS/runs")" "ran" "the profile ran once"
	assert_eq "$(ls -A "$WS" | tr '\n' ' ')" "runs sub " "the workspace holds nothing else"
	assert_eq "$(ls -A "$HOME" | tr '\n' ' ')" ".bash_profile " "the home holds nothing else"
	assert_absent /etc/ward-profile-ro

	# Off: the profile runs in every login command, noise and all, as before. (Without
	# recording: two sandboxes at once appending to one file would each see their own
	# copy, and the second's append would be a conflict at its end; docs/changes.md.)
	rm "$WS/runs"
	mcp -C "$WS" --shell /bin/bash --login-snapshot=off --record off <<EOS
$INIT
$(exec_line 2 '{"cmd":"echo \"$PROFILE_VAR\""}')
$(exec_line 3 '{"cmd":"echo \"$PROFILE_VAR\""}')
EOS
	assert_eq "$(wc -l <"$WS/runs")" 2 "off: the profile runs in each command"
	out 2 | grep -q profile-noise-err || fail "off: the profile's output is the command's: $(out 2)"
}

# A login shell that hangs, or leaves more than the cap, falls back to -lc,
# said once; one that prints 10 MiB is still used (what it prints goes nowhere).
t_login_snapshot_fallback() {
	# The capture's script is in BASH_EXECUTION_STRING: only the capture hangs.
	noisy_home 'case $BASH_EXECUTION_STRING in *__ward_s*) sleep 60 ;; esac'
	mcp -C "$WS" --shell /bin/bash <<EOS
$INIT
$(exec_line 2 '{"cmd":"echo \"$PROFILE_VAR\""}')
$(exec_line 3 '{"cmd":"echo \"$PROFILE_VAR\""}')
EOS
	note 2 | grep -q "no snapshot of the login shell (the login shell took longer than 10 s)" ||
		fail "a hanging profile: $(reply 2)"
	out 2 | grep -qx from-profile || fail "the command ran -lc: $(out 2)"
	[ -z "$(note 3)" ] || fail "the fallback is said once: $(note 3)"
	out 3 | grep -q profile-noise-err || fail "-lc: the profile's output is the command's: $(out 3)"

	rm -f "$WS/runs"
	noisy_home 'eval "bigfn() { echo $(head -c 2000000 /dev/zero | tr "\0" a); }"'
	mcp -C "$WS" --shell /bin/bash <<EOS
$INIT
$(exec_line 2 '{"cmd":"echo \"$PROFILE_VAR\""}')
EOS
	note 2 | grep -q "no snapshot of the login shell (its dump is larger than 960 KiB)" ||
		fail "a profile too large: $(reply 2)"
	out 2 | grep -qx from-profile || fail "the command ran -lc: $(out 2)"

	rm -f "$WS/runs"
	noisy_home 'case $BASH_EXECUTION_STRING in *__ward_s*) head -c 10485760 /dev/zero; head -c 10485760 /dev/zero >&2 ;; esac'
	mcp -C "$WS" --shell /bin/bash <<EOS
$INIT
$(exec_line 2 '{"cmd":"echo \"$PROFILE_VAR\""}')
$(exec_line 3 '{"cmd":"myfn z","tty":true}')
EOS
	assert_eq "$(out 2)" from-profile "a profile printing 10 MiB"
	[ -z "$(note 2)" ] || fail "a profile printing 10 MiB: $(note 2)"
	out 3 | tr -d '\r' | grep -qx 'myfn z' || fail "a profile printing 10 MiB, tty: $(out 3)"
	assert_eq "$(cat "$WS/runs")" "ran" "the profile ran once"
}

# zsh: functions, aliases (global ones too), options and variables of .zprofile
# and .zshrc; sh: the exported variables, with a terminal too.
t_login_snapshot_zsh_sh() {
	export HOME=$T/home
	mkdir -p "$HOME"
	if command -v zsh >/dev/null; then
		cat >"$HOME/.zprofile" <<EOF
echo ran >>'$WS/zruns'
export ZPROF_VAR=from-zprofile
echo zprofile-noise >&2
EOF
		cat >"$HOME/.zshrc" <<'EOF'
zfn() { echo "zfn $1"; }
alias zal='echo zaliased'
alias -g GG='| tr a-z A-Z'
setopt extendedglob
EOF
		mcp -C "$WS" --shell "$(command -v zsh)" <<EOS
$INIT
$(exec_line 2 '{"cmd":"echo $ZPROF_VAR; zfn x; zal; echo up GG; [[ -o extendedglob ]] && echo eg; [[ -o login ]] || echo not-login; echo $TERM"}')
$(exec_line 3 '{"cmd":"zfn y; zal; ls -l /proc/$$/fd/ | grep -c memfd","tty":true}')
EOS
		assert_eq "$(out 2)" "from-zprofile
zfn x
zaliased
UP
eg
not-login
dumb" "zsh"
		assert_eq "$(out 3 | tr -d '\r')" "zfn y
zaliased
0" "zsh with a terminal"
		out 3 | grep -q zprofile-noise && fail "zsh with a terminal: $(out 3)"
		assert_eq "$(cat "$WS/zruns")" "ran" "zsh's profile ran once"
	fi
	printf 'echo ran >>%s\nexport SH_VAR="from profile"\necho sh-noise >&2\n' "'$WS/shruns'" \
		>"$HOME/.profile"
	mcp -C "$WS" --shell /bin/sh <<EOS
$INIT
$(exec_line 2 '{"cmd":"echo \"$SH_VAR\" $TERM"}')
$(exec_line 3 '{"cmd":"echo \"$SH_VAR\" $TERM ${__ward_snapshot-none}; ls -l /proc/$$/fd/ | grep -c memfd","tty":true}')
EOS
	assert_eq "$(out 2)" "from profile dumb" "sh"
	out 3 | tr -d '\r' | grep -qx 'from profile xterm-256color none' || fail "sh with a terminal: $(out 3)"
	out 3 | tr -d '\r' | grep -qx '0' || fail "sh with a terminal keeps no memfd: $(out 3)"
	assert_eq "$(cat "$WS/shruns")" "ran" "sh's profile ran once"
	command -v zsh >/dev/null || skip "zsh is not installed (sh passed)"
}

tcase "version negotiation and outputSchema by revision" t_negotiation
tcase "the structured result is what the model reads; list_sessions has one shape; the audit log names the tool call" t_structured_is_what_the_model_reads
tcase "a workdir under a deny-read directory: the sandbox's answer, the same for every kind" t_workdir_under_deny_read
tcase "malformed input gets JSON-RPC errors and the server goes on" t_errors_keep_the_server_up
tcase "an oversized message is refused, the next one served" t_oversized_message
tcase "a full session store is a clear tool error" t_full_store
tcase "stdin EOF kills every session, exit 0" t_eof_kills_everything
tcase "SIGTERM and SIGKILL leave nothing running" t_signals_and_kill
tcase "stdin EOF: calls in flight finish on their own first" t_eof_lets_quick_calls_finish
tcase "SIGTERM answers the calls waiting" t_sigterm_answers_waiting_calls
tcase "a progress token longer than 1024 bytes is refused" t_progress_token_capped
tcase "typed input is kept once; a session keeps 1 KiB of its command" t_typed_input_kept_once
tcase "approval questions keep bounded memory: 128 KiB commands, 16 questions" t_approval_questions_bounded
tcase "the policy options apply to every command" t_policy_applies
tcase "bad options are one-line errors (125)" t_bad_options
tcase "MCP Inspector CLI lists and calls the tools" t_inspector_cli
tcase "login commands: the profile runs once, its noise nowhere, ward's variables win; off: -lc" t_login_snapshot
tcase "login shell snapshot: a hang or a dump over the cap falls back to -lc, said once" t_login_snapshot_fallback
tcase "login shell snapshot of zsh (functions, aliases, options) and sh (variables)" t_login_snapshot_zsh_sh
finish
