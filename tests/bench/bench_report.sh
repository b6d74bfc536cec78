#!/usr/bin/env bash
# Report and archive benchmarks (issue 6), each against a reference run in
# the same invocation:
#  1. report generation (load + score + results.json + report.html) for a
#     synthetic experiment of 10,000 trials x 10 epochs; target < 1 s; the
#     reference is the time to merely read every file once (cat).
#  2. collect throughput (tar.zst with SHA-256 manifest) against GNU tar
#     piped into zstd -3 on the same directory; target >= 1x. Two data sets:
#     the 10,000-trial experiment (many small files) and big checkpoints.
# Never fails on a number. BENCH_TRIALS overrides 10000.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${AAH_BUILD:-build}
bin=$B/bench/bench_report
[ -x "$bin" ] || { echo "build $bin first (make bench-bins)"; exit 1; }
trials=${BENCH_TRIALS:-10000}
reps=3
W=$(mktemp -d "${TMPDIR:-/tmp}/aah-bench-report.XXXXXX")
trap 'rm -rf "$W"' EXIT

now() { date +%s.%N; }
best_of() {   # best wall time of "$@" over $reps runs
	local best=999999 t0 t
	for _ in $(seq $reps); do
		t0=$(now); "$@" >/dev/null 2>&1; t=$(echo "$(now) - $t0" | bc -l)
		best=$(echo "if ($t < $best) $t else $best" | bc -l)
	done
	printf '%.4f' "$best"
}

tests/fixtures/report/make-experiment.sh "$W" bench "$trials" 10 16
E=$W/bench
read -r t_report html_bytes < <("$bin" report "$E" $reps)
t_cat=$(best_of sh -c "find '$E' -type f -print0 | xargs -0 cat > /dev/null")
echo "report generation, $trials trials x 10 epochs (best of $reps):"
printf '  %-34s %8.3f s   (target < 1 s: %s)\n' "aah report (load+score+json+html)" "$t_report" \
	"$(echo "$t_report < 1" | bc -l | sed 's/1/met/;s/0/NOT met/')"
printf '  %-34s %8.3f s   report / read = %.2fx\n' "reference: read every file (cat)" "$t_cat" \
	"$(echo "$t_report / $t_cat" | bc -l)"
printf '  %-34s %8d bytes\n' "report.html size" "$html_bytes"

collect_vs_tar() {   # name, directory; the two runs alternate so both see the same load
	local name=$1 dir=$2 parent base t_aah=999999 t_tar=999999 t bytes t0 mb
	parent=$(dirname "$dir") base=$(basename "$dir")
	for _ in $(seq $creps); do
		read -r t bytes < <("$bin" collect "$dir" "$W/aah.tar.zst" 1)
		t_aah=$(echo "if ($t < $t_aah) $t else $t_aah" | bc -l)
		t0=$(now)
		tar -cf - -C "$parent" "$base" | zstd -3 -q -o "$W/gnu.tar.zst" -f
		t=$(echo "$(now) - $t0" | bc -l)
		t_tar=$(echo "if ($t < $t_tar) $t else $t_tar" | bc -l)
	done
	mb=$(echo "$bytes / 1048576" | bc -l)
	echo "collect throughput, $name ($(printf '%.1f' "$mb") MiB of file data, best of $creps, alternating):"
	printf '  %-34s %8.3f s  %8.1f MiB/s  %s\n' "aah collect (tar.zst + SHA-256)" "$t_aah" \
		"$(echo "$mb / $t_aah" | bc -l)" "$(stat -c %s "$W/aah.tar.zst") bytes"
	printf '  %-34s %8.3f s  %8.1f MiB/s  %s\n' "reference: tar | zstd -3" "$t_tar" \
		"$(echo "$mb / $t_tar" | bc -l)" "$(stat -c %s "$W/gnu.tar.zst") bytes"
	printf '  %-34s %8.2fx  (target >= 1x)\n' "aah / reference throughput" "$(echo "$t_tar / $t_aah" | bc -l)"
}
creps=${BENCH_REPS:-5}
collect_vs_tar "the $trials-trial experiment" "$E"
rm -f "$W/aah.tar.zst" "$W/gnu.tar.zst" "$E/report.html"
mkdir -p "$W/ckpt/trials/000001/checkpoint"
head -c $((96 << 20)) /dev/urandom >"$W/ckpt/trials/000001/checkpoint/weights.bin"
awk 'BEGIN { for (i = 0; i < 1600000; i++) printf "epoch %d loss 0.%06d acc 0.9876 lr 0.1 images/s 12345.6\n", i % 60, i }' \
	>"$W/ckpt/trials/000001/trial.log"
collect_vs_tar "a 96 MiB random file and an 88 MiB log" "$W/ckpt"

# 3. the resource monitor's own cost, sampling fast to measure it
read -r n cpu < <("$bin" monitor 3 0.01)
per=$(echo "$cpu / $n" | bc -l)
echo "resource monitor cost ($n samples at 0.01 s):"
printf '  %-34s %8.1f us CPU per sample\n' "monitor thread" "$(echo "$per * 1000000" | bc -l)"
printf '  %-34s %8.5f%% of one core (reference: the core)\n' "at the default 30 s interval" \
	"$(echo "$per / 30 * 100" | bc -l)"
