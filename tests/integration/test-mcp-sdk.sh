#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# `ward mcp` driven by the official MCP TypeScript SDK (tests/mcp/sdk-client.mjs),
# from the Node clients scripts/setup-node.sh installed: its TAP is this test's.
set -u
src=${WARD_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
ward=${WARD:-$src/build/ward}
# shellcheck source=node-prefix.sh
. "$src/tests/integration/node-prefix.sh"
prefix=$NODE_PREFIX
node=$NODE
if [ ! -x "$node" ]; then
	if [ "${WARD_MUST_WORK:-0}" = 1 ]; then
		echo "Bail out! the MCP test clients are not installed in $prefix (scripts/setup-node.sh)"
		exit 1
	fi
	echo "1..0 # SKIP the MCP test clients are not installed (run scripts/setup-node.sh)"
	exit 0
fi
work=$(mktemp -d /tmp/ward-mcp-sdk.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The script resolves the SDK from its own directory: link the installed modules beside it.
ln -s "$prefix/node_modules" "$work/node_modules"
cp "$src/tests/mcp/sdk-client.mjs" "$work/"
mkdir "$work/ws"
"$node" "$work/sdk-client.mjs" "$ward" "$work/ws"
