#!/usr/bin/env bash
# run-on-device.sh: the cuda backend's checks on a machine with an NVIDIA GPU
# (docs/cuda.md). CI and the development VM have none; a session lent one
# (the `device` tool) runs this there.
#
#   here:   make -j2 all unit bench-bins && tests/gpu/run-on-device.sh --collect
#           (the binaries below, stripped, and the shared libraries they
#           need beside CUDA's (docker/collect-libs.sh) into build-gpu/,
#           about 55 MiB: under the device tool's 64 MiB carry; and
#           resnet50.json, by tests/gpu/resnet50-arch.sh)
#   there:  AAH_BUILD=build-gpu tests/gpu/run-on-device.sh   (carry: build-gpu)
#
# 1. every op of the cuda backend against kernels/ref (test_kernels_ref), the
#    model net through it (test_kernels_refnet), the training run against
#    the CPU's (test_kernels_train_gpu), the casts (test_kernels_cast),
#    --precision auto's pick (test_precision), NVML on the real GPU
#    (test_monitor_sampling): a cuda case reported "skipped: no CUDA
#    device" there is a failure;
# 2. compute-sanitizer memcheck and racecheck on test_kernels_ref and
#    test_kernels_cast;
# 3. training images/s of aah (bench_train, AAH_BACKEND=cuda) beside
#    PyTorch on the same GPU, net, batch and precision (bench_train_torch.py
#    --device cuda: AMP autocast in bf16 or fp16, channels_last,
#    torch.compile where it works), for each arch in GPU_ARCHS (aah-arch/1
#    files; by default AIPerf's ResNet-50 start graph at 224x224, which
#    --collect writes with aah-runner, then cnn2 and resnet_small), and
#    MFU: AIPerf's training FLOPs per image x images/s over the GPU's dense
#    bf16 peak (GPU_PEAK_TFLOPS, else from the device's name).
# Results also go to $OUT/gpu-report.txt when $OUT is set. Exit 1 on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
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

# 1. the op tests: every cuda case must run
for t in "${TESTS[@]}"; do
	out=$("$BUILD/tests/unit/$t" --tap=/dev/stdout --jobs 1 2>&1)
	rc=$?
	skipped=$(grep -c 'no CUDA device' <<<"$out")
	say "$t: exit $rc, $(grep -c '^ok' <<<"$out") ok, $(grep -c '^not ok' <<<"$out") not ok," \
		"$(grep -c '# SKIP' <<<"$out") skipped ($skipped for want of a device)"
	grep -E '^not ok|# SKIP' <<<"$out" | grep -v 'cuda has no bf16' | head -20
	if [ "$rc" -ne 0 ] || [ "$skipped" -ne 0 ]; then fail=1; fi
done

# 2. compute-sanitizer on the op tests (Criterion runs each test in a child)
if command -v compute-sanitizer >/dev/null; then
	for t in "${SANITIZED[@]}"; do
		for tool in memcheck racecheck; do
			log=${OUT:-/tmp}/sanitizer-$t-$tool.txt
			compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 99 \
				"$BUILD/tests/unit/$t" --jobs 1 >"$log" 2>&1
			rc=$?
			say "compute-sanitizer $tool on $t: exit $rc;" \
				"$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | sort | uniq -c | tr -s ' ' | head -3)"
			if [ "$rc" -ne 0 ]; then fail=1; fi
		done
	done
else
	say "compute-sanitizer: not installed here"
	fail=1
fi

# 3. images/s, aah beside PyTorch in the same precision, and MFU
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$name" in   # dense bf16 tensor-core peak, TFLOPS
*H100*PCIe*) peak=756 ;;
*H100* | *H200* | *H800* | *GH200*) peak=989.4 ;;
*A100*) peak=312 ;;
*) peak= ;;
esac
peak=${GPU_PEAK_TFLOPS:-$peak}
say "precision $PRECISION; MFU over ${peak:-an unknown} TFLOPS (dense bf16 peak of $name)"
say "$(printf '%-40s %6s %12s %12s %7s %8s %8s' arch batch aah_img/s torch_img/s ratio aah_mfu torch_mfu)"
for f in $GPU_ARCHS; do
	out=$(AAH_BACKEND=cuda AAH_PRECISION=$PRECISION AAH_BENCH_FLOPS=1 \
		"$BUILD/bench/bench_train" "$f" "$BATCH" 1 "$STEPS" "$WARMUP" 2>&1)
	aah=$(tail -1 <<<"$out")
	flops=$(sed -n 's/^train_flops_per_image //p' <<<"$out")
	torch=$($PY tests/bench/bench_train_torch.py --arch "$f" --device cuda --batch "$BATCH" \
		--steps "$STEPS" --warmup "$WARMUP" --precision "$PRECISION" --compile 2>&1 | tail -1)
	row=$($PY - "$aah" "$torch" "${flops:-nan}" "${peak:-nan}" <<'PY' 2>/dev/null || echo "? ? ?"
import sys
aah, torch, flops, peak = (float(v) for v in sys.argv[1:])
mfu = lambda ips: f"{100 * flops * ips / (peak * 1e12):.1f}%"
print(f"{aah / torch:.2f}x", mfu(aah), mfu(torch))
PY
)
	say "$(printf '%-40s %6s %12s %12s %7s %8s %8s' "$f" "$BATCH" "$aah" "$torch" $row)"
done
exit $fail
