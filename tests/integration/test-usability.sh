#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2119,SC2016
#
# Everyday use: compiling with gcc, python3, reading the host, and terminals: a
# program that needs a tty gets one, `tty` and the window size work (also when
# it changes), `ward run -- bash` is usable interactively with job control, and
# Ctrl-C reaches the command.
. "$(dirname "$0")/lib.sh"

t_gcc() {
	need_cmd gcc
	cat >"$WS/hello.c" <<'EOF'
#include <stdio.h>
int main(void) { puts("hello from gcc"); return 3; }
EOF
	w -- sh -c 'gcc -O1 -o hello hello.c && ./hello'
	expect_rc 3
	assert_eq "$LINE" "hello from gcc" "the compiled program's output"
	[ -x "$WS/hello" ] || fail "the binary is not on the host"
	assert_eq "$("$WS/hello")" "hello from gcc" "the binary run on the host"
}

t_python() {
	[ -n "$PY" ] || skip "python3 is not installed"
	w -- "$PY" -c '
import json, os, sqlite3, subprocess, tempfile
db = sqlite3.connect("data.db"); db.execute("create table t (x)"); db.execute("insert into t values (42)"); db.commit()
with tempfile.TemporaryDirectory() as d:
    open(os.path.join(d, "x"), "w").write("x")
print(json.dumps({"rows": db.execute("select x from t").fetchall(), "sub": subprocess.run(["echo", "ok"], capture_output=True, text=True).stdout.strip()}))'
	expect_rc 0
	assert_eq "$LINE" '{"rows": [[42]], "sub": "ok"}' "python output"
	assert_exists "$WS/data.db"
}

t_reads_host() {
	w -- sh -c 'cat /etc/os-release >/dev/null && ls / >/dev/null && id -u && uname -s'
	expect_rc 0
	assert_eq "$(tr '\n' ' ' <"$T/.run/stdout")" "$(id -u) Linux " "reads of the host"
	# Paths with spaces as the working directory.
	mkdir "$WS/with space"
	w -C "$WS/with space" -- "$PROBE" write "x y"
	expect_ok
	assert_exists "$WS/with space/x y"
}

t_tty() {
	in_tty "'$WARD' run -- '$PROBE' isatty 0"
	expect_ok isatty
	in_tty "'$WARD' run -- sh -c 'tty; \"\$0\" isatty 1; \"\$0\" isatty 2' '$PROBE'"
	assert_match "$LINE" "^/dev/(pts/[0-9]+|tty)" "tty(1) inside"
	[ "$(grep -c '^isatty: ok' "$T/.run/stdout")" = 2 ] || fail "stdout and stderr are not terminals: $(out)"
	in_tty "stty rows 33 cols 101; '$WARD' run -- stty size"
	assert_eq "$LINE" "33 101" "window size inside"
	# Not a terminal when ward's stdio is not.
	wp -- isatty 0
	expect_denied isatty ENOTTY EINVAL
	# The terminal is left as it was (cooked, echo on) after the run.
	in_tty "stty -g > '$T/before'; '$WARD' run -- true; stty -g > '$T/after'"
	assert_eq "$(cat "$T/after")" "$(cat "$T/before")" "terminal settings after the run"
}

t_winch() {
	in_tty "stty rows 30 cols 90; '$WARD' run -- sh -c 'trap \"stty size </dev/tty\" WINCH; stty size </dev/tty; : > \"\$0\"; sleep 3 & wait; sleep 0.2' '$WS/ready' & for i in \$(seq 100); do [ -e '$WS/ready' ] && break; sleep 0.05; done; stty rows 40 cols 120; wait"
	assert_stdout_has "30 90"
	assert_stdout_has "40 120"
}

# tty_session INPUT-SCRIPT COMMAND: runs COMMAND under script(1) fed by the shell
# snippet INPUT-SCRIPT (which prints keystrokes, with pauses).
tty_session() {
	need_cmd script
	LAST_CMD="script: $2"
	bash -c "$1" | timeout -k 3 "$WARD_TEST_TIMEOUT" script -qefc "$2" /dev/null 2>"$T/.run/stderr" |
		tr -d '\r' >"$T/.run/stdout"
	WRC=${PIPESTATUS[1]}
}

t_interactive_bash() {
	need_cmd bash
	tty_session 'sleep 0.5; printf "echo hi-\$((6*7))\n"; sleep 0.3; printf "sleep 30 &\n"; sleep 0.3; printf "jobs\n"; sleep 0.3; printf "kill %%1\n"; sleep 0.3; printf "exit 3\n"; sleep 1' \
		"'$WARD' run -- bash --norc --noprofile -i"
	assert_stdout_has "hi-42"
	assert_stdout_has "Running"
	grep -q -i -e 'no job control' -e 'cannot set terminal process group' "$T/.run/stdout" &&
		fail "job control is off: $(out)"
	assert_eq "$WRC" 3 "exit status of the interactive shell"
}

t_ctrl_c() {
	tty_session "for i in \$(seq 100); do [ -e '$WS/ready' ] && break; sleep 0.05; done; printf '\\003'; sleep 2" \
		"'$WARD' run -- sh -c 'trap \"echo got-int; exit 5\" INT; : > \"\$0\"; sleep 10 & wait' '$WS/ready'"
	assert_stdout_has got-int
	assert_eq "$WRC" 5 "exit status after Ctrl-C"
	# Without a handler the command dies of SIGINT: 130.
	rm -f "$WS/ready"
	tty_session "for i in \$(seq 100); do [ -e '$WS/ready' ] && break; sleep 0.05; done; sleep 0.1; printf '\\003'; sleep 2" \
		"'$WARD' run -- sh -c ': > \"\$0\"; exec \"\$1\" sleep 10' '$WS/ready' '$PROBE'"
	assert_eq "$WRC" 130 "exit status after Ctrl-C"
}

tcase "gcc compiles and the program runs" t_gcc
tcase "python3 with sqlite, tempfile, subprocess" t_python
tcase "the host is readable; odd working directories work" t_reads_host
tcase "a tty stays a tty: isatty, tty(1), window size, settings restored" t_tty
tcase "window size changes reach the command" t_winch
tcase "ward run -- bash is usable interactively, with job control" t_interactive_bash
tcase "Ctrl-C reaches the command" t_ctrl_c
finish
