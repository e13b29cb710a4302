#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The README's test command. Builds ward with gcc and -Werror into build/, runs
# the unit tests and fuzz corpus replays, the integration tests as root and as
# an unprivileged user (uid 65534, on a copy of the build readable by it; when
# not root, once as the current user), then builds an ASan+UBSan variant with
# clang into build-asan/ and runs the unit tests, the fuzz replays and a subset
# of the integration tests with it. Every TAP line of every test counts; the
# last line is "N passed, N failed, N skipped" and the exit status is non-zero
# on any failure.
#
# Environment: WARD_MUST_WORK=1 (skips for missing kernel features fail; CI),
# WARD_TEST_NO_ASAN=1 (skip the sanitizer build, for quick local runs),
# WARD_TEST_RELEASE=1 (also the release checks of scripts/test-release.sh: the Debian
# packages on a fresh Debian 12, meson dist built offline, the container image with
# podman; minutes, root, Debian's mirror),
# WARD_CODEX (Codex, for the comparison of `policy check` with `codex execpolicy
# check`; also found in PATH), WARD_TEST_ASAN_INTEGRATION (the integration tests
# run under ASan; default "cli process fs escape fallback mcp"), WARD_TEST_UNPRIV_UID
# (default 65534).
#
# As root, the isolation suites also run on three simulated hardened hosts
# (WARD_TEST_HOST, see tests/integration/lib.sh): user namespaces refused,
# user namespaces and Landlock refused, and a container's masked /proc.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
export WARD_MUST_WORK=${WARD_MUST_WORK:-0}
asan_integration=${WARD_TEST_ASAN_INTEGRATION:-cli process fs escape fallback mcp mcp-approval}
isolation_suites="fs git net escape process capture autorun"
unpriv_uid=${WARD_TEST_UNPRIV_UID:-65534}
logs=$top/build/test-logs
start=$(date +%s)

die() {
	echo "test.sh: $*" >&2
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
}

bash "$top/scripts/setup-deps.sh" || die "cannot install the build dependencies"
bash "$top/scripts/setup-node.sh" || die "cannot install the test clients (Node, npm)"

# ------------------------------------------------------------------ builds

echo "== build (gcc, -Werror) into build/"
if [ ! -f build/build.ninja ]; then
	CC=gcc meson setup build -Dwerror=true >/dev/null || die "meson setup build failed"
else
	meson configure build -Dwerror=true >/dev/null || die "meson configure build failed"
fi
ninja -C build >build/ninja.log 2>&1 || {
	tail -n 40 build/ninja.log
	die "the gcc build failed"
}
mkdir -p "$logs"
rm -f "$logs"/*

# ------------------------------------------------------------------ the runner

runner=$(mktemp /tmp/ward-test-runner.XXXXXX.py)
scratch=""
cleanup() {
	rm -f "$runner"
	[ -n "$scratch" ] && rm -rf "$scratch"
}
trap cleanup EXIT

# Runs the tests meson knows (meson introspect), parses their TAP and appends
# "passed failed skipped" to the counts file. Exit-code tests count as one.
cat >"$runner" <<'EOF'
import argparse, json, os, re, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("builddir")
ap.add_argument("--label", required=True)
ap.add_argument("--suite", action="append", default=[])
ap.add_argument("--only", default="")
ap.add_argument("--skip", default="")
ap.add_argument("--as-uid", type=int)
ap.add_argument("--map-from")
ap.add_argument("--map-to")
ap.add_argument("--env", action="append", default=[])
ap.add_argument("--counts", required=True)
ap.add_argument("--logdir", required=True)
a = ap.parse_args()

tests = json.loads(subprocess.run(["meson", "introspect", a.builddir, "--tests"],
                                  check=True, capture_output=True, text=True).stdout)
only = a.only.split()
skipped_tests = a.skip.split()

def mapped(s):
    if a.map_from and isinstance(s, str):
        return s.replace(a.map_from, a.map_to)
    return s

def parse_tap(text, rc, timed_out):
    p = f = s = 0
    plan = None
    results = 0
    bad = []
    for line in text.splitlines():
        m = re.match(r"^(not ok|ok)\b", line)
        if m:
            results += 1
            directive = re.search(r"#\s*(SKIP|TODO)\b", line, re.I)
            if m.group(1) == "ok":
                if directive and directive.group(1).upper() == "SKIP":
                    s += 1
                else:
                    p += 1
            elif directive and directive.group(1).upper() == "TODO":
                p += 1
            else:
                f += 1
                bad.append(line)
            continue
        m = re.match(r"^1\.\.(\d+)", line)
        if m:
            plan = int(m.group(1))
            if plan == 0 and re.search(r"#\s*SKIP", line, re.I):
                s += 1
            continue
        if line.startswith("Bail out!"):
            f += 1
            bad.append(line)
    if timed_out:
        f += 1
        bad.append("timed out")
    elif plan is None:
        f += 1
        bad.append("no TAP plan (crashed?), exit status %d" % rc)
    elif plan != results and plan != 0:
        f += 1
        bad.append("planned %d tests, saw %d" % (plan, results))
    elif rc != 0 and f == 0:
        f += 1
        bad.append("exit status %d with no failed test" % rc)
    return p, f, s, bad

tp = tf = ts = 0
for t in tests:
    suites = [x.split(":")[-1] for x in t["suite"]]
    if a.suite and not any(x in a.suite for x in suites):
        continue
    if only and t["name"] not in only:
        continue
    if t["name"] in skipped_tests:
        continue
    env = dict(os.environ)
    for k, v in t["env"].items():
        env[k] = mapped(v)
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    cmd = [mapped(c) for c in t["cmd"]]
    cwd = mapped(t.get("workdir") or a.map_to or os.getcwd())
    if a.as_uid is not None:
        cmd = ["setpriv", "--reuid", str(a.as_uid), "--regid", str(a.as_uid),
               "--clear-groups", "--"] + cmd
        env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        env.pop("HOME", None)
    t0 = time.monotonic()
    timed_out = False
    try:
        r = subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=t["timeout"] if t["timeout"] > 0 else None)
        out, rc = r.stdout.decode(errors="replace"), r.returncode
    except subprocess.TimeoutExpired as e:
        out, rc, timed_out = (e.stdout or b"").decode(errors="replace"), -1, True
    dt = time.monotonic() - t0
    name = "%s/%s" % (suites[0] if suites else "?", t["name"])
    log = os.path.join(a.logdir, "%s-%s.log" % (a.label, name.replace("/", "-")))
    with open(log, "w") as fh:
        fh.write(out)
    if t["protocol"] == "tap":
        p, f, s, bad = parse_tap(out, rc, timed_out)
    else:
        ok = rc == 0 and not timed_out
        p, f, s = (1, 0, 0) if ok else (0, 1, 0)
        bad = [] if ok else ["exit status %d%s" % (rc, " (timed out)" if timed_out else "")]
    tp, tf, ts = tp + p, tf + f, ts + s
    status = "FAIL" if f else "ok  "
    print("  %s %-28s %-10s %3d passed, %d failed, %d skipped  %5.1fs" %
          (status, name, a.label, p, f, s, dt), flush=True)
    if f:
        lines = out.splitlines()
        for b in bad:
            print("       " + b)
            # The diagnostics that follow a failed TAP line.
            if b in lines:
                i = lines.index(b) + 1
                while i < len(lines) and lines[i].startswith("#") and i < lines.index(b) + 25:
                    print("         " + lines[i])
                    i += 1
        print("       log: " + log, flush=True)
with open(a.counts, "a") as fh:
    fh.write("%d %d %d\n" % (tp, tf, ts))
EOF

counts=$logs/counts
: >"$counts"
run() { python3 "$runner" --counts "$counts" --logdir "$logs" "$@"; }

# ------------------------------------------------------------------ gcc build: tests

echo "== unit tests and fuzz corpus replays"
run build --label gcc --suite unit --suite fuzz

# The Codex comparison (scripts/compare-execpolicy.sh) needs Codex itself: the copy
# pinned in tests/mcp/package.json that scripts/setup-node.sh installed, unless
# WARD_CODEX names another.
if [ -z "${WARD_CODEX:-}" ]; then
	. "$top/tests/integration/node-prefix.sh"
	[ -x "$NODE_PREFIX/node_modules/.bin/codex" ] && export WARD_CODEX=$NODE_PREFIX/node_modules/.bin/codex
fi
if [ -n "${WARD_CODEX:-}" ] || command -v codex >/dev/null 2>&1; then
	echo "== ward policy check against codex execpolicy check"
	run build --label gcc --suite compat
fi

if [ "$(id -u)" = 0 ]; then
	echo "== integration tests as root"
	run build --label root --suite integration

	# Root where user namespaces are refused builds the same sandbox from the
	# other namespaces; hardened-wrapper simulates such hosts (ward's isolation
	# suites run through it), with and without Landlock, and a container that
	# masks parts of its /proc (the sandbox keeps the container's).
	for host in userns-refused userns-landlock-refused proc-masked; do
		echo "== isolation tests as root, $host"
		run build --label "root-$host" --suite integration --only "$isolation_suites" \
			--env "WARD_TEST_HOST=$host"
	done

	echo "== integration tests as uid $unpriv_uid"
	# A copy of the tree (sources, scripts and the built binaries) the
	# unprivileged user can read, outside /root and other private homes.
	scratch=$(mktemp -d /tmp/ward-unpriv.XXXXXX)
	chmod 755 "$scratch"
	tar -C "$top" --exclude=./.git --exclude='./build-*' --exclude='*.p' --exclude=./build/test-logs \
		-cf - . | tar -C "$scratch" -xf - || die "cannot copy the tree to $scratch"
	chmod -R a+rX "$scratch"
	# The network by domain needs network namespaces only root can make: its
	# unprivileged pass is the root harness running every ward as the user.
	run build --label "uid$unpriv_uid" --suite integration --as-uid "$unpriv_uid" \
		--map-from "$top" --map-to "$scratch" --skip netproxy
	run build --label "uid$unpriv_uid" --suite integration --only netproxy \
		--env "WARD_NETPROXY_AS_UID=$unpriv_uid"
else
	echo "== integration tests as $(id -un)"
	run build --label user --suite integration
fi

# ------------------------------------------------------------------ sanitizers

if [ "${WARD_TEST_NO_ASAN:-0}" != 1 ]; then
	echo "== build (clang, ASan+UBSan) into build-asan/"
	if [ ! -f build-asan/build.ninja ]; then
		CC=clang meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
			>/dev/null || die "meson setup build-asan failed"
	fi
	if ninja -C build-asan >build/test-logs/ninja-asan.log 2>&1; then
		# Leak checking stays on for the unit tests and replays (their test
		# processes install no seccomp filter; forked test children _exit). It is
		# off for the integration tests: the sandboxed command runs under a filter
		# that denies ptrace, which LeakSanitizer needs.
		san="UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
		echo "== unit tests and fuzz corpus replays (ASan+UBSan)"
		run build-asan --label asan --suite unit --suite fuzz --env "$san" \
			--env "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1"
		echo "== integration tests (ASan+UBSan): $asan_integration"
		run build-asan --label asan --suite integration --only "$asan_integration" --env "$san" \
			--env "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1"
	else
		tail -n 40 build/test-logs/ninja-asan.log
		echo "0 0 0" >>"$counts"
		echo "1 build" >"$logs/asan-build-failed"
		echo "  FAIL the ASan+UBSan build failed (build/test-logs/ninja-asan.log)"
	fi
fi

# ------------------------------------------------------------------ release (minutes)

# WARD_TEST_RELEASE=1: the Debian packages on a fresh Debian 12, meson dist built
# offline, the container image with podman (scripts/test-release.sh).
if [ "${WARD_TEST_RELEASE:-0}" = 1 ]; then
	echo "== release: packages, dist tarball, container image (scripts/test-release.sh)"
	rel=$(bash "$top/scripts/test-release.sh" 2>&1)
	printf '%s\n' "$rel" >"$logs/release.log"
	grep -E '^(not ok|ok .*# SKIP)' <<<"$rel" | sed 's/^/  /'
	sum=$(tail -n 1 <<<"$rel")
	echo "  release: $sum (log: build/test-logs/release.log)"
	if [[ $sum =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
		echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}" >>"$counts"
	else
		echo "0 1 0" >>"$counts"
	fi
fi

# ------------------------------------------------------------------ summary

read -r passed failed skipped < <(awk '{ p += $1; f += $2; s += $3 } END { print p + 0, f + 0, s + 0 }' "$counts")
[ -e "$logs/asan-build-failed" ] && failed=$((failed + 1))
echo "== done in $(($(date +%s) - start)) s; logs in build/test-logs/"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
