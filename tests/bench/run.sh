#!/usr/bin/env bash
# Run every benchmark: tests/bench/bench_*.sh, each printing its own table.
# Benchmarks report ratios against a reference run in the same invocation;
# they never fail on a number. AAH_BENCH_FILTER picks a subset.
set -uo pipefail
cd "$(dirname "$0")/../.."
export AAH_BUILD=${AAH_BUILD:-build} AAH_ROOT=$PWD
export PATH="$AAH_ROOT/$AAH_BUILD:$PATH"
rc=0
for b in tests/bench/bench_*.sh; do
	[ -x "$b" ] || continue
	if [ -n "${AAH_BENCH_FILTER:-}" ] && [[ $b != *"$AAH_BENCH_FILTER"* ]]; then continue; fi
	echo "=== $b"
	"$b" || { echo "benchmark $b failed"; rc=1; }
done
exit $rc
