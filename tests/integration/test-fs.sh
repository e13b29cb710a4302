#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2119,SC2016
#
# The filesystem policy: writes outside the writable roots (directly, through
# symlinks and hard links, through /proc/*/root, /proc/self/cwd and inherited
# descriptors), the modes, extra roots, /tmp and $TMPDIR, --protect,
# --deny-read, the minimal /dev, and that ward never leaves placeholder files
# on the host, not even when it is killed.
. "$(dirname "$0")/lib.sh"

t_workspace_write() {
	wp -- write "$WS/new.txt" hello
	expect_ok
	assert_content "$WS/new.txt" hello
	wp -- append "$WS/new.txt" -again
	expect_ok
	assert_content "$WS/new.txt" hello-again
	wp -- mkdir "$WS/sub"
	expect_ok
	[ -d "$WS/sub" ] || fail "mkdir in the workspace did not reach the host"
	wp -- rename "$WS/new.txt" "$WS/sub/moved.txt"
	expect_ok
	assert_content "$WS/sub/moved.txt" hello-again
	wp -- unlink "$WS/sub/moved.txt"
	expect_ok
	assert_absent "$WS/sub/moved.txt"
}

t_outside_write() {
	printf 'orig\n' >"$OUT/file"
	wp -- write "$OUT/file" changed
	expect_denied write EROFS EACCES EPERM
	assert_content "$OUT/file" orig
	wp -- write "$OUT/created"
	expect_denied write EROFS EACCES EPERM
	wp -- append "$OUT/file" more
	expect_denied append
	wp -- truncate "$OUT/file" 0
	expect_denied truncate
	wp -- chmod "$OUT/file" 0777
	expect_denied chmod
	wp -- unlink "$OUT/file"
	expect_denied unlink
	wp -- mkdir "$OUT/dir"
	expect_denied mkdir
	wp -- rename "$OUT/file" "$WS/stolen"
	expect_denied rename
	wp -- symlink /etc/passwd "$OUT/link"
	expect_denied symlink
	wp -- mknod "$OUT/null"
	expect_denied mknod
	assert_content "$OUT/file" orig
	assert_eq "$(stat -c %a "$OUT/file")" 644 "mode of $OUT/file"
	assert_absent "$OUT/created" "$OUT/dir" "$OUT/link" "$OUT/null" "$WS/stolen"
}

t_system_write() {
	local name
	name=ward-it-$$-$RANDOM
	wp -- write "/etc/$name"
	expect_denied write
	assert_absent "/etc/$name"
	wp -- write "/$name"
	expect_denied write
	assert_absent "/$name"
	wp -- write "$HOME/$name"
	expect_denied write
	assert_absent "$HOME/$name"
	# The probe's own binary and build directory are outside the roots too
	# (unless the tree lives under /tmp or $TMPDIR, which are roots: exclude them).
	wp --exclude-slash-tmp --exclude-tmpdir-env-var -- append "$PROBE" x
	expect_denied append
	wp --exclude-slash-tmp --exclude-tmpdir-env-var -- write "$(dirname "$PROBE")/$name"
	expect_denied write
	assert_absent "$(dirname "$PROBE")/$name"
}

t_symlink_planted() {
	printf 'orig\n' >"$OUT/file"
	ln -s "$OUT/file" "$WS/link-file"
	ln -s "$OUT" "$WS/link-dir"
	ln -s ../outside "$WS/rel-link"
	wp -- write "$WS/link-file" changed
	expect_denied write
	wp -- write "$WS/link-dir/new"
	expect_denied write
	wp -- write "$WS/rel-link/new2"
	expect_denied write
	wp -- unlink "$WS/link-dir/file"
	expect_denied unlink
	assert_content "$OUT/file" orig
	assert_absent "$OUT/new" "$OUT/new2"
	# A symlink created inside the sandbox leads nowhere either.
	w -- sh -c "ln -s '$OUT' '$WS/inner' && '$PROBE' write '$WS/inner/new3'"
	expect_denied write
	assert_absent "$OUT/new3"
}

t_hardlink() {
	printf 'orig\n' >"$OUT/file"
	# Creating a hard link to a file outside the roots fails (a different mount,
	# and Landlock refuses linking from outside), so it cannot be written through.
	wp -- link "$OUT/file" "$WS/hard"
	expect_denied link EXDEV EACCES EPERM EROFS
	assert_absent "$WS/hard"
	w -- sh -c "ln '$OUT/file' '$WS/hard2' 2>/dev/null; '$PROBE' append '$WS/hard2' evil"
	assert_content "$OUT/file" orig
	[ ! -e "$WS/hard2" ] || [ "$(stat -c %i "$WS/hard2")" != "$(stat -c %i "$OUT/file")" ] ||
		fail "a hard link to $OUT/file was created in the workspace"
	assert_eq "$(stat -c %h "$OUT/file")" 1 "link count of $OUT/file"
}

t_proc_root() {
	printf 'orig\n' >"$OUT/file"
	wp -- write "/proc/self/root$OUT/file" changed
	expect_denied write
	wp -- write "/proc/1/root$OUT/file" changed
	expect_denied write
	# Every process visible inside, through its root and its cwd.
	w -C "$WS" -- sh -c '
		for d in /proc/[0-9]*; do
			"$0" write "$d/root$1/new-$(basename "$d")"
			"$0" write "$d/cwd/../outside/cwd-$(basename "$d")"
		done' "$PROBE" "$OUT"
	grep -q '^write: ok' "$T/.run/stdout" && fail "a write through /proc/*/root or cwd succeeded"
	grep -q '^write: E' "$T/.run/stdout" || fail "the probe did not run"
	wp -C "$WS" -- write /proc/self/cwd/../outside/file changed
	expect_denied write
	assert_content "$OUT/file" orig
	assert_eq "$(find "$OUT" -mindepth 1 | wc -l)" 1 "entries in $OUT"
}

# The mount view is the sandbox's alone: while a command runs and after it, the
# host's mount table is what it was (as root without a user namespace too, where
# only ward's own MS_PRIVATE stops propagation).
t_mounts_private() {
	local m before
	m=$(marker mounts)
	before=$(cut -d' ' -f5- /proc/self/mountinfo | sort)
	"$WARD" run -- sh -c "exec '$PROBE' sleep 30 $m" </dev/null >/dev/null 2>&1 &
	BG_PIDS+=("$!")
	# Anchored: ward's own command line holds the marker too.
	wait_for pgrep -f -- "^$PROBE sleep 30 $m" >/dev/null || fail "the sandboxed sleeper did not start"
	assert_eq "$(cut -d' ' -f5- /proc/self/mountinfo | sort)" "$before" "the host's mounts while the sandbox runs"
	# And the host's mount namespace is not the sandbox's.
	local pid
	pid=$(pgrep -f -- "^$PROBE sleep 30 $m" | head -n 1)
	[ -n "$pid" ] || fail "cannot find the sleeper"
	[ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] || fail "the sleeper is in the host's mount namespace"
	kill "${BG_PIDS[@]}" 2>/dev/null
	wait 2>/dev/null
	assert_eq "$(cut -d' ' -f5- /proc/self/mountinfo | sort)" "$before" "the host's mounts afterwards"
}

t_inherited_dir_fd() {
	# A descriptor of a directory outside the roots, handed in on purpose, still
	# gives no write access below it (Landlock checks the path it leads to).
	printf 'orig\n' >"$OUT/file"
	exec 7<"$OUT"
	wp --keep-fd 7 -- write /proc/self/fd/7/new
	exec 7<&-
	if [ "${WARD_TEST_HOST:-}" = userns-landlock-refused ]; then
		# Without Landlock nothing would check that path: ward refuses the descriptor.
		expect_rc 125
		expect_one_line_error
		assert_stderr_has "cannot keep fd 7"
		assert_absent "$OUT/new"
		return 0
	fi
	expect_denied write
	assert_absent "$OUT/new"
	exec 7<"$OUT"
	wp --keep-fd 7 -- write /proc/self/fd/7/file changed
	exec 7<&-
	expect_denied write
	assert_content "$OUT/file" orig
}

t_read_only_mode() {
	wp -s read-only -- write "$WS/f"
	expect_denied write
	assert_absent "$WS/f"
	wp -s read-only -- write /tmp/ward-it-ro-$$
	expect_denied write
	assert_absent /tmp/ward-it-ro-$$
	printf 'x\n' >"$WS/r"
	wp -s read-only -- read "$WS/r"
	expect_ok
}

t_danger_full_access() {
	printf 'orig\n' >"$OUT/file"
	wp -s danger-full-access -- write "$OUT/file" changed
	expect_ok
	assert_content "$OUT/file" changed
	# No sandbox means none: the caller's capabilities and privileges stay.
	w -s danger-full-access -- grep -E '^(CapEff|NoNewPrivs):' /proc/self/status
	expect_rc 0
	# (The caller's own: a container started with no-new-privileges has it already.)
	assert_eq "$(grep NoNewPrivs "$T/.run/stdout" | tr -d '[:space:]')" \
		"$(grep NoNewPrivs /proc/self/status | tr -d '[:space:]')" "no_new_privs"
	assert_eq "$(grep CapEff "$T/.run/stdout")" "$(grep CapEff /proc/self/status)" "capabilities"
}

t_extra_root() {
	mkdir "$T/extra"
	wp -w "$T/extra" -- write "$T/extra/f" yes
	expect_ok
	assert_content "$T/extra/f" yes
	# A symlink to the root resolves to it.
	ln -s "$T/extra" "$T/extra-link"
	wp -w "$T/extra-link" -- write "$T/extra/g" yes
	expect_ok
	assert_content "$T/extra/g" yes
	wp -- write "$T/extra/h"
	expect_denied write
	assert_absent "$T/extra/h"
	# -C makes another directory the working directory and the root.
	wp -C "$T/extra" -- write i yes
	expect_ok
	assert_content "$T/extra/i" yes
	wp -C "$T/extra" -- write "$WS/j"
	expect_denied write
	assert_absent "$WS/j"
}

t_slash_tmp() {
	local f=/tmp/ward-it-tmp-$$-$RANDOM
	wp -- write "$f" yes
	expect_ok
	assert_content "$f" yes
	rm -f "$f"
	wp --exclude-slash-tmp -- write "$f"
	expect_denied write
	assert_absent "$f"
}

t_tmpdir_env() {
	mkdir "$T/tmpd"
	TMPDIR=$T/tmpd wp -- write "$T/tmpd/f" yes
	expect_ok
	assert_content "$T/tmpd/f" yes
	TMPDIR=$T/tmpd wp --exclude-tmpdir-env-var -- write "$T/tmpd/g"
	expect_denied write
	assert_absent "$T/tmpd/g"
	TMPDIR=$T/tmpd wp -- env TMPDIR
	expect_ok
	assert_eq "$LINE" "env: ok $T/tmpd" "TMPDIR inside"
}

t_protect() {
	mkdir "$WS/keep"
	printf 'orig\n' >"$WS/keep/f"
	printf 'orig\n' >"$WS/single"
	wp --protect "$WS/keep" -- write "$WS/keep/f" changed
	expect_denied write
	wp --protect "$WS/keep" -- write "$WS/keep/new"
	expect_denied write
	wp --protect "$WS/keep" -- rename "$WS/keep" "$WS/keep2"
	expect_denied rename
	wp --protect "$WS/single" -- write "$WS/single" changed
	expect_denied write
	wp --protect "$WS/single" -- unlink "$WS/single"
	expect_denied unlink
	wp --protect "$WS/keep" -- write "$WS/other" ok
	expect_ok
	assert_content "$WS/keep/f" orig
	assert_content "$WS/single" orig
	assert_absent "$WS/keep/new" "$WS/keep2"
}

t_deny_read_file() {
	printf 'secret\n' >"$WS/secret"
	printf 'secret\n' >"$OUT/secret"
	wp --deny-read "$WS/secret" -- read "$WS/secret"
	expect_denied read
	wp --deny-read "$OUT/secret" -- read "$OUT/secret"
	expect_denied read
	w --deny-read "$WS/secret" -- cat "$WS/secret"
	grep -q secret "$T/.run/stdout" && fail "cat printed the denied file"
	wp --deny-read "$WS/secret" -- write "$WS/secret" replaced
	expect_denied write
	assert_content "$WS/secret" secret
	assert_content "$OUT/secret" secret
	# Without the option it is readable (the control).
	wp -- read "$WS/secret"
	expect_ok
}

t_deny_read_dir() {
	mkdir -p "$OUT/private/sub"
	printf 'secret\n' >"$OUT/private/key"
	printf 'secret\n' >"$OUT/private/sub/key2"
	wp --deny-read "$OUT/private" -- ls "$OUT/private"
	expect_denied ls
	wp --deny-read "$OUT/private" -- read "$OUT/private/key"
	expect_denied read
	wp --deny-read "$OUT/private" -- read "$OUT/private/sub/key2"
	expect_denied read
	w --deny-read "$OUT/private" -- sh -c "cat '$OUT/private/key' '$OUT/private/sub/key2'; ls -R '$OUT/private'"
	grep -q -e secret -e key "$T/.run/stdout" && fail "the denied directory leaked: $(out)"
	# A denied directory inside the workspace cannot be written or replaced either.
	mkdir "$WS/hidden"
	printf 'secret\n' >"$WS/hidden/k"
	wp --deny-read "$WS/hidden" -- write "$WS/hidden/new"
	expect_denied write
	wp --deny-read "$WS/hidden" -- rename "$WS/hidden" "$WS/unhidden"
	expect_denied rename
	assert_content "$OUT/private/key" secret
	assert_content "$WS/hidden/k" secret
	assert_absent "$WS/hidden/new" "$WS/unhidden"
	wp -- ls "$OUT/private"
	expect_ok
}

t_dev_minimal() {
	wp -- ls /dev
	expect_ok
	local d
	for d in null zero full random urandom tty ptmx pts shm; do
		assert_match "$LINE" " $d( |$)" "/dev lists $d"
	done
	assert_no_match "$LINE" " (sd[a-z]|vd[a-z]|nvme|mem|kmsg|loop[0-9])" "no host devices in /dev"
	wp -- write /dev/null x
	expect_ok
	wp -- write /dev/shm/ward-it x
	expect_ok
	assert_absent /dev/shm/ward-it
}

t_no_placeholders() {
	make_repo "$WS"
	rm -rf "$WS/.git/hooks"
	mkdir -p "$WS/d" "$OUT/hidden"
	printf 'x\n' >"$WS/d/f"
	local before after
	before=$(snapshot "$T")
	wp --protect "$WS/not-yet/deeper" --protect "$WS/d/f" --deny-read "$OUT/hidden" \
		--deny-read "$WS/d/missing" -- ls "$WS"
	expect_ok
	after=$(snapshot "$T" | grep -v "/\.run")
	before=$(printf '%s\n' "$before" | grep -v "/\.run")
	[ "$before" = "$after" ] || fail "the workspace changed:" "$(diff <(echo "$before") <(echo "$after"))"
}

t_no_placeholders_killed() {
	make_repo "$WS"
	rm -rf "$WS/.git/hooks"
	local before after m
	m=$(marker placeholder)
	before=$(snapshot "$T" | grep -v "/\.run")
	"$WARD" run --protect "$WS/not-yet" -- "$PROBE" sleep 30 "$m" </dev/null >/dev/null 2>&1 &
	local wpid=$!
	BG_PIDS+=("$wpid")
	wait_for pgrep -f -- "$m" >/dev/null || fail "the sandboxed sleeper did not start"
	# While the command runs: nothing new on the host.
	after=$(snapshot "$T" | grep -v "/\.run")
	[ "$before" = "$after" ] || fail "the workspace changed during the run:" "$(diff <(echo "$before") <(echo "$after"))"
	kill -9 "$wpid"
	wait "$wpid" 2>/dev/null
	expect_gone "$m"
	after=$(snapshot "$T" | grep -v "/\.run")
	[ "$before" = "$after" ] || fail "the workspace changed after SIGKILL:" "$(diff <(echo "$before") <(echo "$after"))"
}

tcase "the sandbox's mounts never reach the host" t_mounts_private
tcase "writes in the workspace reach the host" t_workspace_write
tcase "writes, deletes, renames and links outside the roots are refused; host unchanged" t_outside_write
tcase "writes to /etc, /, \$HOME and the build directory are refused" t_system_write
tcase "symlinks planted in the workspace do not lead outside" t_symlink_planted
tcase "hard links to files outside cannot be made" t_hardlink
tcase "no write through /proc/*/root, /proc/*/cwd" t_proc_root
tcase "a kept directory fd outside the roots gives no write access" t_inherited_dir_fd
tcase "read-only mode writes nothing" t_read_only_mode
tcase "danger-full-access writes outside" t_danger_full_access
tcase "-w and -C add writable roots (symlinks resolved)" t_extra_root
tcase "/tmp is writable unless --exclude-slash-tmp" t_slash_tmp
tcase "\$TMPDIR is writable unless --exclude-tmpdir-env-var" t_tmpdir_env
tcase "--protect keeps a path read-only inside a root" t_protect
tcase "--deny-read of a file: unreadable, host unchanged" t_deny_read_file
tcase "--deny-read of a directory: unreadable and unlistable" t_deny_read_dir
# A read-only mount inside a writable root stays read-only, and does not stop the run.
# The mount is made in a mount namespace of the test's own (unshare), so this works
# unprivileged too; ward's sandbox inherits it like any host mount.
t_readonly_submount() {
	need_cmd unshare
	mkdir -p "$WS/ro" "$T/src"
	printf 'orig\n' >"$T/src/file"
	LAST_CMD="unshare -rm ... ward run"
	timeout -k 3 "$WARD_TEST_TIMEOUT" unshare -rm sh -c '
		mount --bind "$1" "$2/ro" && mount -o remount,bind,ro "$2/ro" || exit 99
		cd "$2" && exec "$3" run -- sh -c "echo new > ro/file; echo ro=\$?; echo x > rw; echo rw=\$?"
	' sh "$T/src" "$WS" "$WARD" </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	[ "$WRC" != 99 ] || skip "cannot make a read-only bind mount here"
	# The simulated masked-/proc host masks from inside this user namespace, which a
	# machine whose own /proc is locked (a container) does not allow: the machine's lack.
	if grep -q "hardened-wrapper: cannot mask parts of /proc" "$T/.run/stderr"; then
		skip_env "the simulated masked /proc cannot be made inside a user namespace here"
	fi
	expect_rc 0
	assert_stdout_has "ro=2"
	assert_stdout_has "rw=0"
	assert_content "$T/src/file" orig
	assert_content "$WS/rw" x
}

tcase "/dev is minimal" t_dev_minimal
tcase "no placeholder files on the host after a run" t_no_placeholders
tcase "no placeholder files while running and after ward is SIGKILLed" t_no_placeholders_killed
tcase "a read-only mount inside a writable root stays read-only" t_readonly_submount
finish
