#!/usr/bin/env bash
# The TFRecord reader against the JPEG folder of the same images: N RGB
# JPEGs of 375x500 (ImageNet's typical size), written once as a JPEG folder
# and once as AIPerf-style TFRecord shards (tests/fixtures/tfrecord_write.py).
# 1. the data path alone: one training epoch through the loader (decode,
#    random-resized crop to 224x224, flip), images/s of each, and the CPU
#    milliseconds per image (steadier than images/s on a shared machine);
# 2. a trial: aah-trial's training images/s (metrics.jsonl images_per_sec)
#    on each, with the 2-conv CNN at 64x64x3 (small, so that the data path
#    is a large share of the step).
# Rounds alternate the two; each side reports its median; ratio = TFRecord /
# JPEG folder (1.00: the reader costs nothing beyond the JPEG decode).
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${AAH_BUILD:-build}
N=${BENCH_IMAGES:-256} WORKERS=${BENCH_WORKERS:-2} ROUNDS=${BENCH_ROUNDS:-3}
PY=/usr/bin/python3
[ -x "$BUILD/bench/bench_data" ] || make --no-print-directory "$BUILD/bench/bench_data" >/dev/null
[ -x "$BUILD/aah-trial" ] || make --no-print-directory "$BUILD/aah-trial" >/dev/null
T=$(mktemp -d "${TMPDIR:-/tmp}/aah-bench-data.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$BUILD/bench/bench_data" make "$T/jpg" "$N" 375 500 || exit 1
$PY tests/fixtures/tfrecord_write.py imagenet "$T/jpg" "$T/tfr" --shards 4 >/dev/null || exit 1
$PY - tests/fixtures/arch/cnn2.json "$T/arch.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
a["input"] = {"height": 64, "width": 64, "channels": 3}
json.dump(a, open(sys.argv[2], "w"))
PY

median() { printf '%s\n' "$@" | sort -g | sed -n "$(((ROUNDS + 1) / 2))p"; }
ratio() { $PY -c "print(f'{$1 / $2:.2f}x')"; }

trial() { # trial DIR: training images/s of one epoch
	rm -rf "$T/trial"
	"$BUILD/aah-trial" --trial_dir "$T/trial" --arch "$T/arch.json" --train_data_dir "$1" \
		--warmup_1 1 --threads 2 --num_parallel_calls "$WORKERS" --batch_size 32 \
		--val_samples 32 --monitor_interval 0 >/dev/null 2>"$T/trial.err" ||
		{ cat "$T/trial.err" >&2; echo 0; return; }
	$PY -c "import json,sys; print(round(json.loads(open(sys.argv[1]).readline())['images_per_sec'], 1))" \
		"$T/trial/metrics.jsonl"
}

printf '%-22s %8s %14s %14s %7s\n' measurement images jpegdir_img/s tfrecord_img/s ratio
j=() t=() jc=() tc=()
for ((r = 0; r < ROUNDS; r++)); do
	read -r x _ _ c < <("$BUILD/bench/bench_data" read "$T/jpg" 224 "$WORKERS" 32)
	j+=("$x") jc+=("$c")
	read -r x _ _ c < <("$BUILD/bench/bench_data" read "$T/tfr" 224 "$WORKERS" 32)
	t+=("$x") tc+=("$c")
done
a=$(median "${j[@]}") b=$(median "${t[@]}")
printf '%-22s %8s %14s %14s %7s   (jpeg: %s; tfrecord: %s)\n' "loader, $WORKERS workers" "$N" \
	"$a" "$b" "$(ratio "$b" "$a")" "${j[*]}" "${t[*]}"
a=$(median "${jc[@]}") b=$(median "${tc[@]}")
printf '%-22s %8s %14s %14s %7s   (jpeg: %s; tfrecord: %s)\n' "loader CPU ms/image" "$N" \
	"$a" "$b" "$(ratio "$b" "$a")" "${jc[*]}" "${tc[*]}"
j=() t=()
for ((r = 0; r < ROUNDS; r++)); do
	j+=("$(trial "$T/jpg")")
	t+=("$(trial "$T/tfr")")
done
a=$(median "${j[@]}") b=$(median "${t[@]}")
printf '%-22s %8s %14s %14s %7s   (jpeg: %s; tfrecord: %s)\n' "aah-trial cnn2 64px" "$N" \
	"$a" "$b" "$(ratio "$b" "$a")" "${j[*]}" "${t[*]}"
echo "open (index + checksums) of the TFRecord set: $("$BUILD/bench/bench_data" read "$T/tfr" 224 "$WORKERS" 32 | cut -d' ' -f3)s for $(du -sh "$T/tfr" | cut -f1)"
