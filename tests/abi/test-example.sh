#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# examples/sandboxed-run.c, built against libward.so: it runs a command in the
# sandbox and reports what the sandbox refused. TAP.
set -uo pipefail
ex=$1
dir=$(mktemp -d /var/tmp/ward-example.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; sed 's/^/# /' <<<"$2"; failed=1; }

out=$("$ex" sh -c 'echo hello; echo inside >here' 2>&1)
if [ "$(head -n 1 <<<"$out")" = hello ] && grep -q 'exit code 0' <<<"$out" && [ "$(cat here 2>/dev/null)" = inside ]; then
	ok "runs a command that writes in its working directory"
else
	not_ok "runs a command that writes in its working directory" "$out"
fi
name=ward-example-$$-$RANDOM
out=$("$ex" sh -c "echo x >/etc/$name" 2>&1)
if [ ! -e "/etc/$name" ] && ! grep -q 'exit code 0' <<<"$out" && grep -q 'refused something\|unknown' <<<"$out"; then
	ok "a write outside is refused and reported"
else
	rm -f "/etc/$name"
	not_ok "a write outside is refused and reported" "$out"
fi
echo "1..$n"
exit $failed
