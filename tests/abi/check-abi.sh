#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# libward's exported symbols against its ABI as released: every symbol the
# built library exports is in src/libward.sym under its version node, every
# symbol listed there is exported and declared WARD_PUBLIC in ward.h (and every
# one declared is listed), all are ward_* (never the internal ward__*),
# the soname is libward.so.0, and debian/libward0.symbols (what dpkg-gensymbols
# holds the Debian package to) lists the same. TAP.
#
#   check-abi.sh LIBWARD.so SRCDIR
set -uo pipefail
lib=$1 src=$2
n=0 failed=0
check() { # check DESCRIPTION COMMAND...
	n=$((n + 1))
	local out
	if out=$("${@:2}" 2>&1); then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
		sed 's/^/# /' <<<"$out"
		failed=1
	fi
}

exported() {
	nm -D --defined-only --with-symbol-versions "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' |
		sed 's/@@*/ /' | awk '{print $1 " " $2}' | sort
}
# "symbol NODE" for every symbol of src/libward.sym.
listed() {
	sed 's|/\*.*\*/||; /^ \*/d; /^\/\*/d' "$src/src/libward.sym" | awk '
		/^[A-Z0-9_.]+ *\{/ { node = $1; next }
		/^[ \t]*[a-z_0-9]+;/ && node != "" { gsub(/[ \t;]/, ""); print $0 " " node }' | sort
}

t_matches() { diff <(listed) <(exported); }
# Every function ward.h declares WARD_PUBLIC is listed (a new one missing here would be
# hidden by the script's "local: *" and fail to link in every program using it).
declared() {
	tr '\n' ' ' <"$src/include/ward/ward.h" | grep -o 'WARD_PUBLIC [^;{]*(' |
		grep -o 'ward_[a-z0-9_]*[[:space:]]*($' | tr -d ' (' | sort -u
}
t_header() { diff <(declared) <(listed | awk '{print $1}'); }
t_names() { ! exported | awk '{print $1}' | grep -v '^ward_[a-z0-9]' || ! exported | grep '^ward__'; }
t_soname() {
	local s
	s=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
	[ "$s" = libward.so.0 ] || { echo "soname $s"; return 1; }
}
t_debian() {
	[ -f "$src/debian/libward0.symbols" ] || { echo "no debian/libward0.symbols"; return 1; }
	diff <(listed | awk '{print $1 "@" $2}') \
		<(awk '/^ ward_/ {print $1}' "$src/debian/libward0.symbols" | sort)
}

check "every exported symbol is in src/libward.sym under its node, and the reverse" t_matches
check "every WARD_PUBLIC function of ward.h is in src/libward.sym, and the reverse" t_header
check "only ward_* symbols are exported" t_names
check "the soname is libward.so.0" t_soname
check "debian/libward0.symbols lists the same symbols" t_debian
echo "1..$n"
exit $failed
