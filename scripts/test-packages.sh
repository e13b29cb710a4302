#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The Debian packages on a bare Debian 12: builds them (scripts/build-packages.sh:
# dpkg-buildpackage, lintian clean, man pages without warnings), unpacks a fresh
# minimal Debian 12 (scripts/debian-rootfs.sh), installs them there with
# `apt-get install ./ward_*.deb ...` as the README says, and checks as root and
# as uid 65534: `ward doctor`, `ward run -- true`, a write outside refused, and
# a C program built with `cc prog.c $(pkg-config --cflags --libs ward)`; then
# that the packages depend on exactly what their binaries link. TAP on stdout,
# the last line "N passed, N failed, N skipped"; exit status non-zero on failure.
#
#   scripts/test-packages.sh [DEBDIR]    DEBDIR: use these .deb files instead of building
#
# Takes a few minutes (the build, the first debootstrap, apt fetching gcc in the
# fresh system); scripts/test.sh runs it with WARD_TEST_RELEASE=1. Needs root
# (debootstrap, namespaces, pivot_root) and Debian's mirror. Not root, or not
# Debian: it skips, and fails under WARD_MUST_WORK=1.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
n=0 passed=0 failed=0 skipped=0
ok() {
	n=$((n + 1)) passed=$((passed + 1))
	echo "ok $n - $1"
}
not_ok() {
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - $1"
	[ $# -gt 1 ] && printf '%s\n' "$2" | head -n 30 | sed 's/^/# /'
	return 0
}
skip_all() {
	if [ "${WARD_MUST_WORK:-0}" = 1 ]; then
		not_ok "the Debian packages on a fresh Debian 12" "skipped, but WARD_MUST_WORK=1: $1"
	else
		n=$((n + 1)) skipped=$((skipped + 1))
		echo "ok $n # SKIP $1"
	fi
	finish
}
finish() {
	echo "1..$n"
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" = 0 ]
	exit $?
}

[ "$(id -u)" = 0 ] || skip_all "needs root (debootstrap, mount namespaces, pivot_root)"
command -v dpkg-query >/dev/null 2>&1 || skip_all "not a Debian system"

work=$(mktemp -d /var/tmp/ward-pkgtest.XXXXXX)
chmod 755 "$work"
trap 'umount -R "$work/root" 2>/dev/null; rm -rf "$work"' EXIT

# ------------------------------------------------------------------ the packages

debs=${1:-}
if [ -z "$debs" ]; then
	debs=$work/debs
	if out=$(bash "$top/scripts/build-packages.sh" "$debs" 2>&1); then
		ok "dpkg-buildpackage -us -uc -b builds ward, libward0, libward-dev; lintian clean; man pages render without warnings"
	else
		not_ok "the packages build, lintian clean, man pages without warnings" "$out"
		finish
	fi
fi
for p in ward libward0 libward-dev; do
	ls "$debs"/${p}_*.deb >/dev/null 2>&1 || {
		not_ok "package $p built" "no ${p}_*.deb in $debs"
		finish
	}
done

# ------------------------------------------------------------------ a fresh Debian 12

tarball=$(bash "$top/scripts/debian-rootfs.sh" 2>"$work/rootfs.log") || {
	not_ok "a fresh Debian 12 root (debootstrap)" "$(cat "$work/rootfs.log")"
	finish
}
mkdir -m 755 "$work/root"
tar -C "$work/root" --no-overwrite-dir -xf "$tarball" && chmod 755 "$work/root" || {
	not_ok "unpack the Debian 12 root"
	finish
}
mkdir -p "$work/root/debs"
cp "$debs"/ward_*.deb "$debs"/libward0_*.deb "$debs"/libward-dev_*.deb "$work/root/debs/"
cp "$top/examples/sandboxed-run.c" "$work/root/debs/"
cp /etc/resolv.conf "$work/root/etc/resolv.conf" 2>/dev/null

# in_root SCRIPT: runs SCRIPT (bash) as root in the fresh system: its own mount,
# pid, ipc and uts namespaces, a fresh /proc, a minimal /dev, pivot_root into it
# (not chroot: the kernel refuses user namespaces to a chrooted process), the
# host's network (for apt). Output on stdout and stderr.
in_root() {
	unshare --mount --pid --ipc --uts --fork --kill-child bash -s "$work/root" "$1" <<'EOF'
set -e
root=$1
mount --make-rprivate /
mount --bind "$root" "$root"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys" 2>/dev/null || true
mount -t tmpfs -o mode=755,nosuid tmpfs "$root/dev"
for d in null zero full random urandom tty; do
	touch "$root/dev/$d"
	mount --bind "/dev/$d" "$root/dev/$d"
done
mkdir -p "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
ln -s /proc/self/fd "$root/dev/fd"
mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mount -t tmpfs -o mode=755 tmpfs "$root/run"
hostname ward-fresh 2>/dev/null || true
cd "$root"
mkdir -p .oldroot
pivot_root . .oldroot
umount -l /.oldroot
rmdir /.oldroot
cd /
exec env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive bash -c "$2"
EOF
}

# ------------------------------------------------------------------ install

if out=$(in_root 'apt-get update -qq && apt-get install -y -qq --no-install-recommends \
	./debs/ward_*.deb ./debs/libward0_*.deb ./debs/libward-dev_*.deb gcc libc6-dev pkgconf' 2>&1); then
	ok "apt-get install ./ward_*.deb ./libward0_*.deb ./libward-dev_*.deb on a fresh Debian 12"
else
	not_ok "apt-get install the packages on a fresh Debian 12" "$(tail -n 20 <<<"$out")"
	finish
fi

# ------------------------------------------------------------------ the checks, as root and as uid 65534

checks='
set -u
as() { if [ "$1" = root ]; then shift; "$@"; else shift; setpriv --reuid 65534 --regid 65534 --clear-groups -- "$@"; fi; }
for who in root nobody; do
	d=$(mktemp -d /var/tmp/ws.XXXXXX); chmod 777 "$d"; cd "$d"
	v=$(as $who ward --version) && echo "check $who version $v"
	as $who ward doctor >doctor.out 2>&1; echo "check $who doctor $? $(grep -c "^  ok " doctor.out) $(grep "full isolation" doctor.out | head -n 1)"
	as $who ward run -- true; echo "check $who run-true $?"
	as $who ward run -- sh -c "echo x >/etc/ward-pkgtest" 2>/dev/null; echo "check $who run-outside $? $(test -e /etc/ward-pkgtest && echo written || echo absent)"
	as $who cc -o prog /debs/sandboxed-run.c $(pkg-config --cflags --libs ward) 2>cc.err; echo "check $who cc $? $(head -c 300 cc.err | tr "\n" " ")"
	out=$(as $who ./prog sh -c "echo hello; echo in >here" 2>&1); echo "check $who prog $? $(echo "$out" | head -n 1) $(cat here 2>/dev/null)"
	cd /; rm -rf "$d"
done
'
out=$(in_root "$checks" 2>&1)
line() { grep -m 1 "^check $1 $2 " <<<"$out" | cut -d' ' -f4-; }
for who in root nobody; do
	label=$([ $who = root ] && echo root || echo "uid 65534")
	v=$(line $who version)
	[[ $v == "ward 0."*"(commit "* ]] && ok "$label: ward --version names the version and the commit ($v)" ||
		not_ok "$label: ward --version" "$out"
	read -r rc nok full <<<"$(line $who doctor)"
	[ "$rc" = 0 ] && [ -n "$full" ] && ok "$label: ward doctor reports full isolation ($nok features ok)" ||
		not_ok "$label: ward doctor (exit $rc)" "$out"
	[ "$(line $who run-true)" = 0 ] && ok "$label: ward run -- true" || not_ok "$label: ward run -- true" "$out"
	read -r rc st <<<"$(line $who run-outside)"
	[ "$rc" != 0 ] && [ "$st" = absent ] && ok "$label: a write to /etc is refused" ||
		not_ok "$label: a write to /etc is refused (exit $rc, $st)" "$out"
	[ "$(line $who cc | cut -d' ' -f1)" = 0 ] &&
		ok "$label: cc sandboxed-run.c \$(pkg-config --cflags --libs ward)" ||
		not_ok "$label: cc sandboxed-run.c \$(pkg-config --cflags --libs ward)" "$out"
	read -r rc first here <<<"$(line $who prog)"
	[ "$rc" = 0 ] && [ "$first" = hello ] && [ "$here" = in ] && ok "$label: the program runs a sandboxed command through libward" ||
		not_ok "$label: the libward program (exit $rc)" "$out"
done

# ------------------------------------------------------------------ dependencies

# Each package's Depends against what its ELF files need (NEEDED, through dpkg -S in
# the fresh system), plus what its maintainer scripts run (init-system-helpers for
# the systemd units) and libward-dev's libward0. (objdump came with gcc.)
deps='
for p in ward libward0 libward-dev; do
	need=$(dpkg -L $p | while read -r f; do [ -f "$f" ] && [ ! -L "$f" ] && head -c 4 "$f" | grep -q ELF && objdump -p "$f" 2>/dev/null | awk "/NEEDED/ {print \$2}"; done | sort -u |
		while read -r lib; do dpkg -S "*/$lib" 2>/dev/null | head -n 1 | cut -d: -f1; done | sort -u | tr "\n" " ")
	has=$(dpkg-query -W -f "\${Depends}" $p | tr "," "\n" | sed "s/(.*//; s/ //g" | grep . | sort -u | tr "\n" " ")
	echo "deps $p need=[$need] has=[$has]"
done'
dout=$(in_root "$deps" 2>&1)
for p in ward libward0 libward-dev; do
	l=$(grep "^deps $p " <<<"$dout")
	need=$(sed 's/.*need=\[\([^]]*\)\].*/\1/' <<<"$l" | xargs -n 1 | sort -u | xargs)
	has=$(sed 's/.*has=\[\([^]]*\)\].*/\1/' <<<"$l" | xargs -n 1 | grep -v -x -e init-system-helpers -e libward0 | sort -u | xargs)
	[ -n "$l" ] && [ "$need" = "$has" ] && ok "$p depends on exactly what it links (${has:-nothing else})" ||
		not_ok "$p's dependencies" "$l"
done
finish
