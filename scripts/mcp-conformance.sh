#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, installed by
# scripts/setup-node.sh) against `ward mcp`. The suite tests servers only over Streamable
# HTTP, so tests/mcp/conformance-bridge.mjs relays its messages unchanged to `ward mcp` on
# stdio with the SDK's own transports. Scenarios that need the suite's test fixtures
# (tools named test_*, resources, prompts, logging, sampling) do not apply to ward; the ones
# every server must pass are server-initialize, ping and tools-list.
# Usage: scripts/mcp-conformance.sh [SCENARIO]   (not part of the test suite: a report)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/setup-node.sh"
# shellcheck source=../tests/integration/node-prefix.sh
. "$top/tests/integration/node-prefix.sh"
work=$(mktemp -d /tmp/ward-conformance.XXXXXX)
trap 'kill $bridge 2>/dev/null; rm -rf "$work"' EXIT
ln -s "$NODE_PREFIX/node_modules" "$work/node_modules"
cp "$top/tests/mcp/conformance-bridge.mjs" "$work/"
port=$((20000 + RANDOM % 20000))
"$NODE" "$work/conformance-bridge.mjs" "$port" "$top/build/ward" -C "$work" --no-login &
bridge=$!
sleep 1
cd "$work"
"$NODE" "$NODE_PREFIX/node_modules/.bin/conformance" server --url "http://127.0.0.1:$port/mcp" \
	${1:+--scenario "$1"}
