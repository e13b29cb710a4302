# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Where scripts/setup-node.sh put the Node MCP clients: NODE_PREFIX, NODE (its node 22).
if [ -n "${WARD_NODE_PREFIX:-}" ]; then
	NODE_PREFIX=$WARD_NODE_PREFIX
elif [ "$(id -u)" = 0 ] || [ -d /var/tmp/ward-test-node/node_modules ]; then
	NODE_PREFIX=/var/tmp/ward-test-node
else
	NODE_PREFIX=${WARD_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/build/node-clients
fi
NODE=$NODE_PREFIX/node_modules/.bin/node
