#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A minimal Debian 12 (bookworm) root filesystem, made once with debootstrap
# and kept as a tarball: the bare system scripts/test-packages.sh installs the
# packages on, and the base of the container image (deploy/Containerfile)
# where no image registry is reachable.
#
#   scripts/debian-rootfs.sh [DIR]     prints DIR/bookworm-minbase.tar (default
#                                      DIR: /var/tmp/ward-rootfs); --rebuild makes it anew
#
# The mirror is the host's (its first bookworm entry; WARD_DEBIAN_MIRROR
# overrides it), and the tarball's apt sources are the host's bookworm,
# -updates and -security entries, with the host's Acquire::Check-Valid-Until
# and Check-Date settings (a snapshot mirror needs them). Needs root.
set -euo pipefail

rebuild=0
if [ "${1:-}" = --rebuild ]; then
	rebuild=1
	shift
fi
dir=${1:-/var/tmp/ward-rootfs}
tar=$dir/bookworm-minbase.tar
top=$(cd "$(dirname "$0")/.." && pwd)
die() {
	echo "debian-rootfs: $*" >&2
	exit 1
}

if [ -s "$tar" ] && [ "$rebuild" = 0 ]; then
	echo "$tar"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "run as root (debootstrap)"
bash "$top/scripts/setup-deps.sh" debootstrap >&2 || die "cannot install debootstrap"

# "URI SUITE COMPONENTS" for every enabled deb entry of the host's apt sources.
host_sources() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
			c = ""; for (j = i + 2; j <= NF; j++) c = c " " $j; print $i, $(i + 1) c }' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk 'BEGIN { RS = ""; FS = "\n" }
		{ ty = u = s = c = ""; en = "yes"
		  for (k = 1; k <= NF; k++) { l = $k
			if (l ~ /^[#[:space:]]/ || index(l, ":") == 0) continue
			key = tolower(substr(l, 1, index(l, ":") - 1)); v = substr(l, index(l, ":") + 1)
			gsub(/^[ \t]+|[ \t]+$/, "", v)
			if (key == "types") ty = v; else if (key == "uris") u = v
			else if (key == "suites") s = v; else if (key == "components") c = v
			else if (key == "enabled") en = tolower(v) }
		  if (en == "no" || (" " ty " ") !~ / deb /) next
		  n = split(u, U, /[ \t]+/); m = split(s, S, /[ \t]+/)
		  for (a = 1; a <= n; a++) for (b = 1; b <= m; b++) print U[a], S[b], c }' "$f"
	done
}

srcs=$(host_sources | awk '$2 ~ /^bookworm(-updates|-security|-updates)?$/ || $2 == "bookworm-security"' | sort -u)
mirror=${WARD_DEBIAN_MIRROR:-$(awk '$2 == "bookworm" { print $1; exit }' <<<"$srcs")}
mirror=${mirror:-http://deb.debian.org/debian}
[ -n "$srcs" ] || srcs="$mirror bookworm main
$mirror bookworm-updates main
http://deb.debian.org/debian-security bookworm-security main"

mkdir -p "$dir"
new=$(mktemp -d "$dir/root.XXXXXX")
chmod 755 "$new" # the root directory of a system
trap 'rm -rf "$new"' EXIT
echo "debian-rootfs: debootstrap --variant=minbase bookworm from $mirror (a few minutes)" >&2
debootstrap --variant=minbase bookworm "$new" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
	die "debootstrap failed (see $dir/debootstrap.log)"
awk '{ c = ""; for (i = 3; i <= NF; i++) c = c " " $i; print "deb " $1 " " $2 (c == "" ? " main" : c) }' \
	<<<"$srcs" >"$new/etc/apt/sources.list"
apt-config dump | grep -E '^Acquire::Check-(Valid-Until|Date) ' >"$new/etc/apt/apt.conf.d/99ward-host" || true
# Like an image: no package lists, no caches (apt-get update first).
rm -rf "$new"/var/lib/apt/lists/* "$new"/var/cache/apt/*.bin "$new"/var/cache/apt/archives/*.deb
tar -C "$new" --numeric-owner -cf "$tar.new" . || die "cannot write $tar"
mv "$tar.new" "$tar"
echo "$tar"
