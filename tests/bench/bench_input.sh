#!/usr/bin/env bash
# ImageNet input: aah's decode + augment against torchvision's, and the time
# to the first batch of a multi-GB TFRecord set, first open against second.
#
# The set is made here: BENCH_INPUT_IMAGES (default 3000) JPEGs of
# ImageNet's size distribution (tests/bench/imagenet_set.py, numpy + PIL),
# also packed as TFRecord shards (tests/fixtures/tfrecord_write.py).
# 1. decode + augment on one core, on the same files in the same run, rounds
#    alternating: aah's loader with one worker thread (bench_data read:
#    random-resized crop to 224, flip, normalised floats) as it decodes now
#    (DCT scale, rows and columns of the crop), aah decoding whole images at
#    full size (the decode before), aah on the TFRecord shards, and
#    torchvision's RandomResizedCrop pipeline (tests/bench/bench_input_torch.py:
#    PIL, one torch thread). Medians of images/s and of CPU ms per image
#    (user + system, every thread of the process: the steadier figure on a
#    shared machine); images per CPU-second = 1000 / ms is the per-core rate.
# 2. BENCH_TFRECORD_GB (default 2) of TFRecord shards (the packed set's shards
#    copied under new names until the size is reached): the seconds from
#    opening the set to the first training batch (256 samples, a worker per
#    core), with no index (the open reads and checks every record and writes
#    the indexes) and then again (the open reads the indexes). Before each,
#    the data and index files are fsync'd and dropped from the page cache
#    (posix_fadvise DONTNEED, these files only), so both start cold.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
BUILD=${AAH_BUILD:-build}
N=${BENCH_INPUT_IMAGES:-3000} GB=${BENCH_TFRECORD_GB:-2} ROUNDS=${BENCH_ROUNDS:-3}
PY=/usr/bin/python3
for m in numpy PIL torchvision; do
	$PY -c "import $m" 2>/dev/null || { echo "bench_input: no python3 module $m (make bench-deps)"; exit 1; }
done
[ -x "$BUILD/bench/bench_data" ] || make --no-print-directory "$BUILD/bench/bench_data" >/dev/null
T=$(mktemp -d "${TMPDIR:-/tmp}/aah-bench-input.XXXXXX")
trap 'rm -rf "$T"' EXIT
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
$PY tests/bench/imagenet_set.py "$T/jpg" "$N" || exit 1
$PY tests/fixtures/tfrecord_write.py imagenet "$T/jpg" "$T/tfr" --shards 4 >/dev/null || exit 1
echo "set: $(du -sh "$T/jpg" | cut -f1) of JPEGs; TFRecords $(du -sh "$T/tfr" | cut -f1)"

median() { printf '%s\n' "$@" | sort -g | sed -n "$(((ROUNDS + 1) / 2))p"; }
ratio() { $PY -c "print(f'{$1 / $2:.2f}x')"; }

declare -A rate cpu
names=(aah aah_full aah_tfrecord torchvision)
"$BUILD/bench/bench_data" read "$T/tfr" 224 1 32 >/dev/null 2>&1 # index the shards once
for ((r = 0; r < ROUNDS; r++)); do
	for w in "${names[@]}"; do
		case $w in
		aah) out=$("$BUILD/bench/bench_data" read "$T/jpg" 224 1 32) ;;
		aah_full) out=$("$BUILD/bench/bench_data" read "$T/jpg" 224 1 32 full) ;;
		aah_tfrecord) out=$("$BUILD/bench/bench_data" read "$T/tfr" 224 1 32) ;;
		torchvision) out=$($PY tests/bench/bench_input_torch.py "$T/jpg" 224) ;;
		esac || { echo "bench_input: $w failed"; exit 1; }
		read -r x _ _ c <<<"$(tail -n 1 <<<"$out")"
		rate[$w]+="$x " cpu[$w]+="$c "
	done
done
printf '%-34s %10s %12s %12s %9s\n' "decode + augment to 224, 1 core" images/s cpu_ms/image img/cpu_s vs_torch
# shellcheck disable=SC2086 # the lists are numbers
tc=$(median ${cpu[torchvision]})
for w in "${names[@]}"; do
	# shellcheck disable=SC2086
	a=$(median ${rate[$w]}) c=$(median ${cpu[$w]})
	printf '%-34s %10s %12s %12s %9s   (images/s: %s)\n' "$w" "$a" "$c" \
		"$($PY -c "print(round(1000 / $c, 1))")" "$(ratio "$tc" "$c")" "${rate[$w]% }"
done

# the multi-GB set
mkdir -p "$T/big"
want=$((GB * 1024 * 1024 * 1024)) have=0 k=0
shards=("$T"/tfr/train-?????-of-?????) # not their .aah-index files
per=$(stat -c %s "${shards[@]}" | $PY -c "import sys; print(sum(int(l) for l in sys.stdin))")
copies=$(((want + per - 1) / per))
total=$((copies * ${#shards[@]}))
for ((c = 0; c < copies; c++)); do
	for s in "${shards[@]}"; do
		cp "$s" "$T/big/$(printf 'train-%05d-of-%05d' "$k" "$total")"
		k=$((k + 1))
	done
done
have=$(du -sb "$T/big" | cut -f1)
evict() {
	$PY - "$T/big" <<'PY'
import os, sys
d = sys.argv[1]
for f in os.listdir(d):
    fd = os.open(os.path.join(d, f), os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
PY
}
evict
out=$("$BUILD/bench/bench_data" first "$T/big" 224 0 256) || { echo "bench_input: first open failed"; exit 1; }
read -r first open1 n <<<"$(tail -n 1 <<<"$out")"
evict
out=$("$BUILD/bench/bench_data" first "$T/big" 224 0 256) || { echo "bench_input: second open failed"; exit 1; }
read -r second open2 _ <<<"$(tail -n 1 <<<"$out")"
printf 'time to first batch, %s TFRecord files, %s records, %.2f GB (cold page cache):\n' \
	"$total" "$n" "$($PY -c "print($have / 2**30)")"
printf '  first open (no index: reads and checks every record, writes the indexes): %6.2f s (open %.2f s)\n' "$first" "$open1"
printf '  second open (reads the indexes):                                          %6.2f s (open %.2f s)   %s faster\n' \
	"$second" "$open2" "$(ratio "$first" "$second")"
