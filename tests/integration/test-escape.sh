#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2119,SC2016
#
# The kernel attack surface and the ways out: host processes (ptrace, kill,
# process_vm_readv), namespaces (unshare, clone, clone3, setns), mounts (old and
# new API), io_uring, keyctl, bpf, perf, raw and packet sockets, terminal
# injection (TIOCSTI, TIOCLINUX), open_by_handle_at, /proc/sys, inherited
# descriptors. Where the operation works on the host, the probe shows it there
# first, so a refusal inside means something.
. "$(dirname "$0")/lib.sh"

t_host_process() {
	local m
	m=$(marker victim)
	start_host_sleeper "$m"
	wait_for pgrep -f -- "$m" >/dev/null || fail "the host sleeper did not start"
	wp -- kill "$HOST_PID" KILL
	expect_denied kill
	wp -- kill "$HOST_PID" 0
	expect_denied kill
	wp -- ptrace "$HOST_PID"
	expect_denied ptrace
	wp -- process-vm-read "$HOST_PID"
	expect_denied process-vm-read
	if [ "$HOST_PROC" = 1 ]; then
		# The container's /proc (a masked one refuses a fresh procfs): the process is
		# visible, as ward's warning says, but what its ptrace access check guards is
		# not (Landlock keeps processes outside the sandbox out of reach).
		wp -- stat "/proc/$HOST_PID"
		expect_ok
		local f
		for f in environ mem maps fd/0; do
			wp -- read "/proc/$HOST_PID/$f"
			expect_denied read EACCES EPERM
		done
		wp -- readlink "/proc/$HOST_PID/cwd"
		expect_denied readlink EACCES EPERM
	else
		wp -- stat "/proc/$HOST_PID"
		expect_denied stat
	fi
	# kill(-1) reaches only the sandbox.
	w -- sh -c "'$PROBE' kill -1 KILL; sleep 1"
	kill -0 "$HOST_PID" 2>/dev/null || fail "the host process died"
	grep -q '^TracerPid:[[:space:]]*0$' "/proc/$HOST_PID/status" || fail "the host process is traced"
	assert_eq "$(awk '/^State:/ {print $2}' "/proc/$HOST_PID/status")" S "host process state"
}

t_ptrace_inside() {
	# ptrace is refused even on the sandbox's own processes (seccomp).
	w -- sh -c "'$PROBE' sleep 5 & sleep 0.2; '$PROBE' ptrace \$!; '$PROBE' process-vm-read \$!; kill \$!"
	expect_denied ptrace
	expect_denied process-vm-read
}

t_namespaces() {
	local f
	for f in user mount net pid ipc uts cgroup user,mount; do
		wp -- unshare "$f"
		expect_denied unshare EPERM
	done
	wp -- clone-newuser
	expect_denied clone-newuser EPERM
	wp -- clone3 user
	expect_denied clone3 ENOSYS EPERM
	wp -- clone3 mount
	expect_denied clone3 ENOSYS EPERM
	wp -- setns /proc/1/ns/mnt
	expect_denied setns
	w -- unshare -Ur true
	[ "$WRC" != 0 ] || fail "unshare -Ur succeeded"
	# Plain fork still works (clone without namespace flags).
	w -- sh -c 'echo $(echo nested)'
	assert_eq "$LINE" nested "fork inside"
}

t_mounts() {
	printf 'orig\n' >"$OUT/file"
	mkdir "$WS/mnt"
	printf 'keep\n' >"$WS/mnt/f"
	wp -- mount-tmpfs "$WS/mnt"
	expect_denied mount-tmpfs
	wp -- remount-rw /
	expect_denied remount-rw
	wp -- remount-rw "$OUT"
	expect_denied remount-rw
	wp -- setattr-rw /
	expect_denied setattr-rw
	wp -- fsopen
	expect_denied fsopen
	wp -- umount /proc detach
	expect_denied umount
	w -- sh -c "mount -o remount,rw / 2>/dev/null; mount -o remount,bind,rw '$OUT' 2>/dev/null; '$PROBE' write '$OUT/file' changed"
	expect_denied write
	assert_content "$OUT/file" orig
	assert_content "$WS/mnt/f" keep
}

t_io_uring() {
	wp -- io-uring
	expect_denied io-uring
}

t_kernel_interfaces() {
	wp -- keyctl
	expect_denied keyctl
	wp -- bpf
	expect_denied bpf
	wp -- perf
	expect_denied perf
	wp -- socket-raw
	expect_denied socket-raw
	wp -- socket-packet
	expect_denied socket-packet
	wp -- open-by-handle "$WS"
	expect_denied open-by-handle
	wp -- mknod "$WS/null"
	expect_denied mknod
	assert_absent "$WS/null"
}

t_proc_sys() {
	local cp
	cp=$(cat /proc/sys/kernel/core_pattern)
	# Writing back the current value: harmless even if it were allowed.
	wp -- write /proc/sys/kernel/core_pattern "$cp"
	expect_denied write
	assert_eq "$(cat /proc/sys/kernel/core_pattern)" "$cp" "core_pattern"
	wp -- write /proc/sysrq-trigger ""
	expect_denied write
	local hn
	hn=$(uname -n)
	w -- sh -c 'hostname ward-it-evil 2>/dev/null; uname -n'
	assert_eq "$(uname -n)" "$hn" "the host's hostname"
}

t_tiocsti() {
	need_cmd script
	# The control: on the host, with a terminal, injection works (unless the
	# kernel forbids it everywhere, dev.tty.legacy_tiocsti=0).
	in_tty "'$PROBE' tiocsti ward-host-ctl"
	local host_ok=0
	if probe_line tiocsti | grep -q '^tiocsti: ok'; then
		host_ok=1
	fi
	# Inside: every variant refused (fd 0, /dev/tty, with high bits in the request),
	# and the text never reaches the outer shell's input.
	in_tty "'$WARD' run -- '$PROBE' tiocsti; read -t 1 line; echo \"after=[\$line]\""
	expect_denied tiocsti
	local l
	l=$(probe_line tiocsti)
	assert_no_match "$l" "=ok" "TIOCSTI variants"
	grep -q 'after=\[\]' "$T/.run/stdout" || fail "text reached the terminal: $(out)"
	if [ "$host_ok" = 1 ]; then
		# The same line on the host does inject (the control for the check above).
		in_tty "'$PROBE' tiocsti; read -t 1 line; echo \"after=[\$line]\""
		grep -q 'after=\[probe-injected' "$T/.run/stdout" || fail "the control injection was not seen: $(out)"
	fi
	[ "$host_ok" = 1 ] || echo "note: TIOCSTI is refused on this host too"
}

t_tioclinux() {
	need_cmd script
	in_tty "'$WARD' run -- '$PROBE' tioclinux"
	expect_denied tioclinux
	in_tty "'$WARD' run -- '$PROBE' tioclinux high"
	expect_denied tioclinux
}

t_fds_closed() {
	printf 'orig\n' >"$OUT/file"
	# shellcheck disable=SC2094
	exec 7>>"$OUT/file" 8<"$OUT/file"
	wp -- fds
	local l=$LINE
	wp -- write-fd 7 evil
	exec 7>&- 8<&-
	assert_eq "$l" "fds: ok 0 1 2" "open descriptors inside"
	expect_denied write-fd EBADF
	assert_content "$OUT/file" orig
}

t_keep_fd() {
	: >"$OUT/log"
	exec 7>>"$OUT/log"
	wp --keep-fd 7 -- fds
	local l=$LINE
	wp --keep-fd 7 -- write-fd 7 kept
	exec 7>&-
	assert_eq "$l" "fds: ok 0 1 2 7" "open descriptors inside"
	expect_ok
	assert_content "$OUT/log" kept
	w --keep-fd 9 -- true
	expect_rc 125
	expect_one_line_error
}

tcase "host processes cannot be killed, traced or read" t_host_process
tcase "ptrace and process_vm_readv are refused inside too" t_ptrace_inside
tcase "no new namespaces (unshare, clone, clone3, setns)" t_namespaces
tcase "no mounts, remounts or unmounts (old and new API)" t_mounts
tcase "io_uring is refused" t_io_uring
tcase "keyctl, bpf, perf, raw/packet sockets, open_by_handle_at, mknod are refused" t_kernel_interfaces
tcase "/proc/sys, sysrq and the hostname of the host are untouchable" t_proc_sys
tcase "no terminal injection with TIOCSTI" t_tiocsti
tcase "TIOCLINUX is refused" t_tioclinux
tcase "descriptors above 2 are closed" t_fds_closed
tcase "--keep-fd passes one descriptor" t_keep_fd
finish
