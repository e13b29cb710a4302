#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What a release says of itself: `ward --version` (and ward serve's and ward
# mcp's) names meson's project version and a commit, NEWS.md has a section for
# that version, and debian/changelog's newest entry is that version. TAP.
#
#   check-version.sh WARD SRCDIR VERSION
set -uo pipefail
ward=$1 src=$2 version=$3
n=0 failed=0
check() {
	n=$((n + 1))
	if [ "$2" = ok ]; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
		echo "# $2"
		failed=1
	fi
}
for verb in "" serve mcp; do
	# shellcheck disable=SC2086
	v=$("$ward" $verb --version 2>&1)
	[[ $v =~ ^ward\ ${version//./\\.}\ \(commit\ ([0-9a-f]{7,40}|unknown)\)$ ]] &&
		check "ward ${verb:+$verb }--version: '$v'" ok || check "ward ${verb:+$verb }--version" "got '$v'"
done
grep -q "^## $version\b" "$src/NEWS.md" && check "NEWS.md has a section for $version" ok ||
	check "NEWS.md has a section for $version" "no '## $version' heading"
d=$(head -n 1 "$src/debian/changelog" | sed -n 's/^ward (\([^)-]*\).*/\1/p')
[ "$d" = "$version" ] && check "debian/changelog's newest entry is $version" ok ||
	check "debian/changelog's newest entry is $version" "it is '$d'"
echo "1..$n"
exit $failed
