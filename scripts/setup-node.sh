#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Installs the real clients the test suite drives ward with (the official MCP
# TypeScript SDK, the MCP Inspector, the conformance suite, the Node 22 build
# from npm that the Inspector needs, the Codex CLI and Claude Code), exactly as
# pinned by tests/mcp/package-lock.json, into $WARD_NODE_PREFIX (default
# /var/tmp/ward-test-node when root, build/node-clients otherwise): outside
# the source tree, readable by the unprivileged test user. Node and npm come
# from Debian when missing. Does nothing when the installed set matches the
# lock file.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" = 0 ]; then
	prefix=${WARD_NODE_PREFIX:-/var/tmp/ward-test-node}
else
	prefix=${WARD_NODE_PREFIX:-$top/build/node-clients}
fi
lock=$top/tests/mcp/package-lock.json

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	bash "$top/scripts/setup-deps.sh" nodejs npm
fi

stamp=$(sha256sum "$lock" | cut -d' ' -f1)
if [ -f "$prefix/.ward-stamp" ] && [ "$(cat "$prefix/.ward-stamp")" = "$stamp" ] &&
	[ -x "$prefix/node_modules/.bin/node" ]; then
	exit 0
fi
echo "setup-node: installing the test clients into $prefix" >&2
mkdir -p "$prefix"
chmod 755 "$prefix"
rm -rf "$prefix/node_modules" "$prefix/.ward-stamp"
cp "$top/tests/mcp/package.json" "$lock" "$prefix/"
# No install scripts run; the tests need none. The Inspector's (installing its
# other clients) does not concern its CLI mode; Claude Code's copies the native
# binary of the platform's package (an optional dependency, installed as usual)
# over a placeholder, and test-clients.sh runs that binary where npm put it.
# Codex's launcher finds its platform package by itself.
(cd "$prefix" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
chmod -R a+rX "$prefix"
echo "$stamp" >"$prefix/.ward-stamp"
