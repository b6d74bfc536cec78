#!/usr/bin/env bash
# run-on-device.sh: the cuda backend's checks on a machine with an NVIDIA GPU
# (docs/cuda.md, "On a GPU"). CI and the development VM have none; a session
# lent one (the `device` tool: about 15 minutes in all, start-up included)
# runs this there. The must-have parts fit GPU_BUDGET_S (300 s) of script
# time, the optional ones GPU_OPTIONAL_S (90 s) more, so a second run fits.
#
#   here:   make -j2 all unit bench-bins && tests/gpu/run-on-device.sh --collect
#           (build-gpu/: the binaries below, stripped, the shared libraries
#           they need beside CUDA's (docker/collect-libs.sh), resnet50.json
#           (tests/gpu/resnet50-arch.sh) and a Fashion-MNIST subset; packed
#           as one bundle.tar.xz where that is smaller; refused over 60 MiB)
#   there:  AAH_BUILD=build-gpu tests/gpu/run-on-device.sh   (carry: build-gpu)
#
# 0. preflight: ldd --version, where cuDNN, cuBLASLt, NCCL and the CUDA
#    runtime resolve for aah's binaries, and any library they lack (fatal);
# 1. the op tests, while one CUDA context is held open (the device stays
#    initialised between the tests' processes): every op of the cuda backend
#    against kernels/ref (test_kernels_ref), the casts (test_kernels_cast),
#    --precision auto's and --backend auto's picks (test_precision), the
#    model net (test_kernels_refnet), NVML on the real GPU
#    (test_monitor_sampling);
# 2. the training test: the model resident and staged (test_kernels_train_gpu);
# 3. ResNet-50 (AIPerf's start graph, 224x224): training images/s of aah
#    (bench_train, AAH_BACKEND=cuda) beside PyTorch AMP (bench_train_torch.py
#    --device cuda: autocast, channels_last, eager), same GPU, net, batch,
#    with MFU over the GPU's dense bf16 peak (GPU_PEAK_TFLOPS, else from its
#    name). A failing side is retried once at half the batch;
# 4. aah-trial --backend auto on the carried Fashion-MNIST subset: it must
#    pick cuda, name the device, and write result.json;
# 5. optional (GPU_OPTIONAL_S): compute-sanitizer memcheck and racecheck on
#    test_kernels_cast and test_kernels_ref (GPU_SANITIZE=0: none), the
#    smaller nets of GPU_ARCHS, PyTorch torch.compile on ResNet-50, and
#    ResNet-50 at AIPerf's batch as the memory plan caps it (GPU_RULE=0:
#    not), with the device memory aah's steps took beside the plan.
#
# AAH_REQUIRE_CUDA=1 is exported: a cuda case that would be "skipped: no
# CUDA device" fails (tests/unit/cuda_skip.h), and any other start-up error
# fails anyway. LD_LIBRARY_PATH is set for aah's binaries only. A part that
# would start past its budget says "skipped: out of time" (a failure for a
# must-have part). Everything each part prints goes to $OUT/gpu-log.txt, the
# summary (with each failing assertion) to $OUT/gpu-report.txt and stdout,
# aah-trial's result.json to $OUT/trial-result.json ($OUT: the device tool's
# folder; build/gpu-out without one). Exit 1 on any failure.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/gpu-env.sh   # GPU_RUN_DIR, gpu_lib_path
BUILD=${AAH_BUILD:-build}
OP_TESTS=(test_kernels_ref test_kernels_cast test_precision test_kernels_refnet test_monitor_sampling)
TESTS=("${OP_TESTS[@]}" test_kernels_train_gpu)
BINS=(aah-trial bench/bench_train "${TESTS[@]/#/tests/unit/}")
CARRY_MAX=$((60 * 1024 * 1024))

# --collect: build-gpu/ from $BUILD, at most CARRY_MAX bytes with the tree
collect() {
	local dest=build-gpu stage raw packed tree
	stage=$(mktemp -d) || return 1
	rm -rf "$dest" && mkdir -p "$stage/tests/unit" "$stage/bench" "$dest" || return 1
	for b in "${BINS[@]}"; do
		strip -o "$stage/$b" "$BUILD/$b" || return 1
	done
	docker/collect-libs.sh "$stage/gpu-libs" "${BINS[@]/#/$BUILD/}" || return 1
	strip --strip-unneeded "$stage"/gpu-libs/* 2>/dev/null
	AAH_BUILD=$BUILD tests/gpu/resnet50-arch.sh "$stage/resnet50.json" || return 1
	tests/gpu/fmnist-subset.py "${FMNIST:-/usr/share/datasets/fashion-mnist}" "$stage/fashion-mnist" \
		4096 1024 || return 1
	raw=$(du -sb "$stage" | cut -f1)
	tar -C "$stage" -cf - . | xz -T2 -6 >"$dest/bundle.tar.xz" || return 1
	packed=$(stat -c %s "$dest/bundle.tar.xz")
	if [ "$packed" -ge $((raw * 9 / 10)) ]; then   # xz does not pay: carry it as it is
		rm -f "$dest/bundle.tar.xz"
		cp -a "$stage/." "$dest/" || return 1
	fi
	rm -rf "$stage"
	packed=$(du -sb "$dest" | cut -f1)
	# the device tool carries the working tree too (tracked and untracked files)
	tree=$(git ls-files -z -co --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
	echo "collect: $dest is $((packed / 1024)) KiB ($((raw / 1024)) KiB unpacked), the tree $((tree / 1024)) KiB: $(((packed + tree) / 1024)) KiB of the 64 MiB carry"
	if [ $((packed + tree)) -gt "$CARRY_MAX" ]; then
		echo "collect: refused: over $((CARRY_MAX >> 20)) MiB, too near the device tool's 64 MiB limit; $dest removed" >&2
		rm -rf "$dest"
		return 1
	fi
}
if [ "${1:-}" = --collect ]; then
	collect
	exit
fi

OUTDIR=${OUT:-$BUILD/gpu-out}
mkdir -p "$OUTDIR" || exit 1
REPORT=$OUTDIR/gpu-report.txt LOG=$OUTDIR/gpu-log.txt
: >"$REPORT"
: >"$LOG"
say() {
	echo "$*"
	echo "$*" >>"$REPORT"
	echo "$*" >>"$LOG"
}
# logged TITLE TEXT: TEXT, whole, into the log under TITLE
logged() {
	printf '\n----- %s\n%s\n----- end of %s\n' "$1" "$2" "$1" >>"$LOG"
}
fail=0
failed() {
	say "FAILED: $*"
	fail=1
}

# a bundle from --collect: unpacked into GPU_RUN_DIR, by tar, else Python's
# tarfile
if [ -f "$BUILD/bundle.tar.xz" ] && [ ! -x "$BUILD/aah-trial" ]; then
	run=$GPU_RUN_DIR
	rm -rf "$run" && mkdir -p "$run" || exit 1
	tar -C "$run" -xJf "$BUILD/bundle.tar.xz" 2>/dev/null ||
		python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="tar")' \
			"$BUILD/bundle.tar.xz" "$run" || { failed "cannot unpack $BUILD/bundle.tar.xz"; exit 1; }
	say "unpacked $BUILD/bundle.tar.xz into $run"
	BUILD=$run
fi

export AAH_REQUIRE_CUDA=1
BATCH=${GPU_BATCH:-256} STEPS=${GPU_STEPS:-20} WARMUP=${GPU_WARMUP:-5}
PRECISION=${GPU_PRECISION:-bf16}
R50=$BUILD/resnet50.json
GPU_ARCHS=${GPU_ARCHS:-"tests/fixtures/arch/cnn2.json tests/fixtures/arch/resnet_small.json"}
PY=${PYTHON:-python3}
DATA=$BUILD/fashion-mnist
[ -d "$DATA" ] || DATA=/usr/share/datasets/fashion-mnist

# set for aah's binaries alone, not for PyTorch or compute-sanitizer
AAH_ENV=(env "LD_LIBRARY_PATH=$(gpu_lib_path "$BUILD" "$PY")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")

BUDGET=${GPU_BUDGET_S:-300} OPTIONAL=${GPU_OPTIONAL_S:-90}
t_start=$SECONDS
left() { echo $((BUDGET - (SECONDS - t_start))); }
# in_time NEED WHAT: NEED seconds left for WHAT? Says so when not.
in_time() {
	if [ "$(left)" -lt "$1" ]; then
		say "$2: skipped: out of time ($(left) s left of its budget, it needs about $1)"
		return 1
	fi
}
# capped CAP CMD...: CMD under timeout, at most CAP s and what is left, never below 1 s
capped() {
	local t
	t=$(left)
	[ "$t" -gt "$1" ] && t=$1
	[ "$t" -lt 1 ] && t=1
	shift
	timeout -k 5 "$t" "$@"
}
stamp() { echo "[$((SECONDS - t_start)) s]"; }

# ---- 0. preflight ----------------------------------------------------------------
say "== 0. preflight"
say "ldd: $(ldd --version 2>&1 | sed -n 1p)"
if ! gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1) ||
	[ -z "$gpu" ]; then
	failed "device: none: nvidia-smi lists no GPU here (${gpu:-no output}); every part below runs and fails"
	gpu_name=none
else
	say "device: $gpu"
	gpu_name=${gpu%%,*}
fi
missing=0
for b in "${BINS[@]/#/$BUILD/}"; do
	if [ ! -x "$b" ]; then
		failed "$b is missing (make all unit bench-bins; --collect)"
		missing=1
		continue
	fi
	# the whole of ldd's output first, then the search: no pipe to close early
	out=$("${AAH_ENV[@]}" ldd "$b" 2>&1)
	if [[ $out == *"not found"* ]]; then
		failed "$b lacks libraries: $(awk '/not found/ { printf "%s ", $1 }' <<<"$out")"
		missing=1
	fi
	if [ "$b" = "$BUILD/aah-trial" ]; then
		say "aah-trial resolves:"
		say "$(awk '/libcudnn|libcublasLt|libcublas\.|libnccl|libcudart|libdnnl/ { print "  " $1 " => " $3 }' <<<"$out")"
		cudnn=$(awk '/libcudnn\.so/ { print $3 }' <<<"$out")
		if [ -f "$cudnn" ]; then
			n=$(compgen -G "$(dirname "$cudnn")/libcudnn_*.so.*" | wc -l)
			say "  cuDNN's own libraries beside it (loaded at run time): $n"
		fi
	fi
done
if [ "$missing" -ne 0 ]; then
	say "run-on-device: stopped: a binary or library is missing (above)"
	exit 1
fi

# run_test NAME CAP: one Criterion binary; its whole output into the log,
# the counts and every failing assertion into the report
run_test() {
	local t=$1 out rc
	out=$(capped "$2" "${AAH_ENV[@]}" "$BUILD/tests/unit/$t" --tap=/dev/stdout --jobs 1 2>&1)
	rc=$?
	logged "$t (exit $rc)" "$out"
	say "$t: exit $rc$([ "$rc" -ge 124 ] && echo " (timed out after its cap of $2 s)"), $(grep -c '^ok' <<<"$out") ok," \
		"$(grep -c '^not ok' <<<"$out") not ok, $(grep -c '# SKIP' <<<"$out") skipped," \
		"$(grep -c 'Assertion failed: AAH_REQUIRE_CUDA=1: skipped: no CUDA device' <<<"$out") for want of a device $(stamp)"
	# Criterion's TAP: a failure's assertions follow its 'not ok' line, to '...'
	say "$(awk '/^not ok/ { p = 1 } p { print "  " $0 } /^  \.\.\.$/ { p = 0 }' <<<"$out" | head -n 80)"
	grep '# SKIP' <<<"$out" | head -n 10 | sed 's/^/  /' >>"$REPORT"
	if [ "$rc" -ne 0 ]; then fail=1; fi
}

# ---- 1. op tests, one CUDA context held open --------------------------------------
say "== 1. op tests against ref $(stamp)"
holder=
if [ "$gpu_name" != none ]; then
	"$PY" -c 'import time, torch; torch.zeros(1, device="cuda"); torch.cuda.synchronize(); print("held", flush=True); time.sleep(600)' \
		>"$OUTDIR/.holder" 2>&1 &
	holder=$!
	# importing torch and starting CUDA can take seconds: up to 20 s, then on without it
	for _ in $(seq 1 100); do
		grep -q held "$OUTDIR/.holder" 2>/dev/null && break
		kill -0 "$holder" 2>/dev/null || break
		sleep 0.2
	done
	if grep -q held "$OUTDIR/.holder"; then
		say "a CUDA context is held open by PyTorch (pid $holder) while the tests run $(stamp)"
	else
		say "no CUDA context held yet (PyTorch: $(tail -n 1 "$OUTDIR/.holder")): the first tests start the device alone $(stamp)"
	fi
fi
declare -A cap=([test_kernels_ref]=120 [test_kernels_cast]=30 [test_precision]=30
	[test_kernels_refnet]=30 [test_monitor_sampling]=30 [test_kernels_train_gpu]=60)
for t in "${OP_TESTS[@]}"; do
	if in_time 20 "$t"; then run_test "$t" "${cap[$t]}"; else fail=1; fi
done

# ---- 2. training test ------------------------------------------------------------
say "== 2. training test (resident and staged) $(stamp)"
if in_time 20 test_kernels_train_gpu; then run_test test_kernels_train_gpu 60; else fail=1; fi
if [ -n "$holder" ]; then
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
fi
rm -f "$OUTDIR/.holder"

# ---- 3. ResNet-50: aah beside PyTorch AMP ----------------------------------------
case "$gpu_name" in   # dense bf16 tensor-core peak, TFLOPS
*H100*PCIe*) peak=756 ;;
*H100* | *H200* | *H800*) peak=989.4 ;;
*A100*) peak=312 ;;
*) peak= ;;
esac
peak=${GPU_PEAK_TFLOPS:-$peak}
num() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }

# bench_side aah|torch ARCH BATCH CAP [ARG...]: images/s in $ips, else 1
bench_side() {
	local side=$1 f=$2 b=$3 c=$4 out rc
	shift 4
	if [ "$side" = aah ]; then
		out=$(capped "$c" "${AAH_ENV[@]}" AAH_BACKEND=cuda AAH_PRECISION="$PRECISION" AAH_BENCH_FLOPS=1 \
			"$BUILD/bench/bench_train" "$f" "$b" 1 "$STEPS" "$WARMUP" 2>&1)
	else
		out=$(capped "$c" "$PY" tests/bench/bench_train_torch.py --arch "$f" --device cuda --batch "$b" \
			--steps "$STEPS" --warmup "$WARMUP" --precision "$PRECISION" "$@" 2>&1)
	fi
	rc=$?
	logged "$side $(basename "$f") batch $b $* (exit $rc)" "$out"
	ips=$(tail -n 1 <<<"$out")
	if [ "$side" = aah ]; then
		flops=$(sed -n 's/^train_flops_per_image //p' <<<"$out")
		mem=$(sed -n 's/^device_memory_used //p' <<<"$out")   # "USED plan PLANNED", bytes
	fi
	if [ "$rc" -ne 0 ] || ! num "$ips"; then
		say "  $side $(basename "$f") batch $b: failed (exit $rc): $(grep -v '^\s*$' <<<"$out" | tail -n 3 | tr '\n' ' ')"
		return 1
	fi
}
# bench_row ARCH CAP [--compile]: one line, aah and PyTorch on ARCH; a
# failing side is tried once more at half the batch, then fails the run
bench_row() {
	local f=$1 c=$2 b=$BATCH aah torch mfu
	shift 2
	for try in 1 2; do
		if bench_side aah "$f" "$b" "$c"; then
			aah=$ips
			if bench_side torch "$f" "$b" "$c" "$@"; then
				torch=$ips
				mfu=$(awk -v a="$aah" -v t="$torch" -v f="${flops:-0}" -v p="${peak:-0}" 'BEGIN {
					m = p > 0 && f > 0
					printf "%.2fx %s %s", a / t, m ? sprintf("%.1f%%", 100 * f * a / (p * 1e12)) : "?",
						m ? sprintf("%.1f%%", 100 * f * t / (p * 1e12)) : "?" }')
				# shellcheck disable=SC2086 # mfu is three cells
				say "$(printf '%-40s %6s %12s %12s %7s %8s %8s' "$(basename "$f")${1:+ $1}" "$b" "$aah" "$torch" $mfu) $(stamp)"
				# shellcheck disable=SC2086 # mem is two numbers around "plan"
				[ -n "${mem:-}" ] && say "$(awk '{ printf "  aah took %.2f GiB of the device (free before its model, less free after its steps); its memory plan says %.2f GiB", $1 / 2^30, $3 / 2^30 }' <<<"$mem")"
				return 0
			fi
		fi
		[ "$try" = 1 ] && say "  $(basename "$f"): retrying once at batch $((b / 2))" && b=$((b / 2))
		[ "$b" -ge 1 ] || break
	done
	failed "$(basename "$f")${1:+ $1}: the benchmark failed at batch $BATCH and $((BATCH / 2)) (log: gpu-log.txt)"
}
say "== 3. ResNet-50 training images/s and MFU: aah beside PyTorch AMP (channels_last) $(stamp)"
say "precision $PRECISION; MFU over ${peak:-an unknown} TFLOPS (dense bf16 peak of $gpu_name)"
say "$(printf '%-40s %6s %12s %12s %7s %8s %8s' arch batch aah_img/s torch_img/s ratio aah_mfu torch_mfu)"
if [ ! -f "$R50" ]; then
	failed "resnet50: $R50 is missing (tests/gpu/resnet50-arch.sh, run by --collect)"
elif in_time 60 "ResNet-50"; then
	bench_row "$R50" 90
else
	fail=1
fi

# ---- 4. aah-trial --backend auto on the GPU --------------------------------------
say "== 4. aah-trial --backend auto on Fashion-MNIST ($DATA) $(stamp)"
if in_time 20 "aah-trial --backend auto"; then
	tdir=$(mktemp -d)
	out=$(capped 60 "${AAH_ENV[@]}" "$BUILD/aah-trial" --backend auto --dataset "$DATA" --trial_dir "$tdir" \
		--warmup_1 1 --max_epochs 1 --train_samples 2048 --val_samples 512 --monitor_interval 1 2>&1)
	rc=$?
	logged "aah-trial --backend auto (exit $rc)" "$out$(printf '\n----- trial.log\n')$(cat "$tdir/trial.log" 2>/dev/null)"
	line=$(grep -m1 '^aah-trial: rank 0 of 1: backend' <<<"$out$(cat "$tdir/trial.log" 2>/dev/null)")
	say "aah-trial: exit $rc: ${line:-no backend line}"
	if [ -f "$tdir/result.json" ]; then
		cp "$tdir/result.json" "$OUTDIR/trial-result.json"
		say "result.json: $(tr -d '\n' <"$tdir/result.json" | head -c 600)"
	else
		failed "aah-trial wrote no result.json"
	fi
	case $line in
	*"backend cuda (auto: "*"device cuda:0 "*) [ "$rc" -eq 0 ] || failed "aah-trial exited $rc" ;;
	*) failed "aah-trial --backend auto did not train on cuda" ;;
	esac
	rm -rf "$tdir"
else
	fail=1
fi
say "must-have parts done in $((SECONDS - t_start)) s of ${BUDGET} s"

# ---- 5. optional ------------------------------------------------------------------
say "== 5. optional, ${OPTIONAL} s $(stamp)"
BUDGET=$((SECONDS - t_start + OPTIONAL))
# ResNet-50 at AIPerf's batch (14 images per GiB of the GPU), capped by the
# memory plan to what the GPU has free, as --batch_rule aiperf trains it
# (issue 38): GPU_RULE=0 leaves it out
if [ "${GPU_RULE:-1}" != 0 ] && [ -f "$R50" ] && [ "$gpu_name" != none ] && in_time 60 "ResNet-50 at the rule's batch"; then
	total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | sed -n 1p)
	free_mib=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | sed -n 1p)
	asked=$((14 * ((total_mib + 512) / 1024)))
	plan=$("${AAH_ENV[@]}" "$BUILD/aah-trial" --plan --backend cuda --arch "$R50" --precision "$PRECISION" \
		--batch_size "$asked" --memory_limit "$free_mib" 2>&1)
	logged "aah-trial --plan at the rule's batch $asked, $free_mib MiB free" "$plan"
	rule=$(sed -n 's/^largest batch in --memory_limit [0-9]* MiB: //p' <<<"$plan")
	say "AIPerf's rule: 14 x $(((total_mib + 512) / 1024)) GiB = $asked; the plan fits ${rule:-?} in $free_mib MiB free"
	if num "${rule:-}" && [ "$rule" -gt 0 ]; then
		BATCH=$rule STEPS=5 WARMUP=2 bench_row "$R50" 60
	fi
fi
if [ "${GPU_SANITIZE:-1}" = 0 ]; then
	say "compute-sanitizer: not asked for (GPU_SANITIZE=0)"
elif ! command -v compute-sanitizer >/dev/null; then
	say "compute-sanitizer: not installed here"
else
	for t in test_kernels_cast test_kernels_ref; do
		for tool in memcheck racecheck; do
			in_time 15 "compute-sanitizer $tool on $t" || continue
			# into a file, not a pipe: a test process the sanitizer leaves
			# behind at the cap would hold a pipe open, and the script with
			# it (seen on an H200); it is killed by name afterwards
			capped 30 compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 99 \
				"${AAH_ENV[@]}" "$BUILD/tests/unit/$t" --jobs 1 >"$OUTDIR/.sanitizer" 2>&1
			rc=$?
			pkill -KILL -f "$BUILD/tests/unit/$t" 2>/dev/null
			out=$(cat "$OUTDIR/.sanitizer")
			rm -f "$OUTDIR/.sanitizer"
			logged "compute-sanitizer $tool on $t (exit $rc)" "$out"
			say "compute-sanitizer $tool on $t: exit $rc$([ "$rc" -ge 124 ] && echo ' (stopped at its cap: partial)');" \
				"$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | sort | uniq -c | tr -s ' ' | head -n 3)"
			if [ "$rc" -ne 0 ] && [ "$rc" -lt 124 ]; then fail=1; fi
		done
	done
fi
for f in $GPU_ARCHS; do
	in_time 30 "$(basename "$f")" && bench_row "$f" 30
done
if [ -f "$R50" ] && in_time 60 "ResNet-50, PyTorch torch.compile"; then
	bench_row "$R50" 60 --compile
fi
say "done in $((SECONDS - t_start)) s: exit $fail"
exit $fail
