#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Installs the Debian packages ward's build and tests need, only those missing,
# quietly: as root directly, otherwise through sudo. Does nothing when all are
# present (the usual case after the first run). With arguments, installs those
# packages instead (scripts/setup-node.sh uses it for Node.js and npm).
set -euo pipefail

# Every package the build, the tests and the benchmarks use, named explicitly:
# apt-get runs with --no-install-recommends, so nothing arrives as a
# recommendation (zsh is for the login-shell snapshot test of ward mcp; clang
# alone does not bring the sanitizer runtimes, which are
# libclang-rt-14-dev). coreutils, util-linux (unshare, setpriv, su), bsdutils
# (script), findutils and mawk are part of every Debian system; they are named
# anyway so that a trimmed image is caught here, not halfway through the tests.
packages=(
	meson ninja-build pkg-config gcc g++ libc6-dev clang libclang-rt-14-dev binutils
	libseccomp-dev libjansson-dev libssl-dev libwslay-dev libc-ares-dev libsystemd-dev
	git python3 python3-websockets bubblewrap time iproute2 coreutils util-linux bsdutils findutils
	mawk procps apparmor zsh
	curl openssl python3-dnslib python3-pip
)
if [ $# -gt 0 ]; then
	packages=("$@")
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "setup-deps: not a Debian system; install these (or your distribution's equivalents) yourself:" >&2
	echo "  ${packages[*]}" >&2
	exit 0
fi

missing=()
for p in "${packages[@]}"; do
	if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" != installed ]; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ]; then
	sudo=()
elif command -v sudo >/dev/null 2>&1; then
	sudo=(sudo)
else
	echo "setup-deps: missing packages: ${missing[*]}; run as root or install sudo" >&2
	exit 1
fi

echo "setup-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >/dev/null
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	"${missing[@]}" >/dev/null
