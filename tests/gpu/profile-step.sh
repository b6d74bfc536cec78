#!/usr/bin/env bash
# profile-step.sh: where one ResNet-50 training step's GPU time goes, aah's
# cuda backend beside PyTorch AMP, on a machine with an NVIDIA GPU (issue 40's
# "measure first"). Nsight Systems cannot make a report on the device
# machines here, so this reads each kernel's duration with Nsight Compute
# (one metric, gpu__time_duration, no replay, clocks left alone), finds the
# last training step in the launch sequence (the repeating tail) and prints:
# the step's kernel count, their summed time (against the step's wall time,
# batch / images/s from run-on-device.sh, that is the share of gaps and host
# work) and the 10 kernels that take the most.
#
#   there:  AAH_BUILD=build-gpu tests/gpu/profile-step.sh   (after run-on-device.sh,
#           which unpacks the bundle; carry: build-gpu)
#
# Each side is capped (PROFILE_CAP_S, 70 s); the raw CSVs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/gpu-env.sh   # GPU_RUN_DIR, gpu_lib_path
BUILD=${AAH_BUILD:-build}
[ -f "$BUILD/bundle.tar.xz" ] && [ ! -x "$BUILD/aah-trial" ] && BUILD=$GPU_RUN_DIR
OUTDIR=${OUT:-$BUILD/gpu-out}
mkdir -p "$OUTDIR" || exit 1
BATCH=${GPU_BATCH:-256} CAP=${PROFILE_CAP_S:-70} PY=${PYTHON:-python3}
R50=$BUILD/resnet50.json
AAH_LIBS=$(gpu_lib_path "$BUILD" "$PY")
ncu=$(command -v ncu || compgen -G '/opt/nvidia/nsight-compute/*/ncu' | tail -n 1)
[ -n "$ncu" ] || { echo "profile-step: no ncu here"; exit 1; }
NCU=("$ncu" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base)

# profile SIDE CMD...: the kernels of CMD into $OUTDIR/ncu-SIDE.csv
profile() {
	local side=$1
	shift
	timeout -k 5 "$CAP" "${NCU[@]}" --log-file "$OUTDIR/ncu-$side.csv" "$@" >"$OUTDIR/ncu-$side.out" 2>&1
	echo "profile $side: exit $?, $(grep -c gpu__time_duration "$OUTDIR/ncu-$side.csv" 2>/dev/null) kernels"
}
profile aah env LD_LIBRARY_PATH="$AAH_LIBS" AAH_BACKEND=cuda AAH_PRECISION=bf16 \
	"$BUILD/bench/bench_train" "$R50" "$BATCH" 1 1 1
profile torch "$PY" tests/bench/bench_train_torch.py --arch "$R50" --device cuda --batch "$BATCH" \
	--steps 1 --warmup 2 --precision bf16

"$PY" - "$OUTDIR" <<'PY'
import csv, sys, collections
out = sys.argv[1]
for side in ("aah", "torch"):
    try:
        rows = [r for r in csv.DictReader(l for l in open(f"{out}/ncu-{side}.csv") if l.startswith('"'))
                if r.get("Metric Name") == "gpu__time_duration.sum"]
    except OSError as e:
        print(f"{side}: no profile ({e})")
        continue
    seq = [(r["Kernel Name"], float(r["Metric Value"].replace(",", ""))) for r in rows]
    names = [n for n, _ in seq]
    n, step = len(names), 0
    for p in range(n // 2, 0, -1):   # the longest tail that repeats: one step
        if names[n - p:] == names[n - 2 * p:n - p]:
            step = p
            break
    last = seq[n - step:] if step else seq
    total = sum(t for _, t in last)
    by = collections.defaultdict(lambda: [0, 0.0])
    for name, t in last:
        by[name][0] += 1
        by[name][1] += t
    what = "the last step" if step else "the whole run (no repeating step found)"
    print(f"== {side}: {len(last)} kernels in {what}, {total / 1e6:.2f} ms of kernel time")
    for name, (c, t) in sorted(by.items(), key=lambda kv: -kv[1][1])[:10]:
        print(f"  {t / 1e6:8.2f} ms {100 * t / total:5.1f}% x{c:<4d} {name[:110]}")
PY
