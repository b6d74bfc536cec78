#!/usr/bin/env bash
# run-on-device.sh: the cuda backend's checks on a machine with an NVIDIA GPU
# (docs/cuda.md). CI and the development VM have none; a session lent one
# (the `device` tool: about 15 minutes in all, start-up included) runs this
# there, within GPU_BUDGET_S (480 s) of its own. Each part prints its result
# as soon as it has one, in this order, most needed first:
#
#   here:   make -j2 all unit bench-bins && tests/gpu/run-on-device.sh --collect
#           (the binaries below, stripped, and the shared libraries they
#           need beside CUDA's (docker/collect-libs.sh) into build-gpu/,
#           about 55 MiB: under the device tool's 64 MiB carry; and
#           resnet50.json, by tests/gpu/resnet50-arch.sh)
#   there:  AAH_BUILD=build-gpu tests/gpu/run-on-device.sh   (carry: build-gpu)
#
# 1. the op tests: every op of the cuda backend against kernels/ref
#    (test_kernels_ref), the casts (test_kernels_cast), --precision auto's
#    and --backend auto's picks (test_precision), the model net
#    (test_kernels_refnet), NVML on the real GPU (test_monitor_sampling):
#    a cuda case reported "skipped: no CUDA device" there is a failure;
# 2. the training test, the model resident on the device and staged
#    (test_kernels_train_gpu runs both against the CPU's losses);
# 3. ResNet-50 (AIPerf's start graph at 224x224, written by --collect with
#    aah-runner): training images/s of aah (bench_train, AAH_BACKEND=cuda)
#    beside PyTorch AMP (bench_train_torch.py --device cuda: autocast in the
#    same precision, channels_last, eager) on the same GPU, net and batch,
#    and MFU: AIPerf's training FLOPs per image x images/s over the GPU's
#    dense bf16 peak (GPU_PEAK_TFLOPS, else from the device's name);
# 4. optional, while the budget lasts: aah-trial --backend auto on the GPU
#    where Fashion-MNIST is installed (it must pick cuda and say the
#    device), PyTorch with torch.compile on
#    ResNet-50, compute-sanitizer memcheck and racecheck on test_kernels_ref
#    and test_kernels_cast, and the smaller nets of GPU_ARCHS.
# A part that would start past the budget says "skipped: out of time".
# Results also go to $OUT/gpu-report.txt when $OUT is set. Exit 1 on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
BUILD=${AAH_BUILD:-build}
LIBS=$BUILD/gpu-libs
TESTS=(test_kernels_ref test_kernels_refnet test_kernels_train_gpu test_kernels_cast test_precision
	test_monitor_sampling)
SANITIZED=(test_kernels_ref test_kernels_cast)
BATCH=${GPU_BATCH:-256} STEPS=${GPU_STEPS:-20} WARMUP=${GPU_WARMUP:-5}
PRECISION=${GPU_PRECISION:-bf16}
R50=$BUILD/resnet50.json
GPU_ARCHS=${GPU_ARCHS:-"$([ -f "$R50" ] && echo "$R50") tests/fixtures/arch/cnn2.json tests/fixtures/arch/resnet_small.json"}

if [ "${1:-}" = --collect ]; then
	dest=build-gpu
	rm -rf "$dest" && mkdir -p "$dest/tests/unit" "$dest/bench" || exit 1
	bins=(aah-trial bench/bench_train "${TESTS[@]/#/tests/unit/}")
	for b in "${bins[@]}"; do
		strip -o "$dest/$b" "$BUILD/$b" || exit 1
	done
	docker/collect-libs.sh "$dest/gpu-libs" "${bins[@]/#/$BUILD/}" || exit 1
	strip --strip-unneeded "$dest"/gpu-libs/* 2>/dev/null
	tests/gpu/resnet50-arch.sh "$dest/resnet50.json" || exit 1
	du -sh "$dest"
	exit 0
fi

REPORT=${OUT:+$OUT/gpu-report.txt}
say() {
	echo "$*"
	if [ -n "$REPORT" ]; then echo "$*" >>"$REPORT"; fi
}
fail=0

# CUDA's libraries: the system's, else those of PyTorch's nvidia-* wheels
PY=${PYTHON:-python3}
wheel_libs=$($PY - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
    print(":".join(sorted(d for p in nvidia.__path__ for d in glob.glob(os.path.join(p, "*", "lib")))))
except ImportError:
    pass
PY
)
export LD_LIBRARY_PATH="$PWD/$LIBS${wheel_libs:+:$wheel_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if ! nvidia-smi -L 2>/dev/null; then
	say "run-on-device: no GPU here (nvidia-smi lists none): nothing to run"
	exit 1
fi
say "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
for b in "$BUILD/aah-trial" "${TESTS[@]/#/$BUILD/tests/unit/}"; do
	if ldd "$b" | grep -q 'not found'; then
		say "run-on-device: $b lacks libraries:"
		ldd "$b" | grep 'not found'
		exit 1
	fi
done

BUDGET=${GPU_BUDGET_S:-480}
t_start=$SECONDS
left() { echo $((BUDGET - (SECONDS - t_start))); }
# in_time NEED WHAT: is there NEED seconds left for WHAT? Says so when not.
in_time() {
	if [ "$(left)" -lt "$1" ]; then
		say "$2: skipped: out of time ($(left) s of ${BUDGET} s left, it needs about $1)"
		return 1
	fi
}

# run_test NAME [ENV...]: one Criterion binary, every cuda case must run
run_test() {
	local t=$1 out rc skipped
	shift
	out=$(env "$@" timeout "$(left)" "$BUILD/tests/unit/$t" --tap=/dev/stdout --jobs 1 2>&1)
	rc=$?
	skipped=$(grep -c 'no CUDA device' <<<"$out")
	say "$t: exit $rc, $(grep -c '^ok' <<<"$out") ok, $(grep -c '^not ok' <<<"$out") not ok," \
		"$(grep -c '# SKIP' <<<"$out") skipped ($skipped for want of a device)" \
		"[$((SECONDS - t_start)) s]"
	grep -E '^not ok|# SKIP' <<<"$out" | grep -v 'cuda has no bf16' | head -20
	if [ "$rc" -ne 0 ] || [ "$skipped" -ne 0 ]; then fail=1; fi
}

# 1. the op tests
say "== 1. op tests against ref"
for t in test_kernels_ref test_kernels_cast test_precision test_kernels_refnet test_monitor_sampling; do
	in_time 20 "$t" && run_test "$t"
done

# 2. the training test: resident and staged, each against the CPU's losses
say "== 2. training test (resident and staged)"
in_time 30 test_kernels_train_gpu && run_test test_kernels_train_gpu

# 3. ResNet-50 images/s and MFU, aah beside PyTorch AMP channels_last
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$name" in   # dense bf16 tensor-core peak, TFLOPS
*H100*PCIe*) peak=756 ;;
*H100* | *H200* | *H800*) peak=989.4 ;;
*A100*) peak=312 ;;
*) peak= ;;
esac
peak=${GPU_PEAK_TFLOPS:-$peak}

# bench_row ARCH [--compile]: one line, aah and PyTorch on ARCH
bench_row() {
	local f=$1 aah torch flops out row
	shift
	out=$(AAH_BACKEND=cuda AAH_PRECISION=$PRECISION AAH_BENCH_FLOPS=1 \
		timeout "$(left)" "$BUILD/bench/bench_train" "$f" "$BATCH" 1 "$STEPS" "$WARMUP" 2>&1)
	aah=$(tail -1 <<<"$out")
	flops=$(sed -n 's/^train_flops_per_image //p' <<<"$out")
	torch=$(timeout "$(left)" "$PY" tests/bench/bench_train_torch.py --arch "$f" --device cuda \
		--batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --precision "$PRECISION" "$@" 2>&1 | tail -1)
	row=$($PY - "$aah" "$torch" "${flops:-nan}" "${peak:-nan}" <<'PY' 2>/dev/null || echo "? ? ?"
import sys
aah, torch, flops, peak = (float(v) for v in sys.argv[1:])
mfu = lambda ips: f"{100 * flops * ips / (peak * 1e12):.1f}%"
print(f"{aah / torch:.2f}x", mfu(aah), mfu(torch))
PY
)
	# shellcheck disable=SC2086 # row is three cells
	say "$(printf '%-40s %6s %12s %12s %7s %8s %8s' "$(basename "$f")${1:+ $1}" "$BATCH" "$aah" "$torch" $row) [$((SECONDS - t_start)) s]"
}
say "== 3. ResNet-50 training images/s and MFU: aah beside PyTorch AMP (channels_last)"
say "precision $PRECISION; MFU over ${peak:-an unknown} TFLOPS (dense bf16 peak of $name)"
say "$(printf '%-40s %6s %12s %12s %7s %8s %8s' arch batch aah_img/s torch_img/s ratio aah_mfu torch_mfu)"
if [ ! -f "$R50" ]; then
	say "resnet50: $R50 is missing (tests/gpu/resnet50-arch.sh, run by --collect)"
	fail=1
elif in_time 90 "ResNet-50"; then
	bench_row "$R50"
fi

# 4. optional, while the budget lasts
say "== 4. optional"
if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
	say "aah-trial --backend auto: skipped: no Fashion-MNIST here (test_precision checked the pick)"
elif in_time 30 "aah-trial --backend auto"; then
	out=$(timeout "$(left)" "$BUILD/aah-trial" --trial_dir "${OUT:-/tmp}/auto-trial" --warmup_1 1 \
		--train_samples 2048 --val_samples 512 --monitor_interval 1 2>&1)
	line=$(grep -m1 '^aah-trial: rank 0 of 1: backend' <<<"$out")
	say "aah-trial --backend auto: ${line:-no backend line}"
	case $line in *"backend cuda (auto: "*"device cuda:0 "*) ;; *) fail=1 ;; esac
fi
if [ -f "$R50" ] && in_time 120 "ResNet-50, PyTorch torch.compile"; then
	bench_row "$R50" --compile
fi
if command -v compute-sanitizer >/dev/null; then
	for t in "${SANITIZED[@]}"; do
		for tool in memcheck racecheck; do
			in_time 60 "compute-sanitizer $tool on $t" || continue
			log=${OUT:-/tmp}/sanitizer-$t-$tool.txt
			timeout "$(left)" compute-sanitizer --tool "$tool" --target-processes all \
				--error-exitcode 99 "$BUILD/tests/unit/$t" --jobs 1 >"$log" 2>&1
			rc=$?
			say "compute-sanitizer $tool on $t: exit $rc;" \
				"$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | sort | uniq -c | tr -s ' ' | head -3)"
			if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then fail=1; fi
		done
	done
else
	say "compute-sanitizer: not installed here"
fi
for f in $GPU_ARCHS; do
	[ "$f" = "$R50" ] && continue
	in_time 45 "$(basename "$f")" && bench_row "$f"
done
say "done in $((SECONDS - t_start)) s of ${BUDGET} s"
exit $fail
