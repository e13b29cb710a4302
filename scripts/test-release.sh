#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Everything a release is checked for, minutes of it (scripts/test.sh runs this
# with WARD_TEST_RELEASE=1; README.md, "Test it"):
#
#   1. `meson dist` makes a tarball that builds with no network at all (in a
#      network namespace of its own), whose ward names the commit it came from;
#   2. scripts/test-packages.sh: the Debian packages built, lintian clean, and
#      installed on a fresh Debian 12, checked as root and as uid 65534;
#   3. scripts/test-container.sh: the container image built from a
#      debootstrap'ed Debian 12 and run with podman, the isolation suites inside.
#
# (The systemd units are checked by scripts/test-systemd.sh on a machine booted
# with systemd, which a CI container is not.) TAP from each part, then the sum
# "N passed, N failed, N skipped"; the exit status is non-zero on any failure.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
total_p=0 total_f=0 total_s=0
add() { # add OUTPUT: sums its last "N passed, N failed, N skipped" line
	local l
	l=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' <<<"$1" | tail -n 1)
	if [ -z "$l" ]; then
		total_f=$((total_f + 1))
		return
	fi
	read -r p _ f _ s _ <<<"$l"
	total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
}

echo "== meson dist, then an offline build of the tarball"
work=$(mktemp -d /var/tmp/ward-dist.XXXXXX)
trap 'rm -rf "$work"' EXIT
out=$( (cd "$top" && CC=gcc meson setup "$work/build" >/dev/null && meson dist -C "$work/build" --no-tests \
	--formats xztar --allow-dirty) 2>&1)
tarball=$(ls "$work"/build/meson-dist/ward-*.tar.xz 2>/dev/null | head -n 1)
p=0 f=0
if [ -n "$tarball" ]; then
	echo "ok 1 - meson dist: $(basename "$tarball")"
	p=$((p + 1))
	mkdir "$work/x" && tar -C "$work/x" -xf "$tarball"
	src=$(ls -d "$work"/x/ward-*)
	# No network at all: a network namespace of its own (unshare -n) where it can.
	net=(unshare -n)
	unshare -n true 2>/dev/null || net=()
	if out=$(cd "$src" && "${net[@]}" sh -c 'CC=gcc meson setup b >/dev/null && ninja -C b >/dev/null && b/ward --version' 2>&1); then
		commit=$(git -C "$top" rev-parse --short=12 HEAD)
		if [[ $out == *"(commit $commit)" ]]; then
			echo "ok 2 - the tarball builds ${net:+without a network }and its ward says '$out'"
			p=$((p + 1))
		else
			echo "not ok 2 - the tarball's ward --version: '$out', want commit $commit"
			f=$((f + 1))
		fi
	else
		echo "not ok 2 - the tarball builds offline"
		tail -n 20 <<<"$out" | sed 's/^/# /'
		f=$((f + 1))
	fi
else
	echo "not ok 1 - meson dist"
	tail -n 20 <<<"$out" | sed 's/^/# /'
	f=$((f + 1))
fi
echo "1..$((p + f))"
add "$p passed, $f failed, 0 skipped"

echo "== the Debian packages on a fresh Debian 12 (scripts/test-packages.sh)"
out=$(bash "$top/scripts/test-packages.sh" 2>&1)
echo "$out"
add "$out"

echo "== the container image (scripts/test-container.sh)"
out=$(bash "$top/scripts/test-container.sh" 2>&1)
echo "$out"
add "$out"

echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" = 0 ]
