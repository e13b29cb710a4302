#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Inside the test image (deploy/Containerfile, stage test): ward's isolation
# suites against the installed ward, as whoever the container runs as. Where
# the container masks /proc, ward keeps the container's and says so; the
# suites see that through `ward doctor` (lib.sh) and check what it promises
# there instead. Ends with "N passed, N failed, N skipped"; exit status non-zero
# on a failure.
#
#   run-isolation.sh [SUITE...]        default: fs git net escape process capture
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export WARD=${WARD:-/usr/bin/ward} PROBE=${PROBE:-$PWD/bin/probe}
export WARD_HARDENED_WRAPPER=$PWD/bin/hardened-wrapper WARD_SRC=$PWD
export WARD_INSTALL_PATH=/usr/bin/ward WARD_TEST_TMPDIR=${WARD_TEST_TMPDIR:-/var/tmp}
[ -w "$WARD_TEST_TMPDIR" ] || export WARD_TEST_TMPDIR=/tmp
suites=${*:-fs git net escape process capture}
p=0 f=0 s=0
echo "== $(id -un 2>/dev/null || id -u) (uid $(id -u)): $($WARD --version)"
$WARD doctor | sed -n '/^ward run gives here:/,$p'
for t in $suites; do
	out=$(timeout 600 bash "tests/integration/test-$t.sh" 2>&1)
	tp=$(grep -c '^ok ' <<<"$out" | tr -d ' ')
	ts=$(grep -c '^ok .*# SKIP' <<<"$out" | tr -d ' ')
	tf=$(grep -c '^not ok ' <<<"$out" | tr -d ' ')
	grep -q '^1\.\.' <<<"$out" || tf=$((tf + 1))
	tp=$((tp - ts))
	echo "  $t: $tp passed, $tf failed, $ts skipped"
	[ "$tf" = 0 ] || grep -A 12 '^not ok' <<<"$out" | head -n 60 | sed 's/^/    /'
	p=$((p + tp)) f=$((f + tf)) s=$((s + ts))
done
echo "$p passed, $f failed, $s skipped"
[ "$f" = 0 ]
