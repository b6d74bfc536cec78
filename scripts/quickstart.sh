#!/usr/bin/env bash
# `make run`: the quickstart experiment (examples/quickstart.yml) on this
# machine, then its report and its verified log archive.
#   scripts/quickstart.sh [--minutes N] [--seed N] [--start auto|small|large] [--print-config]
# --start: the network the search starts from (auto: the larger one where
# this machine trains it in time, below; auto and large time it, a few
# seconds, to size its children); --print-config writes the run's
# config and prints its path, running nothing. AAH_WORKDIR picks where
# experiments go (default ./aah-work).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
minutes=10 seed='' start=auto print_config=''
while [ $# -gt 0 ]; do
	case "$1" in
	--minutes) minutes=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--start) start=$2; shift 2 ;;
	--print-config) print_config=1; shift ;;
	-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "quickstart: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
case "$minutes" in ''|*[!0-9]*) echo "quickstart: --minutes needs a whole number" >&2; exit 2 ;; esac
[ "$minutes" -ge 1 ] || { echo "quickstart: --minutes must be at least 1" >&2; exit 2; }
case "$start" in auto|small|large) ;; *) echo "quickstart: --start must be auto, small or large, not '$start'" >&2; exit 2 ;; esac

export PATH="$root/${AAH_BUILD:-build}:$PATH"
export AAH_WORKDIR=${AAH_WORKDIR:-$PWD/aah-work}
mkdir -p "$AAH_WORKDIR"
dataset=/usr/share/datasets/fashion-mnist
data=$dataset/train-images-idx3-ubyte.gz
[ -f "$data" ] || { echo "quickstart: $data is missing: run 'make deps' (Debian package dataset-fashion-mnist)" >&2; exit 1; }

# The larger start network: two convolutions a stage where the shipped one
# has one, 3.8x its FLOPs. Trained alone for 9 minutes on one core of a
# Zen 4 it reaches 93.9% where the shipped one stops near 93.0%, but a
# search can only start from it where a trial's share of the run holds two
# of its epochs (README, "What to expect").
large=$root/examples/fashion-mnist-cnn3d.json
# its forward FLOPs per image as tuner.maxFlops counts them (aah-runner
# check names the figure for a maxFlops below it; tests/e2e/quickstart.bats
# holds the two to each other)
large_flops=5.885e7
share=$(sed -n 's/^  maxExecShare: //p' "$root/examples/quickstart.yml")
# What an epoch of it costs, in images at the speed timed below: 60,000,
# the evaluation (about 6% more) and the trainer's twentieth to spare.
epoch_images=$((60000 * 106 * 105 / 10000))

# Images/s of the larger network a trial trains here: two short runs side
# by side, as the quickstart runs its trials (a core each, or one core
# shared under taskset), two epochs of 3,200 images each; the second
# epochs' mean counts. A first epoch this short reads 2-4% under the speed
# a trial's 60,000-image epochs then train at: it carries the one-off
# start of the first steps.
large_speed() {
	local dir=$AAH_WORKDIR/calibration i
	rm -rf "$dir"
	for i in 1 2; do
		mkdir -p "$dir/$i"
		aah-trial --dataset "$dataset" --arch "$large" --threads 1 --batch_size 64 \
			--precision fast --train_samples 3200 --val_samples 64 --warmup_1 2 \
			--monitor_interval 0 --seed "$i" --trial_dir "$dir/$i" > "$dir/$i/log" 2>&1 &
	done
	wait
	cat "$dir"/*/metrics.jsonl 2>/dev/null | awk -F'"images_per_sec":' '/"epoch":2,/ && NF == 2 {
		sum += $2 + 0; n++ } END { if (n == 2) printf "%.1f\n", sum / n }'
}

if [ "$start" != small ]; then
	ips=$(large_speed)
	[ -n "$ips" ] || { echo "quickstart: timing the larger start network failed (see $AAH_WORKDIR/calibration)" >&2; exit 1; }
	rm -rf "$AAH_WORKDIR/calibration"   # its checkpoints (9 MB) served their purpose
fi
if [ "$start" = auto ]; then
	# A child of the larger network takes about 1.13x its parent's time
	# (capped below). Its first round (2 epochs after about 7 s of
	# start-up) must fit in a trial's share, and the run must hold it and
	# three rounds of 2-epoch children (8 s of start-up each): at least 8
	# finished trials. The speed that takes: the longest epoch both allow.
	need=$(awk -v m="$minutes" -v s="$share" -v ei="$epoch_images" 'BEGIN {
		e1 = (m * 60 * s - 7) / 2; e2 = (m * 60 - 7 - 3 * 8) / (2 + 3 * 2 * 1.13)
		e = e1 < e2 ? e1 : e2
		if (e <= 0) print "inf"; else printf "%.3f", ei / e }')
	if [ "$need" != inf ] && awk -v ips="$ips" -v need="$need" 'BEGIN { exit !(ips >= need) }'; then
		start=large
		why="the run holds its first round and three rounds of its children, starting from it"
	else
		start=small
		why="too slow for its first round and three rounds of its children in $minutes minute(s), starting from the smaller one"
	fi
	printf 'quickstart: two trials here train the larger start network at %.0f images/s each (a %s-minute run from it needs %.0f): %s\n' \
		"$ips" "$minutes" "$need" "$why"
fi

# The shipped config with this run's budget, start and absolute paths.
cfg=$AAH_WORKDIR/quickstart.yml
sed -e "s|^maxExecDuration: .*|maxExecDuration: ${minutes}m|" \
    -e "s|^searchSpacePath: |searchSpacePath: $root/examples/|" \
    -e "s|^  initialArch: |  initialArch: $root/examples/|" \
    "$root/examples/quickstart.yml" > "$cfg"
if [ "$start" = large ]; then
	# Its children train 2 epochs each (a grown last trial takes the end of
	# the run) and may cost what lets those 2 epochs and 8 s of start-up fit
	# in a trial's share at the speed measured. A small child's time grows
	# twice as fast as its FLOPs (110 children of 18 runs on a Zen 4: 1.05x
	# the FLOPs took 1.10x the time an epoch; the additions, concatenations
	# and activations a morph adds cost time but few FLOPs), so room for
	# t times the start's epoch allows 1 + (t - 1) / 2 in FLOPs. A child over
	# that is cut to 1 epoch by the share and spends a slot. At least 1.05x
	# (room for a skip or a narrow widening), at most 1.7x (large growth
	# trains faster than its FLOPs: 1.7x took 1.5x the time).
	read -r ratio flops fit < <(awk -v m="$minutes" -v s="$share" -v ips="$ips" \
		-v ei="$epoch_images" -v f="$large_flops" 'BEGIN {
		r = 1 + ((m * 60 * s - 8) / 2 / (ei / ips) - 1) / 2
		c = r < 1.05 ? 1.05 : (r > 1.7 ? 1.7 : r)
		c = sprintf("%.3f", c)
		printf "%s %.4g %s\n", c, f * c, (r < 1.05 ? "no" : "yes") }')
	epochs=2
	if [ "$fit" = yes ]; then
		fit="two of their epochs fit in a trial's share"
	else
		fit="the least it allows; two of their epochs do not fit in a trial's share at this speed"
	fi
	printf 'quickstart: at %.0f images/s a trial, the larger start network'"'"'s children may cost up to %sx its FLOPs (tuner.maxFlops %s): %s\n' \
		"$ips" "$ratio" "$flops" "$fit"
	sed -i -e "s|^  initialArch: .*|  initialArch: $large|" \
	       -e "s|^  maxFlops: .*|  maxFlops: $flops|" \
	       -e "s|--inherited_epochs [0-9][0-9]*|--inherited_epochs $epochs|" "$cfg"
	if ! grep -q -- "--inherited_epochs $epochs" "$cfg" || ! grep -q "^  maxFlops: $flops\$" "$cfg"; then
		echo "quickstart: examples/quickstart.yml no longer has the keys --start large sets" >&2
		exit 1
	fi
fi
if [ -n "$print_config" ]; then
	echo "$cfg"
	exit 0
fi

echo "quickstart: architecture search on Fashion-MNIST for $minutes minute(s), 2 trials at a time, from the $start start network"
echo "quickstart: experiments in $AAH_WORKDIR (progress below; Ctrl-C stops, 'aah-runner resume <id>' continues)"
log=$AAH_WORKDIR/quickstart.log
set +e
aah-runner create -c "$cfg" ${seed:+--seed "$seed"} | tee "$log"
rc=${PIPESTATUS[0]}
set -e
id=$(head -1 "$log")
if [ "$rc" -ne 0 ] || [ -z "$id" ]; then
	echo "quickstart: the experiment did not finish (exit $rc)" >&2
	exit 1
fi

echo
aah-runner report "$id" | tee "$AAH_WORKDIR/quickstart-report.txt"
archive=$AAH_WORKDIR/experiments/$id/$id-logs.tar.zst
aah-runner collect "$id" -o "$archive" -q
aah-runner verify "$archive" > /dev/null
echo
echo "=== aah quickstart: experiment $id"
grep -E '^ *(Result|Final Score|Final Regulated Score|Error):' "$AAH_WORKDIR/quickstart-report.txt" | sed 's/^ */  /'
echo "  report:  $AAH_WORKDIR/experiments/$id/report.html"
echo "  archive: $archive (verified)"
