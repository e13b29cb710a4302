#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# examples/sandboxed-run.c, built against libward.so: it runs a command in the
# sandbox and reports what the sandbox refused. TAP.
set -uo pipefail
ex=$1
dir=$(mktemp -d /var/tmp/ward-example.XXXXXX)
trap 'rm -rf "$dir"' EXIT
# The workspace, and beside it a directory of the user's own that is not a writable root:
# a write there is the sandbox's refusal (to /etc, a user's would be the host's own).
mkdir "$dir/ws" "$dir/outside"
cd "$dir/ws" || exit 1
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; sed 's/^/# /' <<<"$2"; failed=1; }

out=$("$ex" sh -c 'echo hello; echo inside >here' 2>&1)
if [ "$(head -n 1 <<<"$out")" = hello ] && grep -q 'exit code 0' <<<"$out" && [ "$(cat here 2>/dev/null)" = inside ]; then
	ok "runs a command that writes in its working directory"
else
	not_ok "runs a command that writes in its working directory" "$out"
fi
out=$("$ex" sh -c "echo x >'$dir/outside/f'" 2>&1)
if [ ! -e "$dir/outside/f" ] && ! grep -q 'exit code 0' <<<"$out" && grep -q 'refused something\|unknown' <<<"$out"; then
	ok "a write outside is refused and reported"
else
	not_ok "a write outside is refused and reported" "$out"
fi
echo "1..$n"
exit $failed
