#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The limits suite on a real systemd machine with cgroup v2: boots the Debian 12
# machine of ../shared/tools/vm/run.sh (qemu, TCG) once, and runs in it
# tests/vm/inside.sh: ward's subtree from the system manager (root) and from a
# user's manager over D-Bus (uid 1000), and from a cgroup delegated to ward
# alone; the unit tests of the limits layer and tests/integration/test-limits.sh,
# as root and as that user. The development machines cannot run these: their
# memory, pids and cpu controllers are on cgroup v1, and they have no systemd.
#
#   sudo tests/vm/run-limits.sh          # builds build/ first when needed
#
# Needs root (the machine's tool does), qemu (installed by the tool), and the
# machine's image (built by the tool on first use: about 2 minutes, with network
# access to Debian's mirrors). The binaries are built here and copied in: ward is
# static; ward-serve, ward-scope and the test binaries use the machine's own
# libraries (the same Debian 12), and libcares, which the image lacks, travels
# with them. Environment: WARD_VM_RUN (the tool; default ../shared/tools/vm/run.sh
# beside the checkout, or beside its parent for a worktree), WARD_VM_TIMEOUT (seconds, default 2400). Ends with
# "N passed, N failed" and exits non-zero on a failure; 77 when the machine
# cannot be run here (no tool, not root).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
# The tool beside the checkout (../shared), or beside a worktree's parent (../../shared).
vm=${WARD_VM_RUN:-}
for cand in "$top/../shared/tools/vm/run.sh" "$top/../../shared/tools/vm/run.sh"; do
	[ -z "$vm" ] && [ -f "$cand" ] && vm=$cand
done
[ -n "$vm" ] && [ -f "$vm" ] || { echo "run-limits: no VM tool (../shared/tools/vm/run.sh; set WARD_VM_RUN)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "run-limits: needs root (the VM tool does)"; exit 77; }
start=$(date +%s)

if [ ! -f "$top/build/build.ninja" ]; then
	(cd "$top" && CC=gcc meson setup build -Dwerror=true >/dev/null) || exit 1
fi
ninja -C "$top/build" >/dev/null || { echo "run-limits: the build failed"; exit 1; }

stage=$(mktemp -d /var/tmp/ward-vm-limits.XXXXXX)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/tests/integration" "$stage/tests/helpers" "$stage/tests/vm"
cp "$top/build/ward" "$top/build/ward-serve" "$top/build/ward-scope" "$top/build/tests/probe" \
	"$top/build/tests/test-limits" "$stage/bin/"
for l in $(ldd "$top/build/ward-serve" | awk '/libcares/ {print $3}'); do
	cp -L "$l" "$stage/lib/"
done
cp "$top/tests/integration/lib.sh" "$top/tests/integration/test-limits.sh" "$stage/tests/integration/"
cp "$top/tests/helpers/limits-client.py" "$top/tests/helpers/serve-client.py" \
	"$top/tests/helpers/mcp-raw.py" "$stage/tests/helpers/"
cp "$top/tests/vm/inside.sh" "$stage/tests/vm/"

bash "$vm" --timeout "${WARD_VM_TIMEOUT:-2400}" "$stage" 'bash tests/vm/inside.sh'
rc=$?
echo "run-limits: $(( $(date +%s) - start )) s in all"
exit $rc
