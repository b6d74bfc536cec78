#!/usr/bin/env bash
# lease.sh: everything the cuda backend needs a GPU for, in one prepared
# run of a device lease (docs/cuda.md, "On a GPU"): about 15 minutes of
# device time a session, start-up included, so one run of at most
# LEASE_BUDGET_S (330 s) with the device call's timeout_s 450, leaving room
# for a second call.
#
#   here:   make -j2 all unit bench-bins && tests/gpu/lease.sh --collect
#           (build-gpu/: the binaries, stripped, the libraries they need
#           beside CUDA's, the kernel families' objects and ptxas reports,
#           resnet50.json, a Fashion-MNIST subset and cuDNN's header
#           version; packed as bundle.tar.xz where that is smaller)
#   there:  AAH_BUILD=build-gpu tests/gpu/lease.sh   (carry: build-gpu)
#
# Parts, in the order they run (each says its result as soon as it has it):
#  0. preflight: the GPU, its driver, cuDNN's run-time version beside the
#     headers aah was built with, where the binaries' libraries resolve;
#     a missing library stops the run;
#  1. the families' SASS (tests/gpu/check-code.py sass: 128-bit loads, no
#     f64 sqrt or division over values, no stack frame);
#  2. the op tests against kernels/ref and the training test, 16 at a time;
#  3. the variant matrix: ResNet-50 (AIPerf's start graph) at batch 256,
#     bf16, WARMUP + STEPS steps of bench_train a variant, one line each:
#     variant img/s ms/step x_torch mfu launches own syncs h2d_MB graph_nodes conv1
#     for the kernel families with the batch staged by the first
#     convolution, + the batch on the device, + cudnnFind, + the CUDA
#     graph, the graph with the sums loading one row a thread at a time
#     (AAH_CUDA_AHEAD=0), with the shortcuts' gradients accumulated
#     (AAH_CUDA_ADD_DX=0), without the parameters' 16-bit twin
#     (AAH_CUDA_TWIN=0) and without it, the one-launch sums, the rows
#     ahead and the added gradients (AAH_CUDA_SUMS=apart AAH_CUDA_AHEAD=0
#     AAH_CUDA_ADD_DX=0: the code of the 2026-11-28 leases), and the
#     batch pinned (the trainer's own way in; the first
#     kernels were measured beside these on 2026-11-28, docs/cuda.md, and
#     left); PyTorch AMP once before them (autocast, channels_last, its
#     batch on the device);
#  4. aah-trial --backend auto on the Fashion-MNIST subset with the ledger
#     (AAH_CUDA_LEDGER=1): it must pick cuda and write result.json;
#  5. Nsight Compute on one eager step of the best variant: the top 12
#     kernels as ms, calls, GB (DRAM read + written) and GB/s;
#  6. fp16 under its dynamic loss scale beside bf16, 50 steps each: the
#     loss after them;
#  7. ResNet-50 at AIPerf's batch (14 x the GPU's GiB) as the memory plan
#     caps it: the device memory the steps took beside the plan;
#  8. compute-sanitizer memcheck and racecheck on a small training run of
#     the families' kernels.
#
# AAH_REQUIRE_CUDA=1 is exported: a cuda case that would be "skipped: no
# CUDA device" fails. LD_LIBRARY_PATH is set for aah's binaries only. A
# part that would start past the budget says "skipped: out of time". What
# each part prints goes to $OUT/lease-log.txt, the summary (failing
# assertions too) to $OUT/lease-report.txt and stdout, the variant matrix
# to $OUT/lease-matrix.txt, as the run goes: a timeout keeps what finished.
# Without a GPU (here) the same script is its dry run: every part fails
# for want of a device, in under a minute (tests/cli/gpu_check.bats).
# LEASE_PARTS="7 8" runs those parts alone (and the preflight), for a
# second call that measures what the first ran out of time for.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/gpu-env.sh   # GPU_BINS, gpu_collect, gpu_unpack, gpu_lib_path
BUILD=${AAH_BUILD:-build}

if [ "${1:-}" = --collect ]; then
	# the bundle's folder is emptied first: collecting from it would delete
	# the build it is made of
	if [ "$(realpath -m "$BUILD")" = "$(realpath -m build-gpu)" ]; then
		echo "lease.sh --collect: AAH_BUILD=$BUILD is build-gpu, the folder --collect empties" \
			"and fills; build into another (make -j2 all unit bench-bins: build) and collect" \
			"from there" >&2
		exit 2
	fi
	gpu_collect "$BUILD" build-gpu
	exit
fi

OUTDIR=${OUT:-$BUILD/gpu-out}
mkdir -p "$OUTDIR" || exit 1
REPORT=$OUTDIR/lease-report.txt LOG=$OUTDIR/lease-log.txt MATRIX=$OUTDIR/lease-matrix.txt
: >"$REPORT"
: >"$LOG"
: >"$MATRIX"
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

BUILD=$(gpu_unpack "$BUILD") || { failed "cannot unpack $BUILD/bundle.tar.xz"; exit 1; }
export AAH_REQUIRE_CUDA=1
BATCH=${GPU_BATCH:-256} STEPS=${GPU_STEPS:-20} WARMUP=${GPU_WARMUP:-5}
R50=$BUILD/resnet50.json
PY=${PYTHON:-python3}
DATA=$BUILD/fashion-mnist
[ -d "$DATA" ] || DATA=/usr/share/datasets/fashion-mnist
AAH_ENV=(env "LD_LIBRARY_PATH=$(gpu_lib_path "$BUILD" "$PY")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
BUDGET=${LEASE_BUDGET_S:-330}
t_start=$SECONDS
left() { echo $((BUDGET - (SECONDS - t_start))); }
in_time() {
	if [ "$(left)" -lt "$1" ]; then
		say "$2: skipped: out of time ($(left) s left of $BUDGET, it needs about $1)"
		return 1
	fi
}
# want N: part N runs (LEASE_PARTS, "3 7" say, picks parts; all by default)
want() { [ -z "${LEASE_PARTS:-}" ] || [[ " $LEASE_PARTS " == *" $1 "* ]]; }
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

# ---- 0. preflight ------------------------------------------------------------------
say "== 0. preflight"
if ! gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1) ||
	[ -z "$gpu" ]; then
	failed "device: none: nvidia-smi lists no GPU here (${gpu:-no output}); every part below runs and fails"
	gpu_name=none
else
	say "device: $gpu"
	gpu_name=${gpu%%,*}
fi
missing=0
for b in "${GPU_BINS[@]/#/$BUILD/}"; do
	if [ ! -x "$b" ]; then
		failed "$b is missing (make all unit bench-bins; lease.sh --collect)"
		missing=1
		continue
	fi
	out=$("${AAH_ENV[@]}" ldd "$b" 2>&1)
	if [[ $out == *"not found"* ]]; then
		failed "$b lacks libraries: $(awk '/not found/ { printf "%s ", $1 }' <<<"$out")"
		missing=1
	fi
	if [ "$b" = "$BUILD/aah-trial" ]; then
		say "aah-trial resolves: $(awk '/libcudnn\.|libcublasLt|libnccl|libcudart/ { printf "%s ", $3 }' <<<"$out")"
		# cuBLASLt is loaded when the backend opens (dlopen), not linked:
		# the name the binary asks for, searched as dlopen searches it
		# (the library path, then the binary's rpath: CUDA's lib64)
		lt=$(grep -a -o -m1 'libcublasLt\.so\.[0-9]*' "$b" | head -1)
		lt_v=$("${AAH_ENV[@]}" "$PY" - "${lt:-libcublasLt.so}" "${CUDA_HOME:-/usr/local/cuda}/lib64" 2>&1 <<'PY'
import ctypes, os, sys
for f in [sys.argv[1]] + [os.path.join(d, sys.argv[1]) for d in sys.argv[2:]]:
    try:
        print(ctypes.CDLL(f).cublasLtGetVersion(), f)
        break
    except OSError as e:
        why = e
else:
    print(why)
PY
)
		if [[ $lt_v =~ ^[0-9]+\  ]]; then
			say "cuBLASLt: version ${lt_v%% *} from ${lt_v#* }"
		else
			failed "aah-trial cannot load ${lt:-libcublasLt}: $lt_v"
			missing=1
		fi
		cudnn=$(awk '/libcudnn\.so/ { print $3 }' <<<"$out")
		if [ -f "$cudnn" ]; then
			run_v=$("$PY" -c 'import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).cudnnGetVersion())' "$cudnn" 2>&1)
			say "cuDNN: run time $run_v, headers $(cat "$BUILD/cudnn-header-version" 2>/dev/null || echo '?')"
		fi
	fi
done
if [ "$missing" -ne 0 ]; then
	say "lease: stopped: a binary or library is missing (above)"
	exit 1
fi

# ---- 1. the families' code -----------------------------------------------------------
if want 1; then
say "== 1. the kernel families' SASS $(stamp)"
if command -v cuobjdump >/dev/null && [ -d "$BUILD/obj/kernels/cuda" ]; then
	out=$(capped 30 /usr/bin/env python3 tests/gpu/check-code.py sass "$BUILD" 2>&1)
	rc=$?
	logged "check-code sass (exit $rc)" "$out"
	say "$(tail -n 1 <<<"$out")"
	grep '^FAILED' <<<"$out" | head -n 20 | sed 's/^/  /' >>"$REPORT"
	[ "$rc" -eq 0 ] || fail=1
else
	failed "check-code: no cuobjdump here, or no objects in $BUILD/obj/kernels/cuda"
fi
fi

# ---- 2. op tests and the training test ------------------------------------------------
if want 2; then
say "== 2. op tests against kernels/ref, and the training test $(stamp)"
run_test() {   # NAME CAP: one Criterion binary, 16 cases at a time
	local t=$1 out rc
	out=$(capped "$2" "${AAH_ENV[@]}" "$BUILD/tests/unit/$t" --tap=/dev/stdout --jobs 16 2>&1)
	rc=$?
	logged "$t (exit $rc)" "$out"
	say "$t: exit $rc$([ "$rc" -ge 124 ] && echo " (stopped at its cap of $2 s)"), $(grep -c '^ok' <<<"$out") ok," \
		"$(grep -c '^not ok' <<<"$out") not ok, $(grep -c '# SKIP' <<<"$out") skipped," \
		"$(grep -c 'AAH_REQUIRE_CUDA=1: skipped: no CUDA device' <<<"$out") for want of a device $(stamp)"
	say "$(awk '/^not ok/ { p = 1 } p { print "  " $0 } /^  \.\.\.$/ { p = 0 }' <<<"$out" | head -n 60)"
	[ "$rc" -eq 0 ] || fail=1
}
for t in test_kernels_ref:90 test_kernels_cast:30 test_precision:20 test_kernels_refnet:20 \
	test_monitor_sampling:20 test_kernels_train_gpu:40; do
	in_time 15 "${t%%:*}" && run_test "${t%%:*}" "${t##*:}" || fail=1
done
fi

# ---- 3. the variant matrix ---------------------------------------------------------
case "$gpu_name" in   # dense bf16 tensor-core peak, TFLOPS
*H100*PCIe*) peak=756 ;;
*H100* | *H200* | *H800*) peak=989.4 ;;
*A100*) peak=312 ;;
*) peak= ;;
esac
peak=${GPU_PEAK_TFLOPS:-$peak}
num() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }
export AAH_CUDA_ALGO_CACHE=$OUTDIR/cudnn-algos
torch_ips=
# bench NAME CAP ENV... -- ARGS...: one bench_train run; its figures in
# ips, and the bench line's fields in B[...]
declare -A B
bench() {
	local name=$1 cap=$2 envs=() out rc
	shift 2
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	out=$(capped "$cap" "${AAH_ENV[@]}" AAH_BACKEND=cuda AAH_BENCH_FLOPS=1 "${envs[@]}" \
		"$BUILD/bench/bench_train" "$@" 2>&1)
	rc=$?
	BENCH_OUT=$out   # the last bench's whole output, for a part that reads more of it
	logged "bench $name: ${envs[*]} $* (exit $rc)" "$out"
	ips=$(tail -n 1 <<<"$out")
	B=()
	local line
	line=$(grep '^bench launches' <<<"$out" | tail -n 1)
	set -- $line
	shift
	while [ $# -ge 2 ]; do B[$1]=$2; shift 2; done
	B[flops]=$(sed -n 's/^train_flops_per_image //p' <<<"$out")
	B[mem]=$(sed -n 's/^device_memory_used //p' <<<"$out")
	if [ "$rc" -ne 0 ] || ! num "$ips"; then
		failed "$name: bench_train failed (exit $rc): $(grep -v '^\s*$' <<<"$out" | tail -n 2 | tr '\n' ' ')"
		return 1
	fi
}
row() {   # NAME: the matrix's line for the last bench
	local r
	r=$(awk -v n="$1" -v ips="$ips" -v b="$BATCH" -v t="${torch_ips:-0}" -v f="${B[flops]:-0}" \
		-v p="${peak:-0}" -v l="${B[launches]:-?}" -v o="${B[own]:-?}" -v s="${B[syncs]:-?}" \
		-v h="${B[h2d_bytes]:-0}" -v g="${B[graph_nodes]:-0}" -v c="${B[conv1]:-?}" 'BEGIN {
		x = t > 0 ? sprintf("%.2fx", ips / t) : "?"
		u = p > 0 && f > 0 ? sprintf("%.1f%%", 100 * f * ips / (p * 1e12)) : "?"
		printf "%-16s %8.1f %8.2f %7s %6s %8s %5s %5s %8.1f %11s conv1=%s", n, ips, 1000 * b / ips,
			x, u, l, o, s, h / 1e6, g, c }')
	say "$r $(stamp)"
	echo "$r" >>"$MATRIX"
}
if want 3; then
say "== 3. ResNet-50, batch $BATCH, bf16: the variants beside PyTorch AMP $(stamp)"
header=$(printf '%-16s %8s %8s %7s %6s %8s %5s %5s %8s %11s %s' variant img/s ms/step x_torch mfu launches own syncs h2d_MB graph_nodes conv1)
say "$header"
echo "$header" >>"$MATRIX"
if [ ! -f "$R50" ]; then
	failed "resnet50: $R50 is missing (tests/gpu/resnet50-arch.sh, run by --collect)"
else
	if in_time 40 "PyTorch AMP"; then
		out=$(capped 60 "$PY" tests/bench/bench_train_torch.py --arch "$R50" --device cuda --batch "$BATCH" \
			--steps "$STEPS" --warmup "$WARMUP" --precision bf16 2>&1)
		rc=$?
		logged "PyTorch AMP (exit $rc)" "$out"
		torch_ips=$(tail -n 1 <<<"$out")
		if [ "$rc" -eq 0 ] && num "$torch_ips"; then
			r=$(printf '%-16s %8.1f %8.2f %7s' "pytorch-amp" "$torch_ips" \
				"$(awk -v i="$torch_ips" -v b="$BATCH" 'BEGIN { print 1000 * b / i }')" 1.00x)
			say "$r"
			echo "$r" >>"$MATRIX"
		else
			failed "PyTorch AMP failed (exit $rc): $(tail -n 2 <<<"$out" | tr '\n' ' ')"
			torch_ips=
		fi
	fi
	common=(AAH_PRECISION=bf16)
	V=("families      AAH_CUDA_FIND=0 AAH_CUDA_GRAPH=0 pageable"
		"+device-input AAH_CUDA_FIND=0 AAH_CUDA_GRAPH=0 device"
		"+find         AAH_CUDA_GRAPH=0 device"
		"+graph        AAH_CUDA_GRAPH=1 device"
		"graph-1-row   AAH_CUDA_GRAPH=1 AAH_CUDA_AHEAD=0 device"
		"graph-accum   AAH_CUDA_GRAPH=1 AAH_CUDA_ADD_DX=0 device"
		"graph-no-twin AAH_CUDA_GRAPH=1 AAH_CUDA_TWIN=0 device"
		"graph-2-sums  AAH_CUDA_GRAPH=1 AAH_CUDA_TWIN=0 AAH_CUDA_SUMS=apart AAH_CUDA_AHEAD=0 AAH_CUDA_ADD_DX=0 device"
		"pinned        AAH_CUDA_GRAPH=1 pinned")
	best= best_ips=0
	for v in "${V[@]}"; do
		read -r name rest <<<"$v"
		read -ra parts <<<"$rest"
		input=${parts[-1]}
		unset 'parts[-1]'
		in_time 25 "$name" || { fail=1; continue; }
		if bench "$name" 60 "${common[@]}" "${parts[@]}" -- "$R50" "$BATCH" 1 "$STEPS" "$WARMUP" \
			--input "$input"; then
			row "$name"
			if awk -v a="$ips" -v b="$best_ips" 'BEGIN { exit !(a > b) }'; then
				best=$name best_ips=$ips
			fi
			if [ "$name" = "+graph" ]; then
				# the graph holds each of the backend's own launches the ledger counted
				[ "${B[graph_nodes]:-0}" = 0 ] && failed "+graph: no graph was captured (lease-log.txt says why)"
				[ "${B[graph_own]:-x}" = "${B[own]:-y}" ] ||
					failed "+graph: the graph runs ${B[graph_own]:-?} of the backend's kernels, the ledger counted ${B[own]:-?}"
			fi
		fi
	done
	[ -n "$best" ] && say "fastest: $best ($best_ips img/s)"
fi
fi

# ---- 4. aah-trial --backend auto ---------------------------------------------------
if want 4; then
say "== 4. aah-trial --backend auto on Fashion-MNIST ($DATA) $(stamp)"
if in_time 20 "aah-trial --backend auto"; then
	tdir=$(mktemp -d)
	out=$(capped 45 "${AAH_ENV[@]}" AAH_CUDA_LEDGER=1 "$BUILD/aah-trial" --backend auto --dataset "$DATA" \
		--trial_dir "$tdir" --warmup_1 1 --max_epochs 1 --train_samples 2048 --val_samples 512 \
		--monitor_interval 1 2>&1)
	rc=$?
	log=$(cat "$tdir/trial.log" 2>/dev/null)
	logged "aah-trial --backend auto (exit $rc)" "$out$(printf '\n----- trial.log\n')$log"
	line=$(grep -m1 '^aah-trial: rank 0 of 1: backend' <<<"$out$log")
	say "aah-trial: exit $rc: ${line:-no backend line}"
	say "$(grep -E 'ledger of|launches|one by one' <<<"$out$log" | head -n 4)"
	if [ -f "$tdir/result.json" ]; then
		cp "$tdir/result.json" "$OUTDIR/trial-result.json"
		say "result.json: $(tr -d '\n' <"$tdir/result.json" | head -c 400)"
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
fi

# ---- 5. where the step's time goes -------------------------------------------------
if want 5; then
say "== 5. Nsight Compute: one eager step, the top 12 kernels $(stamp)"
ncu=$(command -v ncu || compgen -G '/opt/nvidia/nsight-compute/*/ncu' | tail -n 1)
if [ -z "$ncu" ]; then
	failed "ncu: not installed here"
elif [ -f "$R50" ] && in_time 60 "Nsight Compute"; then
	capped 75 "$ncu" --clock-control none --csv --print-units base \
		--metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
		--log-file "$OUTDIR/ncu-step.csv" "${AAH_ENV[@]}" AAH_BACKEND=cuda AAH_PRECISION=bf16 \
		AAH_CUDA_GRAPH=0 "$BUILD/bench/bench_train" "$R50" "$BATCH" 1 1 1 --input device \
		>"$OUTDIR/.ncu.out" 2>&1
	rc=$?
	logged "ncu (exit $rc)" "$(tail -n 20 "$OUTDIR/.ncu.out")"
	rm -f "$OUTDIR/.ncu.out"
	say "$(/usr/bin/env python3 tests/gpu/ncu-top.py "$OUTDIR/ncu-step.csv" 12 2>&1)"
fi
fi

# ---- 6. fp16 beside bf16 -------------------------------------------------------------
if want 6; then
say "== 6. fp16 (dynamic loss scale) beside bf16: the loss after 50 steps $(stamp)"
for prec in bf16 fp16; do
	in_time 20 "$prec 50 steps" || { fail=1; continue; }
	if bench "$prec-50" 40 AAH_PRECISION=$prec AAH_CUDA_GRAPH=1 -- "$R50" "$BATCH" 1 45 5 --input device; then
		say "$(printf '%-5s loss after 50 steps %s, %s img/s, conv1=%s, graph nodes %s' "$prec" \
			"${B[loss]:-?}" "$ips" "${B[conv1]:-?}" "${B[graph_nodes]:-0}")"
	fi
done
fi

# ---- 7. AIPerf's batch, as the plan caps it -----------------------------------------------
if want 7; then
say "== 7. ResNet-50 at AIPerf's batch: device memory beside the plan $(stamp)"
if [ "$gpu_name" = none ]; then
	failed "AIPerf's batch: no GPU to size it by"
elif in_time 30 "AIPerf's batch"; then
	total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | sed -n 1p)
	free_mib=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | sed -n 1p)
	asked=$((14 * ((total_mib + 512) / 1024)))
	plan=$("${AAH_ENV[@]}" "$BUILD/aah-trial" --plan --backend cuda --arch "$R50" --precision bf16 \
		--batch_size "$asked" --memory_limit "$free_mib" 2>&1)
	logged "aah-trial --plan at $asked, $free_mib MiB free" "$plan"
	fits=$(sed -n 's/^largest batch in --memory_limit [0-9]* MiB: //p' <<<"$plan")
	say "AIPerf's rule: 14 x $(((total_mib + 512) / 1024)) GiB = $asked; the plan fits ${fits:-?} in $free_mib MiB free"
	rule=$fits
	num "${fits:-}" && [ "$fits" -gt "$asked" ] && rule=$asked   # the rule's batch, where it fits
	# the heuristics' algorithms: measuring them anew at this batch takes
	# longer than the part has
	if num "${rule:-}" && [ "$rule" -gt 0 ] &&
		bench "aiperf-batch" 45 AAH_PRECISION=bf16 AAH_CUDA_FIND=0 AAH_CUDA_ALGO_LOG=1 -- "$R50" "$rule" 1 3 2 \
			--input pinned; then
		say "$(awk -v i="$ips" -v r="$rule" '{ printf "batch %d: %s img/s; the steps took %.2f GiB of the device, the plan says %.2f GiB", r, i, $1 / 2^30, $3 / 2^30 }' <<<"${B[mem]}")"
		# 2026-11-28: 528.8 img/s at 1960 against 6190 at 256 (heuristics
		# both): are the heuristics' first algorithms past CONV_WS_MAX there?
		say "cuDNN's heuristics at batch $rule: $(grep -c '; [1-9][0-9]* listed before it' <<<"$BENCH_OUT") of $(grep -c '^cuda conv layer' <<<"$BENCH_OUT") passes passed over a first choice for its workspace (the picks: lease-log.txt)"
	fi
fi
fi

# ---- 8. compute-sanitizer ------------------------------------------------------------
if want 8; then
say "== 8. compute-sanitizer on a small training run $(stamp)"
if ! command -v compute-sanitizer >/dev/null; then
	say "compute-sanitizer: not installed here"
else
	for tool in memcheck racecheck; do
		in_time 20 "compute-sanitizer $tool" || continue
		# into a file, not a pipe: a process the sanitizer leaves behind would hold a pipe open
		capped 40 compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 99 "${AAH_ENV[@]}" \
			AAH_BACKEND=cuda AAH_PRECISION=bf16 "$BUILD/bench/bench_train" \
			tests/fixtures/arch/resnet_small.json 8 1 2 1 >"$OUTDIR/.sanitizer" 2>&1
		rc=$?
		pkill -KILL -f "$BUILD/bench/bench_train" 2>/dev/null
		out=$(cat "$OUTDIR/.sanitizer")
		rm -f "$OUTDIR/.sanitizer"
		logged "compute-sanitizer $tool (exit $rc)" "$out"
		say "compute-sanitizer $tool: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | head -n 2 | tr '\n' ' ')"
		if [ "$rc" -ne 0 ] && [ "$rc" -lt 124 ]; then fail=1; fi
	done
fi
fi
say "done in $((SECONDS - t_start)) s: exit $fail"
exit $fail
