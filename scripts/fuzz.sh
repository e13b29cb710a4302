#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Real fuzzing of every fuzz target (the test suite only replays their corpora):
# builds the targets with clang, libFuzzer, ASan and UBSan into build-fuzz/, and
# runs each for SECONDS (default 180) on a scratch copy of its corpus. A crash,
# a leak, a sanitizer report or a timeout stops that target; its input is kept
# in build-fuzz/findings/TARGET/ and the script exits 1 after the others ran.
# New inputs that widen coverage are merged back into fuzz/corpus/TARGET only
# with --merge (review them before committing: they are test data).
#
#   bash scripts/fuzz.sh [--seconds N] [--merge] [TARGET...]
#
# Run it before resolving a change to a parser: a few minutes a target, on a
# quiet machine (it uses one core per target, one target at a time).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
seconds=180
merge=0
targets=()
while [ $# -gt 0 ]; do
	case $1 in
	--seconds)
		seconds=${2:?--seconds needs a number}
		shift 2
		;;
	--merge)
		merge=1
		shift
		;;
	-h | --help)
		sed -n '4,15p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*)
		echo "fuzz.sh: unknown option '$1'" >&2
		exit 2
		;;
	*)
		targets+=("$1")
		shift
		;;
	esac
done
case $seconds in
'' | *[!0-9]*)
	echo "fuzz.sh: --seconds needs a positive number, not '$seconds'" >&2
	exit 2
	;;
esac

bash "$top/scripts/setup-deps.sh" || exit 1
if [ ! -f build-fuzz/build.ninja ]; then
	CC=clang meson setup build-fuzz -Dfuzzing=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link >/dev/null || {
		echo "fuzz.sh: meson setup build-fuzz failed" >&2
		exit 1
	}
fi
if [ ${#targets[@]} -eq 0 ]; then
	for d in fuzz/corpus/*/; do
		targets+=("$(basename "$d")")
	done
fi
for t in "${targets[@]}"; do
	[ -d "fuzz/corpus/$t" ] || {
		echo "fuzz.sh: no target '$t' (targets: $(ls fuzz/corpus | tr '\n' ' '))" >&2
		exit 2
	}
done
ninja -C build-fuzz $(printf 'fuzz/fuzz-%s ' "${targets[@]}") >build-fuzz/ninja.log 2>&1 || {
	tail -n 30 build-fuzz/ninja.log
	echo "fuzz.sh: the fuzz build failed" >&2
	exit 1
}

failed=()
for t in "${targets[@]}"; do
	work=$(mktemp -d /tmp/ward-fuzz.XXXXXX)
	findings=build-fuzz/findings/$t
	mkdir -p "$findings"
	cp -r "fuzz/corpus/$t/." "$work/"
	echo "== fuzz-$t for ${seconds}s ($(ls "$work" | wc -l) corpus inputs)"
	# Every process that loads a seccomp filter cannot be traced by LeakSanitizer.
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		"build-fuzz/fuzz/fuzz-$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
		-artifact_prefix="$findings/" -print_final_stats=1 "$work" \
		>"build-fuzz/fuzz-$t.log" 2>&1
	rc=$?
	grep -E '^(stat::number_of_executed_units|stat::new_units_added|#[0-9]+ +DONE)' \
		"build-fuzz/fuzz-$t.log" | sed 's/^/   /'
	if [ $rc -ne 0 ]; then
		echo "   FAILED (exit $rc): build-fuzz/fuzz-$t.log, input in $findings/"
		grep -E 'ERROR|SUMMARY|runtime error' "build-fuzz/fuzz-$t.log" | head -n 5 | sed 's/^/   /'
		failed+=("$t")
	elif [ $merge = 1 ]; then
		"build-fuzz/fuzz/fuzz-$t" -merge=1 "fuzz/corpus/$t" "$work" >/dev/null 2>&1
		echo "   corpus now $(ls "fuzz/corpus/$t" | wc -l) inputs"
	fi
	rm -rf "$work"
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]}"
	exit 1
fi
echo "fuzz.sh: ${#targets[@]} target(s), ${seconds}s each, no finding"
