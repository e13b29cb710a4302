#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The container image (deploy/Containerfile) built and run with podman:
#
#   - ward serve in a container with the settings README.md documents (the
#     runtime's seccomp profile, /proc unmasked, every capability dropped,
#     no_new_privs, a user of its own): full isolation, a client served
#     through the published port with the token from a read-only mounted
#     secret, no token no service, the token hidden from every sandbox;
#   - the same in a default container (masked /proc): ward keeps the
#     container's /proc and says so, still serves;
#   - Kubernetes' smallest securityContext as podman has it (seccomp
#     unconfined, /proc unmasked, no capability): full isolation;
#   - ward's isolation suites (fs git net escape process capture) inside the
#     image, in both containers, as root and as the image's user (10001); root
#     with the documented settings gets CAP_SETFCAP back, as documented (the
#     kernel lets root map uid 0 into a user namespace only with it).
#
#   scripts/test-container.sh
#
# Takes minutes (the image builds the Debian packages; scripts/test.sh runs it
# with WARD_TEST_RELEASE=1). Needs root and podman (Debian: apt-get install
# podman netavark runc; scripts/setup-deps.sh installs them when run as root
# here); without them it skips, and fails under WARD_MUST_WORK=1. TAP, then
# "N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
CLIENT=$top/tests/helpers/serve-client.py
n=0 passed=0 failed=0 skipped=0
ok() {
	n=$((n + 1)) passed=$((passed + 1))
	echo "ok $n - $1"
}
not_ok() {
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - $1"
	[ $# -gt 1 ] && printf '%s\n' "$2" | head -n 40 | sed 's/^/# /'
	return 0
}
finish() {
	echo "1..$n"
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" = 0 ]
	exit $?
}
skip_all() {
	if [ "${WARD_MUST_WORK:-0}" = 1 ]; then
		not_ok "the container image" "skipped, but WARD_MUST_WORK=1: $1"
	else
		n=$((n + 1)) skipped=$((skipped + 1))
		echo "ok $n # SKIP $1"
	fi
	finish
}

[ "$(id -u)" = 0 ] || skip_all "needs root (rootful podman, a debootstrap'ed base image)"
command -v podman >/dev/null 2>&1 || bash "$top/scripts/setup-deps.sh" podman netavark aardvark-dns runc \
	>/dev/null 2>&1
command -v podman >/dev/null 2>&1 || skip_all "podman is not installed (Debian: apt-get install podman netavark runc)"

work=$(mktemp -d /var/tmp/ward-ctest.XXXXXX)
cids=()
cleanup() {
	for c in "${cids[@]}"; do
		podman rm -f "$c" >/dev/null 2>&1
	done
	rm -rf "$work"
}
trap cleanup EXIT

# ------------------------------------------------------------------ images

image=localhost/ward:test-$$
if out=$(bash "$top/scripts/build-image.sh" "$image" runtime 2>&1) &&
	out=$(bash "$top/scripts/build-image.sh" "$image-suite" test 2>&1); then
	ok "podman builds deploy/Containerfile (from a debootstrap'ed Debian 12, no registry)"
else
	not_ok "podman builds deploy/Containerfile" "$(tail -n 30 <<<"$out")"
	finish
fi
trap 'cleanup; podman rmi -f "$image" "$image-suite" >/dev/null 2>&1' EXIT

# This machine class: crun refuses hybrid cgroup hosts, and the container's
# limits must stay below the host's (no CAP_SYS_RESOURCE to raise them).
run=(podman run --runtime runc --ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
[ -f /sys/fs/cgroup/cgroup.controllers ] && run=(podman run)
# The settings README.md documents, and Kubernetes' smallest securityContext as podman has it.
documented=(--cap-drop=ALL --security-opt no-new-privileges --security-opt systempaths=unconfined)
# deploy/kubernetes.yaml's: hostUsers: false (a user namespace of its own: uid 0 is 200000 here),
# procMount: Unmasked, seccomp and AppArmor unconfined, no capability, no_new_privs,
# runAsUser 10001, a read-only root.
kube=(--uidmap 0:200000:65536 --gidmap 0:200000:65536 --user 10001:10001 --cap-drop=ALL
	--security-opt no-new-privileges --security-opt systempaths=unconfined
	--security-opt seccomp=unconfined --security-opt apparmor=unconfined --read-only
	--tmpfs /tmp --tmpfs /home/ward)

v=$("${run[@]}" --rm --entrypoint ward "$image" --version 2>&1)
[[ $v == "ward 0."*"(commit "*")" ]] && ok "the image's ward names its version and commit ($v)" ||
	not_ok "ward --version in the image" "$v"

# The token: a mounted secret, root's, read-only, readable by the image's group.
mkdir -p "$work/secret"
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$work/secret/token"
echo >>"$work/secret/token"
chown 0:10001 "$work/secret/token"
chmod 0440 "$work/secret/token"
chmod 0755 "$work" "$work/secret"
tok=$(cat "$work/secret/token")

# serve NAME SETTINGS...: ward serve in a container with its port published on loopback;
# its URL in URL, its log in $work/NAME.log once it is up.
serve() {
	local name=$1 port c
	shift
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	c=$("${run[@]}" -d -p "127.0.0.1:$port:8765" -v "$work/secret:/run/secrets/ward:ro" "$@" "$image" 2>&1) || {
		not_ok "$name: podman run" "$c"
		return 1
	}
	cids+=("$c")
	URL=ws://127.0.0.1:$port
	for _ in $(seq 100); do
		podman logs "$c" 2>&1 | grep -q "sandboxes here" && break
		sleep 0.2
	done
	podman logs "$c" >"$work/$name.log" 2>&1
	CID=$c
}

for cfg in documented default; do
	if [ $cfg = documented ]; then
		serve documented "${documented[@]}" || continue
		want="sandboxes here: full isolation"
	else
		serve default || continue
		want="sandboxes here: namespaces, Landlock ABI [0-9]* and seccomp, without a private /proc"
	fi
	grep -q "$want" "$work/$cfg.log" && ok "$cfg container: ward serve says '$want'" ||
		not_ok "$cfg container: the isolation ward serve reports" "$(cat "$work/$cfg.log")"
	out=$(cd /tmp && timeout 60 python3 "$CLIENT" http "$URL" /readyz 2>&1)
	[ "$out" = "status 200" ] && ok "$cfg container: GET /readyz through the published port" || not_ok "$cfg: readyz: $out"
	out=$(cd /tmp && timeout 60 python3 "$CLIENT" run "$URL" "$tok" 2>&1)
	[ "$out" = ok ] && ok "$cfg container: a client with the mounted secret's token runs a sandboxed process" ||
		not_ok "$cfg container: a client through the published port" "$out$(podman logs "$CID" 2>&1 | tail)"
	out=$(cd /tmp && timeout 60 python3 "$CLIENT" http "$URL" / "Upgrade: websocket" "Connection: Upgrade" \
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" "Sec-WebSocket-Version: 13" 2>&1)
	[ "$out" = "status 401" ] && ok "$cfg container: no token, no service (401)" || not_ok "$cfg: no token: $out"
	out=$(cd /tmp && timeout 60 python3 "$CLIENT" exec "$URL" "$tok" cat /run/secrets/ward/token 2>&1)
	[[ $out != *"$tok"* && $out == *"exit 1" ]] && ok "$cfg container: a sandboxed command cannot read the token" ||
		not_ok "$cfg container: the token from inside a sandbox" "$out"
	podman rm -f "$CID" >/dev/null 2>&1
done

out=$("${run[@]}" --rm "${kube[@]}" --entrypoint ward "$image" doctor 2>&1)
grep -q "^  full isolation" <<<"$out" &&
	ok "deploy/kubernetes.yaml's securityContext as podman has it (own user namespace, /proc unmasked, no capability, read-only root): full isolation" ||
	not_ok "the Kubernetes settings under podman" "$out"

# ------------------------------------------------------------------ the isolation suites inside

for cfg in documented default; do
	for u in 0 10001; do
		if [ $cfg = documented ]; then
			settings=("${documented[@]}")
			# Root maps uid 0 into a user namespace only with CAP_SETFCAP (Linux 5.12).
			[ "$u" = 0 ] && settings+=(--cap-add=SETFCAP)
		else
			settings=()
		fi
		out=$(timeout 1500 "${run[@]}" --rm --user "$u" "${settings[@]}" "$image-suite" 2>&1)
		sum=$(tail -n 1 <<<"$out")
		if [[ $sum =~ ^([0-9]+)\ passed,\ 0\ failed ]] && [ "${BASH_REMATCH[1]}" -gt 50 ]; then
			ok "$cfg container, uid $u: the isolation suites ($sum)"
		else
			not_ok "$cfg container, uid $u: the isolation suites ($sum)" "$out"
		fi
	done
done
finish
