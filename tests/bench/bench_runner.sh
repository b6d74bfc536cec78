#!/usr/bin/env bash
# Runner overhead per trial on the local backend: N trials (default 1000)
# of a trial that exits at once, trialConcurrency 2. The reference, in the
# same run, is the bare cost of starting the same processes two at a time
# (xargs -P2), so the ratio shows what the runner adds (journal fsyncs,
# launch.json, rank_table.json, polling).
set -euo pipefail
n=${AAH_BENCH_TRIALS:-1000}
root=${AAH_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
runner=$root/${AAH_BUILD:-build}/aah-runner
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/c.yml" <<YML
experimentName: bench-overhead
trialConcurrency: 2
maxTrialNum: $n
tuner:
  builtinTunerName: None
trial:
  command: /bin/true
YML
t0=$(date +%s.%N)
AAH_WORKDIR=$tmp/w "$runner" create -c "$tmp/c.yml" -q > /dev/null
t1=$(date +%s.%N)
seq "$n" | xargs -P2 -n1 /bin/true
t2=$(date +%s.%N)
id=$(ls "$tmp/w/experiments")
done_n=$(grep -c '"event":"trial_finished"' "$tmp/w/experiments/$id/journal.jsonl")
awk -v n="$n" -v d="$done_n" -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
	runner = b - a; ref = c - b
	printf "runner overhead: %d trials in %.2f s = %.0f trials/s (%.2f ms/trial)\n", d, runner, d / runner, 1000 * runner / d
	printf "reference (xargs -P2 /bin/true): %d processes in %.2f s = %.0f/s\n", n, ref, n / ref
	printf "ratio runner/reference time: %.1fx\n", runner / ref
}'
