#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Runs the same rules files and commands through `ward policy check` and
# `codex execpolicy check` and reports every difference, as TAP:
#   1. the cases of tests/data/rules/check.table: both must print exactly the
#      JSON the table holds;
#   2. every file in tests/data/rules/bad/: both must refuse it;
#      every file in tests/data/rules/refused/: ward refuses it on purpose (a
#      Starlark construct outside the subset ward reads, docs/rules.md), and
#      the script says what Codex does with it (never a failure);
#   3. randomly generated rules files and commands (seeded, reproducible):
#      both accept the file and print the same JSON, or both refuse it.
#
# Codex: $WARD_CODEX, else `codex` in PATH (npm i @openai/codex). Without it
# the script prints "1..0 # SKIP" and exits 0; it is not a kernel feature, so
# scripts/test.sh runs it (meson suite "compat") only when Codex is installed.
#
# Environment: WARD (default build/ward), WARD_CODEX, WARD_COMPARE_RANDOM
# (generated cases, default 300), WARD_COMPARE_SEED (default 1).
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
WARD=${WARD:-$top/build/ward}
CODEX=${WARD_CODEX:-$(command -v codex || true)}
if [ -z "$CODEX" ] || [ ! -x "$CODEX" ]; then
	echo "1..0 # SKIP codex is not installed (npm i @openai/codex, or set WARD_CODEX)"
	exit 0
fi
if [ ! -x "$WARD" ]; then
	echo "Bail out! $WARD is missing (build first)"
	exit 1
fi

# Codex reads and writes its home: give it a scratch one, outside /tmp so it does not warn.
scratch=$(mktemp -d "${WARD_TEST_TMPDIR:-/var/tmp}/ward-compare.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/home/.codex"
export HOME=$scratch/home CODEX_HOME=$scratch/home/.codex

exec python3 - "$WARD" "$CODEX" "$top/tests/data/rules" "$scratch" \
	"${WARD_COMPARE_RANDOM:-300}" "${WARD_COMPARE_SEED:-1}" <<'EOF'
import json, os, random, subprocess, sys

ward, codex, data, scratch, n_random, seed = sys.argv[1:7]
n_random, seed = int(n_random), int(seed)
results = []

def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout

def check(rules, flags, argv, cwd):
    extra = ["--resolve-host-executables"] if flags == "resolve" else []
    rfl = []
    for r in rules:
        rfl += ["--rules", r]
    w = run([ward, "policy", "check"] + rfl + extra + ["--"] + argv, cwd)
    c = run([codex, "execpolicy", "check"] + rfl + extra + ["--"] + argv, cwd)
    return w, c

def report(ok, name, diag=()):
    results.append((ok, name, list(diag)))

# 1. the table
for line in open(os.path.join(data, "check.table"), encoding="utf-8"):
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    f, flags, argv, expected = line.split("\t")
    argv = json.loads(argv)
    (wr, wo), (cr, co) = check([f], flags, argv, data)
    name = "table: %s %s %s" % (f, flags, json.dumps(argv, ensure_ascii=False))
    ok = wr == 0 and cr == 0 and wo.strip() == expected and co.strip() == expected
    report(ok, name, [] if ok else ["ward  (%d): %s" % (wr, wo.strip()),
                                    "codex (%d): %s" % (cr, co.strip()),
                                    "table:     %s" % expected])

# 2. files both refuse, and files only ward refuses
for sub in ("bad", "refused"):
    d = os.path.join(data, sub)
    for f in sorted(os.listdir(d)):
        (wr, wo), (cr, co) = check([os.path.join(sub, f)], "-", ["ls"], data)
        if sub == "bad":
            ok = wr != 0 and cr != 0
            report(ok, "bad file refused by both: " + f,
                   [] if ok else ["ward exit %d, codex exit %d" % (wr, cr)])
        else:
            report(wr != 0, "refused by ward on purpose: %s (codex: %s)" %
                   (f, "refuses it too" if cr != 0 else "accepts it"),
                   [] if wr != 0 else ["ward accepted it"])

# 3. generated cases
rng = random.Random(seed)
words = ["git", "ls", "rm", "cat", "-f", "-rf", "--force", "status", "push", "x", "a b",
         "", "é", "日本", "-", "--", "tab\there", "new\nline", 'q"uote', "back\\slash"]
programs = ["git", "ls", "rm", "cat", "/usr/bin/git", "/bin/rm", "./git", "../rm",
            "/opt/../usr/bin/git", "//bin//ls", "git/", "~/bin/rm", ".", "/"]

def lit(s):
    # A Starlark string literal in one of several spellings.
    k = rng.randrange(4)
    if k == 0 or any(ord(ch) < 0x20 or ch in "\\'\"" for ch in s):
        return json.dumps(s, ensure_ascii=rng.random() < 0.5)
    if k == 1:
        return "'" + s + "'"
    if k == 2 and "\\" not in s and '"' not in s:
        return 'r"' + s + '"'
    return '"""' + s + '"""' if '"' not in s else json.dumps(s)

def token():
    # A pattern element: a string, or (sometimes) alternatives; rarely an empty list.
    if rng.random() < 0.25:
        n = 0 if rng.random() < 0.01 else rng.randrange(1, 4)
        alts = [rng.choice(words) for _ in range(n)]
        return "[" + ", ".join(lit(a) for a in alts) + "]", alts
    w = rng.choice(words)
    return lit(w), [w]

def example(parts, positive):
    # A command built from the pattern: matching (positive), or with one word changed.
    toks = [rng.choice(p) if p else "x" for p in parts] + [rng.choice(words) for _ in range(rng.randrange(0, 3))]
    if rng.random() < 0.1:
        toks[0] = rng.choice(programs)
    if not positive or rng.random() < 0.03:
        i = rng.randrange(len(parts))
        toks[i] = rng.choice(words + programs)
    if rng.random() < 0.5 or any(not t or "\n" in t or "\t" in t or '"' in t or "\\" in t or "'" in t for t in toks):
        return "[" + ", ".join(lit(t) for t in toks) + "]"
    return lit(" ".join(toks))

def rule():
    k = rng.random()
    if k < 0.1:
        name = rng.choice(["git", "rm", "ls"] * 8 + ["bin/git", ""])
        good = {"git": ["/usr/bin/git", "/usr/bin/../bin/git", "/opt/git", "//usr//bin/git/"],
                "rm": ["/bin/rm", "/usr/bin/rm", "/tmp/./rm"], "ls": ["/bin/ls", "//bin//ls"]}
        paths = [rng.choice(good.get(name, ["/x/y"]) if rng.random() < 0.95 else ["usr/bin/git", "/bin/cat"])
                 for _ in range(rng.randrange(0, 3))]
        return "host_executable(name=%s, paths=[%s])" % (lit(name), ", ".join(lit(p) for p in paths))
    if k < 0.15:
        return "network_rule(host=%s, protocol=%s, decision=%s)" % (
            lit(rng.choice(["example.com", "Example.COM:443", "[::1]:80", " a. ", "10.0.0.1:8080"] * 4 + ["*.x", "http://x", "[::1"])),
            lit(rng.choice(["http", "https", "socks5_tcp", "socks5_udp", "https_connect"] * 4 + ["ftp"])),
            lit(rng.choice(["allow", "deny", "prompt", "forbidden"] * 4 + ["block"])))
    if rng.random() < 0.85:
        w = rng.choice(programs[:4])
        first = (lit(w), [w])
    else:
        first = token()
    pat = [first] + [token() for _ in range(rng.randrange(0, 3))]
    parts = [alts for _, alts in pat]
    patterns.append(parts)
    args = ["pattern=[" + ", ".join(t for t, _ in pat) + "]"]
    if rng.random() < 0.6:
        args.append("decision=" + lit(rng.choice(["allow", "prompt", "forbidden", "allow", "deny"][: 5 if rng.random() < 0.1 else 4])))
    if rng.random() < 0.3:
        args.append("justification=" + lit(rng.choice(["because", "why\tnot", "ü", " " if rng.random() < 0.1 else "ok"])))
    if rng.random() < 0.4:
        args.append("match=[" + ", ".join(example(parts, True) for _ in range(rng.randrange(1, 3))) + "]")
    if rng.random() < 0.4:
        args.append("not_match=[" + ", ".join(example(parts, False) for _ in range(rng.randrange(1, 3))) + "]")
    if rng.random() < 0.2:
        rng.shuffle(args)
    sep = rng.choice([", ", ",\n    ", " , "])
    return "prefix_rule(" + sep.join(args) + (rng.choice(["", ","])) + ")"

def command():
    # Mostly an instance of one of the file's patterns, so that rules match.
    if patterns and rng.random() < 0.7:
        parts = rng.choice(patterns)
        argv = [rng.choice(p) if p else "x" for p in parts]
        argv += [rng.choice(words) for _ in range(rng.randrange(0, 2))]
        if rng.random() < 0.3:
            argv[0] = rng.choice(programs)
        return argv
    return [rng.choice(programs)] + [rng.choice(words) for _ in range(rng.randrange(0, 4))]

stats = {}
for i in range(n_random):
    patterns = []
    body = "\n".join(rule() for _ in range(rng.randrange(1, 6))) + "\n"
    path = os.path.join(scratch, "gen-%d.rules" % i)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(body)
    argv = command()
    flags = rng.choice(["-", "resolve"])
    (wr, wo), (cr, co) = check([path], flags, argv, scratch)
    ok = (wr != 0 and cr != 0) or (wr == 0 and cr == 0 and wo == co)
    if os.environ.get("WARD_COMPARE_DEBUG") and wr != 0: print(subprocess.run([ward, "policy", "check", "--rules", path, "--", "x"], capture_output=True, text=True).stderr.strip(), file=sys.stderr)
    stats[(wr == 0, cr == 0, wo.strip() not in ("", "{\"matchedRules\":[]}"))] = stats.get((wr == 0, cr == 0, wo.strip() not in ("", "{\"matchedRules\":[]}")), 0) + 1
    report(ok, "generated %d (%s %s)" % (i, flags, json.dumps(argv, ensure_ascii=False)),
           [] if ok else ["rules file:"] + body.splitlines() +
           ["ward  (%d): %s" % (wr, wo.strip()), "codex (%d): %s" % (cr, co.strip())])

print("1..%d" % len(results))
print("# generated: %s" % ", ".join("%s: %d" % ({(True, True, True): "both matched", (True, True, False): "both loaded, no match", (False, False, False): "both refused"}.get(k, str(k)), v) for k, v in sorted(stats.items())))
failed = 0
for n, (ok, name, diag) in enumerate(results, 1):
    print("%s %d - %s" % ("ok" if ok else "not ok", n, name.replace("\n", "\\n")))
    for d in diag:
        print("# " + d.replace("\n", "\\n"))
    failed += not ok
sys.exit(1 if failed else 0)
EOF
