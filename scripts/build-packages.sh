#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Builds the Debian packages (ward, libward0, libward-dev) from this checkout
# as `dpkg-buildpackage -us -uc -b` does, in a copy of the tree (the
# committed files plus uncommitted changes; the checkout and its parent
# directory stay clean), then holds them to the release's bar: lintian with
# no error or warning (overrides are explained in debian/*.lintian-overrides),
# and every man page rendering without a warning.
#
#   scripts/build-packages.sh [OUTDIR]     default OUTDIR: build/debian
#
# Installs what the build needs (debhelper, lintian and the Build-Depends of
# debian/control) through scripts/setup-deps.sh. Prints the .deb paths last.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/build/debian}
die() {
	echo "build-packages: $*" >&2
	exit 1
}

bash "$top/scripts/setup-deps.sh" build-essential dpkg-dev debhelper lintian fakeroot man-db groff-base \
	meson ninja-build pkgconf libc-ares-dev libjansson-dev libseccomp-dev libssl-dev libsystemd-dev libwslay-dev systemd g++ ||
	die "cannot install the packaging tools"

work=$(mktemp -d /var/tmp/ward-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/ward"
# What git knows (committed or not, never ignored build output), with the commit.
git -C "$top" ls-files -z --cached --others --exclude-standard |
	tar -C "$top" --null --no-recursion -T - -cf - | tar -C "$work/ward" -xf -
git -C "$top" rev-parse --short=12 HEAD >"$work/ward/.ward-commit"
[ -n "$(git -C "$top" status --porcelain)" ] && echo "build-packages: note: uncommitted changes are included" >&2

echo "== dpkg-buildpackage -us -uc -b" >&2
(cd "$work/ward" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 || {
	tail -n 40 "$work/build.log" >&2
	die "dpkg-buildpackage failed"
}

echo "== lintian" >&2
lintian --pedantic --fail-on error,warning "$work"/ward_*.changes >&2 || die "lintian is not clean"

echo "== man pages" >&2
mkdir "$work/x"
for deb in "$work"/*.deb; do
	dpkg-deb -x "$deb" "$work/x"
done
for page in "$work"/x/usr/share/man/man*/*; do
	w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
	[ -z "$w" ] || die "$(basename "$page") renders with warnings: $w"
done

mkdir -p "$out"
rm -f "$out"/*.deb
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
ls "$out"/*.deb
