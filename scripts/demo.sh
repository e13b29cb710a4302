#!/usr/bin/env bash
# The README's first command: build ward (installing missing Debian packages) and run
# one sandboxed shell in a scratch git repository that shows the policy at work.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/setup-deps.sh"
if [ ! -d "$top/build" ]; then
	meson setup "$top/build" "$top" >/dev/null
fi
ninja -C "$top/build" >/dev/null
ward=$top/build/ward

work=$(mktemp -d /tmp/ward-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
git -C "$work" init -q
git -C "$work" -c user.name=demo -c user.email=demo@example.invalid commit -q --allow-empty -m init

# Each sandboxed run's status is the command's own (a refusal inside is not a
# failure of the demo); only ward's own failures (125 and up) end it.
status() {
	if [ "$1" -ge 125 ]; then
		echo "demo: ward failed (exit $1)" >&2
		exit 1
	fi
	echo "  (exit status $1: the command's own)"
}

echo "\$ ward run -C $work -- sh -c '...'"
rc=0
"$ward" run -C "$work" -- sh -c '
try() { if "$@" 2>/dev/null; then echo "  allowed: $desc"; else echo "  refused: $desc"; fi; }
desc="write in the workspace";        try sh -c "echo hi > notes.txt"
desc="write to \$HOME ($HOME)";       try sh -c "echo x > \"$HOME/.ward-demo\""
desc="write to /etc";                  try sh -c "echo x > /etc/ward-demo"
desc="plant a git hook";               try sh -c "echo evil > .git/hooks/pre-commit"
desc="change .git/config";             try git config core.pager evil
desc="git add + commit";               try sh -c "git add notes.txt && git -c user.name=a -c user.email=a@b.invalid commit -qm notes"
desc="TCP to a host port (1.1.1.1:80)"; try python3 -c "import socket; socket.create_connection((\"1.1.1.1\", 80), timeout=1)"
desc="loopback server and client";     try python3 -c "
import socket, threading
s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen()
threading.Thread(target=lambda: s.accept()[0].sendall(b\"ok\")).start()
c = socket.create_connection(s.getsockname()); assert c.recv(2) == b\"ok\""
echo "  inside: pid $$, uid $(id -u), caps $(grep CapEff /proc/self/status | cut -f2), $(grep Seccomp: /proc/self/status | tr -d "\t")"
' || rc=$?
status "$rc"
echo "on the host afterwards: $(git -C "$work" log --oneline | wc -l) commits, hooks: $(ls "$work/.git/hooks" | grep -c -v sample || true) non-sample"
echo
echo "\$ ward run --json -C $work -- sh -c 'echo x > /etc/passwd; echo y > .git/hooks/pre-push; false'"
# The captured run's status is the command's (false: 1); the JSON says so too.
rc=0
json=$("$ward" run --json -C "$work" -- sh -c 'echo x > /etc/passwd; echo y > .git/hooks/pre-push; false') || rc=$?
status "$rc"
python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print("  exit_code:", d["exit_code"], " sandbox_denied:", d["sandbox_denied"]); [print("  denied:", x["access"], x["target"], x["error"]) for x in d["denials"]]' "$json"
echo
# doctor exits 1 on a host that gives only the fallback: that is its report, not a failure here.
rc=0
"$ward" doctor >"$work/doctor.txt" || rc=$?
[ "$rc" -le 1 ] || { echo "demo: ward doctor failed (exit $rc)" >&2; exit 1; }
head -n 14 "$work/doctor.txt"
