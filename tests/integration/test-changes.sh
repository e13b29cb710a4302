#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2016,SC2034
#
# Review and undo (docs/changes.md): every kind of change held then
# discarded (the host byte-identical), held then applied (the host equals
# what the command saw), recorded then undone (the host byte-identical to
# before); git commit and checkout; conflicts on apply and on undo; ward
# killed during an apply and an undo (no half file, a rerun finishes or
# rolls back); a 1 GiB file appended to under --hold; an interactive session
# with hold; the journal's bounds and its "cannot be undone" list; the
# journal out of the sandbox's reach; protected paths; a symlink swapped in
# before an apply; a damaged record; the fallback's refusal.
. "$(dirname "$0")/lib.sh"

# The journal of each case is its own.
changes_env() {
	# overlayfs takes no overlayfs as an upper layer: a container's own root cannot hold one.
	case $(stat -f -c %T "$T") in
	overlayfs) skip_env "the test directory's filesystem (overlayfs: a container's root) cannot hold a layer" ;;
	esac
	export WARD_CHANGES_DIR=$T/journal
	unset WARD_CHANGES_MAX_FILE WARD_CHANGES_MAX_RUN WARD_CHANGES_MAX_TOTAL WARD_CHANGES_MAX_RUNS
}

# wc_ [ARGS...]: `ward ARGS` (changes, undo), output to $T/.run, status in WRC.
wx() {
	LAST_CMD="ward $*"
	timeout -k 3 "$WARD_TEST_TIMEOUT" "$WARD" "$@" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
}

# A listing of a tree that compares what matters: types, modes, sizes of
# files, link counts, symlink targets, and every file's bytes (.git included).
# Not a directory's link count: inside the layer a merged directory shows 1
# (an overlayfs limit, docs/changes.md).
view() {
	(
		cd "$1" || exit 1
		find . ! -type d -printf '%y %m %s %n %l %p\n' | sort
		find . -type d -printf 'd %m %p\n' | sort
		find . -type f -print0 | sort -z | xargs -0 -r md5sum
	)
}

# The tree every kind of change starts from.
make_tree() {
	printf 'content\n' >mod.txt
	printf 'truncate me\n' >trunc.txt
	printf 'append\n' >app.txt
	printf 'delete me\n' >del.txt
	printf 'rename me\n' >ren.txt
	mkdir -p rdir/sub emptydir
	printf 'in a dir\n' >rdir/sub/f
	printf 'mode\n' >chm.txt
	ln -s mod.txt oldlink
	printf 'linked\n' >hl.txt
	printf 'binary\0here' >bin.dat
	git init -q -b main repo
	(cd repo && printf 'one\n' >f && git add f && git commit -qm one &&
		git checkout -qb other && printf 'two\n' >f && printf 'g\n' >g && git add -A &&
		git commit -qm two && git checkout -q main)
}

# Every kind of change, then the command's own view of the workspace on stdout.
cat >"$BASE/every-kind.sh" <<'EOF'
set -e
echo created >created.txt
printf 'X' | dd of=mod.txt bs=1 seek=2 conv=notrunc 2>/dev/null
: >trunc.txt
echo more >>app.txt
rm del.txt
mv ren.txt renamed.txt
mv rdir rdir2
chmod 700 chm.txt
ln -s created.txt newlink
ln -sf app.txt oldlink
ln hl.txt hl2.txt
mkdir newdir
rmdir emptydir
printf 'new\0bin' >bin.dat
(cd repo && git checkout -q other && echo three >>f && git commit -qam three)
echo ---view---
EOF

run_every_kind() { # run_every_kind WARD-RUN-OPTIONS...
	w "$@" -- sh -c ". '$BASE/every-kind.sh'; $(declare -f view); view ."
}

t_held_discarded() {
	changes_env
	make_tree
	sleep 0.05
	view . >"$T/before"
	run_every_kind --hold=keep
	expect_rc 0
	view . >"$T/held"
	diff "$T/before" "$T/held" >/dev/null || fail "the host changed while the changes were held"
	wx changes show
	expect_rc 0
	for w in added modified deleted mode renamed; do
		grep -q "^  $w " "$T/.run/stdout" || fail "the summary lacks '$w': $(out)"
	done
	grep -q 'bin.dat.*binary' "$T/.run/stdout" || fail "bin.dat not shown as binary"
	wx changes --diff
	expect_rc 0
	assert_stdout_has "diff --git a/app.txt b/app.txt"
	assert_stdout_has "+more"
	wx changes discard
	expect_rc 0
	view . >"$T/after"
	diff "$T/before" "$T/after" || fail "the host is not byte-identical after discard"
	wx changes show
	assert_stdout_has "(discarded)"
}

t_held_applied() {
	changes_env
	make_tree
	sleep 0.05
	run_every_kind --hold=apply
	expect_rc 0
	sed -n '/^---view---$/,$p' "$T/.run/stdout" | tail -n +2 >"$T/seen"
	[ -s "$T/seen" ] || fail "no view from the command"
	view . >"$T/host"
	diff "$T/seen" "$T/host" || fail "the host differs from what the command saw"
	(cd repo && git log --oneline | head -1) | grep -q three || fail "the commit is not on the host"
	[ "$(cd repo && git rev-parse --abbrev-ref HEAD)" = other ] || fail "the checkout is not on the host"
}

t_recorded_undone() {
	changes_env
	make_tree
	sleep 0.05
	view . >"$T/before"
	run_every_kind --record
	expect_rc 0
	sed -n '/^---view---$/,$p' "$T/.run/stdout" | tail -n +2 >"$T/seen"
	view . >"$T/host"
	diff "$T/seen" "$T/host" || fail "the recorded run's changes are not what the command saw"
	wx undo
	expect_rc 0
	view . >"$T/after"
	diff "$T/before" "$T/after" || fail "the host is not byte-identical after undo"
	wx undo
	[ "$WRC" = 125 ] || fail "a second undo should find nothing to undo (got $WRC)"
	expect_one_line_error
}

t_conflict_apply() {
	changes_env
	printf 'host\n' >a.txt
	printf 'keep\n' >b.txt
	sleep 0.05
	w --hold=keep -- sh -c 'echo run >a.txt; echo new >c.txt'
	expect_rc 0
	printf 'host changed\n' >a.txt
	wx changes apply
	expect_rc 1
	assert_stderr_has "conflict"
	assert_content a.txt "host changed"
	assert_absent c.txt
	wx changes apply --host-wins
	expect_rc 0
	assert_content a.txt "host changed"
	assert_content c.txt new
	wx undo
	expect_rc 0
	assert_absent c.txt
	assert_content a.txt "host changed"
	# The other side: the run's version wins, and undo brings the host's back.
	w --hold=keep -- sh -c 'echo run2 >b.txt'
	printf 'host2\n' >b.txt
	wx changes apply --run-wins
	expect_rc 0
	assert_content b.txt run2
	wx undo
	expect_rc 0
	assert_content b.txt host2
}

t_conflict_undo() {
	changes_env
	printf 'before\n' >a.txt
	sleep 0.05
	w --record -- sh -c 'echo run >a.txt; echo new >n.txt'
	expect_rc 0
	assert_content a.txt run
	printf 'later\n' >a.txt
	wx undo
	expect_rc 1
	assert_stderr_has "changed again since"
	assert_content a.txt later
	assert_content n.txt new
	wx undo --partial
	expect_rc 0
	assert_content a.txt later
	assert_absent n.txt
	w --record -- sh -c 'echo run >a.txt'
	printf 'later2\n' >a.txt
	wx undo --force
	expect_rc 0
	assert_content a.txt later
}

# Many files, so that the kill point falls in the middle of the switch.
many_files() {
	for i in $(seq 1 40); do printf 'old %s\n' "$i" >"f$i"; done
}
check_old_or_new() { # every file is whole: the old or the new bytes
	local i c
	for i in $(seq 1 40); do
		c=$(cat "f$i")
		[ "$c" = "old $i" ] || [ "$c" = "new $i" ] || fail "f$i is neither old nor new: '$c'"
	done
	ls -a | grep -q '^\.ward-' && fail "a temporary file was left: $(ls -a)"
	return 0
}

t_kill_during_apply() {
	changes_env
	many_files
	sleep 0.05
	view . >"$T/before"
	w --hold=keep -- sh -c 'for i in $(seq 1 40); do echo "new $i" >"f$i"; done; echo x >added'
	expect_rc 0
	WARD_CHANGES_TEST_KILL_AFTER=17 wx changes apply
	[ "$WRC" = 137 ] || fail "ward was not killed in the apply (exit $WRC)"
	check_old_or_new
	[ "$(grep -l new f* | wc -l)" -gt 0 ] || fail "the kill came before any file was applied"
	wx changes show
	assert_stdout_has "(applying)"
	# A rerun finishes.
	wx changes apply
	expect_rc 0
	for i in $(seq 1 40); do assert_content "f$i" "new $i"; done
	assert_content added x
	# And the other way: killed again in the undo, then the undo is finished.
	WARD_CHANGES_TEST_KILL_AFTER=9 wx undo
	[ "$WRC" = 137 ] || fail "ward was not killed in the undo (exit $WRC)"
	check_old_or_new
	wx undo
	expect_rc 0
	view . >"$T/after"
	diff "$T/before" "$T/after" || fail "the host is not as before after the finished undo"
}

t_kill_during_apply_discarded() {
	changes_env
	many_files
	sleep 0.05
	view . >"$T/before"
	w --hold=keep -- sh -c 'for i in $(seq 1 40); do echo "new $i" >"f$i"; done'
	WARD_CHANGES_TEST_KILL_AFTER=23 wx changes apply
	[ "$WRC" = 137 ] || fail "ward was not killed in the apply (exit $WRC)"
	check_old_or_new
	# Discarding a stopped apply rolls back what it did.
	wx changes discard
	expect_rc 0
	view . >"$T/after"
	diff "$T/before" "$T/after" || fail "the host is not as before after the discard"
}

t_big_append() {
	changes_env
	local avail
	avail=$(df -Pk . | awk 'NR == 2 { print $4 }')
	[ "${avail:-0}" -gt $((3 * 1024 * 1024)) ] || skip "less than 3 GiB free in $(pwd)"
	head -c $((1024 * 1024 * 1024)) /dev/zero >big
	sleep 0.05
	w --hold=keep -- sh -c 'echo tail >>big'
	expect_rc 0
	[ "$(stat -c %s big)" = $((1024 * 1024 * 1024)) ] || fail "the host's file changed while held"
	wx changes show
	assert_stdout_has "1.0 GiB"
	wx changes apply
	expect_rc 0
	[ "$(stat -c %s big)" = $((1024 * 1024 * 1024 + 5)) ] || fail "the append was not applied"
	[ "$(tail -c 5 big)" = tail ] || fail "the appended bytes are wrong"
	# 1 GiB is past the journal's bound for one file: listed, and undo says so.
	wx changes show
	assert_stdout_has "cannot be undone"
	wx undo
	expect_rc 1
	assert_stderr_has "cannot be undone"
	rm -f big
	rm -rf "$WARD_CHANGES_DIR"
}

t_interactive_hold() {
	changes_env
	[ -n "$PY" ] || skip "python3 is not installed"
	printf 'x\n' >kept.txt
	LAST_CMD="ward run --hold -- sh -i (on a terminal)"
	timeout -k 3 60 "$PY" - "$WARD" >"$T/.run/stdout" 2>"$T/.run/stderr" <<'EOF'
import os, pty, select, sys, time
ward = sys.argv[1]
pid, fd = pty.fork()
if pid == 0:
    os.environ["PS1"] = "$ "
    os.environ["TERM"] = "xterm"
    os.environ["LESS"] = "FRX"
    os.execv(ward, [ward, "run", "--hold", "--", "sh", "-i"])
buf = b""
def wait_for(s, start=0, t=20, soft=False):
    global buf
    end = time.monotonic() + t
    while s not in buf[start:]:
        if time.monotonic() > end:
            if soft:
                return None
            sys.stdout.write(buf.decode(errors="replace")); sys.exit(3)
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try: buf += os.read(fd, 4096)
            except OSError: break
    return buf.index(s, start) + len(s)
wait_for(b"$ ")
os.write(fd, b"echo typed > typed.txt; rm kept.txt; exit\n")
at = wait_for(b"keep them held > ")
os.write(fd, b"v")
at = wait_for(b"diff --git", at)
# less with LESS=FRX quits by itself; a machine without less pages with more, which waits for q.
if wait_for(b"keep them held > ", at, t=3, soft=True) is None:
    os.write(fd, b"q")
    wait_for(b"keep them held > ", at)
os.write(fd, b"a")
while True:
    try:
        d = os.read(fd, 4096)
    except OSError:
        break
    if not d:
        break
    buf += d
_, st = os.waitpid(pid, 0)
sys.stdout.write(buf.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(st))
EOF
	WRC=$?
	expect_rc 0
	assert_content typed.txt typed
	assert_absent kept.txt
	assert_stdout_has "applied 2 changes"
}

t_journal_bounds() {
	changes_env
	head -c 4096 /dev/urandom >big.bin
	printf 'small\n' >small.txt
	sleep 0.05
	WARD_CHANGES_MAX_FILE=1K w --record -- sh -c 'echo x >big.bin; echo y >small.txt; echo z >new.txt'
	expect_rc 0
	wx changes show
	assert_stdout_has "cannot be undone: larger than the journal's bound for one file"
	wx changes show --json
	grep -q '"cannot_undo":1' "$T/.run/stdout" || fail "the JSON does not count what cannot be undone"
	wx undo
	expect_rc 1
	assert_stderr_has "cannot be undone"
	assert_content small.txt y
	wx undo --partial
	expect_rc 0
	assert_content small.txt small
	assert_absent new.txt
	assert_content big.bin x
	# The total bound: older runs lose their before-images first, and say so.
	printf 'one\n' >r1.txt
	sleep 0.05
	w --record -- sh -c 'echo changed >r1.txt'
	head -c 8192 /dev/urandom >r2.bin
	sleep 0.05
	WARD_CHANGES_MAX_TOTAL=4K w --record -- sh -c 'echo changed >r2.bin'
	wx changes --all
	expect_rc 0
	grep -q 'cannot be undone' "$T/.run/stdout" || fail "no run lists what it can no longer undo: $(out)"
}

t_journal_hidden() {
	changes_env
	printf 'secret\n' >a.txt
	sleep 0.05
	w --record -- sh -c 'echo new >a.txt'
	expect_rc 0
	# The journal (here inside the workspace, a writable root) is out of reach inside.
	export WARD_CHANGES_DIR=$WS/.journal
	w --record -- sh -c 'echo again >a.txt'
	expect_rc 0
	wp -- read "$WS/.journal/seq"
	expect_denied read
	wp -- write "$WS/.journal/runs/planted" x
	expect_denied write
	wp -- mkdir "$WS/.journal/runs/999"
	expect_denied mkdir
	wx changes show
	expect_rc 0
	assert_stdout_has "a.txt"
}

t_protected_refused() {
	changes_env
	git init -q .
	sleep 0.05
	w --hold=apply -- sh -c 'mkdir -p .vscode && echo "{}" >.vscode/tasks.json; echo ok >fine.txt;
		echo x >.git/hooks/pre-commit'
	expect_rc 2
	assert_stderr_has "Read-only file system"
	assert_absent .vscode .git/hooks/pre-commit
	assert_content fine.txt ok
	wx changes show
	assert_stdout_has "refused"
}

t_symlink_swapped() {
	changes_env
	mkdir -p d "$OUT/target"
	printf 'old\n' >d/f
	sleep 0.05
	w --hold=keep -- sh -c 'echo new >d/f; echo add >d/g'
	expect_rc 0
	# Another process swaps the directory for a symlink out of the root.
	mv d d.real
	ln -s "$OUT/target" d
	wx changes apply --run-wins
	[ "$WRC" != 0 ] || true
	assert_absent "$OUT/target/f" "$OUT/target/g"
	[ "$(ls -A "$OUT/target")" = "" ] || fail "apply wrote through the symlink: $(ls -A "$OUT/target")"
	assert_content d.real/f old
}

t_damaged_record() {
	changes_env
	printf 'a\n' >a.txt
	sleep 0.05
	w --record -- sh -c 'echo b >a.txt'
	expect_rc 0
	local rec
	rec=$(ls "$WARD_CHANGES_DIR"/runs/*/record | head -1)
	sed -i 's/a.txt/z.txt/' "$rec"
	wx undo
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "damaged"
	assert_content a.txt b
	wx undo 999
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "no run 999"
}

t_json_lists_changes() {
	changes_env
	w --json --hold=discard -- sh -c 'echo x >j.txt'
	expect_rc 0
	grep -q '"changes":{"run":[0-9]*,"mode":"hold","state":"discarded"' "$T/.run/stdout" ||
		fail "no changes in the JSON result: $(out)"
	assert_stdout_has '{"path":"'"$WS"'/j.txt","change":"added","state":"discarded"'
	assert_absent j.txt
}

t_fallback_refused() {
	changes_env
	[ -x "$HARDENED" ] || skip "hardened-wrapper is not built ($HARDENED)"
	LAST_CMD="hardened-wrapper ward run --hold -- true"
	timeout -k 3 "$WARD_TEST_TIMEOUT" "$HARDENED" "$WARD" run --hold -- sh -c 'echo x >f' \
		</dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 125
	expect_one_line_error
	assert_stderr_has "needs a mount namespace"
	assert_absent f
}

# ------------------------------------------------------------------ ward mcp

SEQ=$WARD_SRC/tests/helpers/mcp-seq.py
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}'
INITED='{"jsonrpc":"2.0","method":"notifications/initialized"}'

call() { # call ID TOOL ARGS-JSON
	printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n' \
		"$1" "$2" "$3"
}

mcpseq() { # mcpseq [--answer D] -- WARD-MCP-OPTIONS... < LINES
	[ -n "$PY" ] || skip "python3 is needed"
	local o=()
	while [ "$1" != -- ]; do
		o+=("$1")
		shift
	done
	shift
	LAST_CMD="ward mcp $*"
	timeout -k 3 90 "$PY" "$SEQ" "${o[@]}" -- "$WARD" mcp "$@" >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
}

reply() { grep -m 1 -E "\"id\":$1[,}]" "$T/.run/stdout"; }
jget() { "$PY" -c "import json,sys; m=json.loads(sys.argv[1]); print($2)" "$1"; }
sc() { jget "$(reply "$1")" "m['result']['structuredContent']$2"; }

# A journal where no layer can be kept (root: on an overlayfs, as in a
# container whose root is one; anyone: where it cannot be made): ward mcp says
# once that nothing is recorded and runs every command unrecorded, rather than
# failing each; --hold, which cannot do without, refuses to start.
t_mcp_journal_cannot_hold_a_layer() {
	local o=$T/ovl j want
	if [ "$(id -u)" = 0 ]; then
		mkdir -p "$o/lo" "$o/up" "$o/wk" "$o/m"
		mount -t overlay overlay -o "lowerdir=$o/lo,upperdir=$o/up,workdir=$o/wk" "$o/m" ||
			skip_env "overlayfs cannot be mounted here (the test directory is on one)"
		j=$o/m/j
		want="overlayfs refuses a layer kept in '$j'"
	else
		j=/proc/ward-journal
		want="cannot make '$j'"
	fi
	WARD_CHANGES_DIR=$j mcpseq -- -C "$WS" --audit-log none <<EOS
$INIT
$INITED
$(call 2 exec_command '{"cmd":"echo x >f.txt"}')
EOS
	grep -q -F "changes are not recorded (undo is not available): $want" "$T/.run/stderr" ||
		fail "no warning naming the journal's place"
	[ "$(sc 2 "['exit_code']")" = 0 ] || fail "the command did not run: $(reply 2)"
	assert_content f.txt x
	WARD_CHANGES_DIR=$j wx mcp -C "$WS" --hold
	expect_rc 125
	grep -q -F "$want" "$T/.run/stderr" || fail "--hold's refusal does not say why"
	[ "$(id -u)" != 0 ] || umount "$o/m"
}

t_mcp_recorded_undone() {
	changes_env
	printf 'keep\n' >k.txt
	sleep 0.05
	mcpseq -- -C "$WS" --audit-log none <<EOS
$INIT
$INITED
$(call 2 exec_command '{"cmd":"echo x >f.txt; echo changed >k.txt"}')
$(call 3 changes_list '{}')
$(call 4 changes_show '{"diff":true}')
$(call 5 changes_undo '{}')
EOS
	[ "$(sc 2 "['changes']['state']")" = applied ] || fail "the exec's result lacks its changes: $(reply 2)"
	[ "$(sc 2 "['changes']['counts']['added']")" = 1 ] || fail "one added: $(reply 2)"
	reply 2 | grep -q 'Changes: run [0-9]* applied' || fail "the text lacks the changes: $(reply 2)"
	[ "$(sc 3 "['runs'][0]['state']")" = applied ] || fail "changes_list: $(reply 3)"
	sc 4 "['diff']" | grep -q '^+changed' || fail "changes_show's diff: $(reply 4)"
	[ "$(sc 5 "['state']")" = undone ] || fail "changes_undo: $(reply 5)"
	assert_absent f.txt
	assert_content k.txt keep
}

t_mcp_hold_apply() {
	changes_env
	mcpseq -- -C "$WS" --audit-log none <<EOS
$INIT
$INITED
$(call 2 exec_command '{"cmd":"echo y >g.txt; cat g.txt","hold":true}')
$(call 3 changes_apply '{}')
$(call 4 exec_command '{"cmd":"echo z >h.txt","hold":true}')
$(call 5 changes_discard '{}')
EOS
	[ "$(sc 2 "['output']")" = y ] || fail "the command sees its own write: $(reply 2)"
	[ "$(sc 2 "['changes']['state']")" = held ] || fail "held: $(reply 2)"
	[ "$(sc 3 "['state']")" = applied ] || fail "changes_apply: $(reply 3)"
	assert_content g.txt y
	[ "$(sc 5 "['state']")" = discarded ] || fail "changes_discard: $(reply 5)"
	assert_absent h.txt
}

t_mcp_apply_asks() {
	changes_env
	mcpseq --answer apply -- -C "$WS" --audit-log none -a on-request <<EOS
$INIT
$INITED
$(call 2 exec_command '{"cmd":"echo a >a.txt","hold":true}')
$(call 3 changes_apply '{}')
EOS
	grep -q '"method":"elicitation/create".*a.txt' "$T/.run/stdout" ||
		fail "no question with the summary: $(out)"
	[ "$(sc 3 "['state']")" = applied ] || fail "the person said apply: $(reply 3)"
	assert_content a.txt a
	mcpseq --answer keep -- -C "$WS" --audit-log none -a on-request <<EOS
$INIT
$INITED
$(call 2 exec_command '{"cmd":"echo b >b.txt","hold":true}')
$(call 3 changes_apply '{}')
EOS
	jget "$(reply 3)" "m['result']['isError']" | grep -qx True || fail "kept held: $(reply 3)"
	assert_absent b.txt
}

t_mcp_only_its_runs() {
	changes_env
	w --hold=keep -- sh -c 'echo p >person.txt'
	expect_rc 0
	local run
	run=$(ls "$WARD_CHANGES_DIR/runs")
	mcpseq -- -C "$WS" --audit-log none <<EOS
$INIT
$INITED
$(call 2 changes_apply "{\"run\":$run}")
$(call 3 changes_show "{\"run\":$run}")
EOS
	reply 2 | grep -q "not one of this server's runs" || fail "another's run applied: $(reply 2)"
	reply 3 | grep -q "not one of this server's runs" || fail "another's run shown: $(reply 3)"
	assert_absent person.txt
}

tcase "every kind of change, held then discarded: the host byte-identical" t_held_discarded
tcase "every kind of change, held then applied: the host is what the command saw" t_held_applied
tcase "every kind of change, recorded then undone: the host byte-identical" t_recorded_undone
tcase "a conflict on apply: nothing applied until a side is chosen" t_conflict_apply
tcase "a conflict on undo: nothing undone unless --partial or --force" t_conflict_undo
tcase "ward killed during apply and undo: no half file, a rerun finishes" t_kill_during_apply
tcase "ward killed during apply, then discarded: rolled back" t_kill_during_apply_discarded
tcase "a 1 GiB file appended to under --hold" t_big_append
tcase "an interactive session with --hold" t_interactive_hold
tcase "the journal's bounds and its cannot-be-undone list" t_journal_bounds
tcase "the journal is out of the sandbox's reach" t_journal_hidden
tcase "protected paths created in the layer are never applied" t_protected_refused
tcase "a symlink swapped in before apply is never followed" t_symlink_swapped
tcase "a damaged record and an unknown run: one-line errors" t_damaged_record
tcase "--json lists the changes" t_json_lists_changes
tcase "the fallback refuses --hold (125)" t_fallback_refused
tcase "ward mcp: recorded by default, listed, shown, undone" t_mcp_recorded_undone
tcase "ward mcp: a journal that cannot hold a layer: unrecorded, said once" \
	t_mcp_journal_cannot_hold_a_layer
tcase "ward mcp: exec_command with hold, then changes_apply and changes_discard" t_mcp_hold_apply
tcase "ward mcp with approvals: applying held changes asks the person" t_mcp_apply_asks
tcase "ward mcp: the changes tools act on its own runs only" t_mcp_only_its_runs
finish
