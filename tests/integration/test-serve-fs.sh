#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The filesystem methods of `ward serve` (fs/*): the data-driven protocol
# cases of tests/protocol/fs/*.jsonl (requests in, Codex's answers out, the
# effect on the host checked after each step) and the adversarial ones of
# tests/protocol/fs/adversarial.py (symlink races against sandboxed
# operations, FIFOs swapped in, huge listings, deep trees, full queues).
# TAP on stdout. Environment: WARD, WARD_SRC, WARD_TEST_TMPDIR, WARD_MUST_WORK.
set -u
WARD_SRC=${WARD_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
export WARD=${WARD:-$WARD_SRC/build/ward}
PY=$(command -v python3 || true)
if [ -z "$PY" ]; then
	if [ "${WARD_MUST_WORK:-0}" = 1 ]; then
		echo "Bail out! python3 is needed"
		exit 1
	fi
	echo "1..0 # SKIP python3 is needed"
	exit 0
fi
exec "$PY" "$WARD_SRC/tests/protocol/fs/run.py"
