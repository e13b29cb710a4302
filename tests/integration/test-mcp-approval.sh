#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# `ward mcp -a MODE` driven by the official MCP TypeScript SDK
# (tests/mcp/sdk-approval.mjs): elicitation, the fallback without it, retries
# outside the sandbox, rules, the audit log. Its TAP is this test's.
set -u
src=${WARD_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
ward=${WARD:-$src/build/ward}
# shellcheck source=node-prefix.sh
. "$src/tests/integration/node-prefix.sh"
if [ ! -x "$NODE" ]; then
	if [ "${WARD_MUST_WORK:-0}" = 1 ]; then
		echo "Bail out! the MCP test clients are not installed in $NODE_PREFIX (scripts/setup-node.sh)"
		exit 1
	fi
	echo "1..0 # SKIP the MCP test clients are not installed (run scripts/setup-node.sh)"
	exit 0
fi
# Not under /tmp: /tmp is writable inside the sandbox, and the test needs a place that is not.
base=${TMPDIR_NOT_TMP:-/var/tmp}
work=$(mktemp -d "$base/ward-mcp-approval.XXXXXX")
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
ln -s "$NODE_PREFIX/node_modules" "$work/node_modules"
cp "$src/tests/mcp/sdk-approval.mjs" "$work/"
mkdir "$work/t"
"$NODE" "$work/sdk-approval.mjs" "$ward" "$work/t"
