#!/usr/bin/env bash
# Training images/s of aah-trial's CPU path vs PyTorch (Debian python3-torch)
# on the identical architecture and batch: forward + loss + backward + SGD
# on a fixed batch of 128, 2 threads, for the 2-conv CNN of the 90% test and
# a small ResNet-style net with add-skips. Prints both numbers and the ratio.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${AAH_BUILD:-build}
BATCH=${BENCH_BATCH:-128} THREADS=${BENCH_THREADS:-2} STEPS=${BENCH_STEPS:-30}
ROUNDS=${BENCH_ROUNDS:-3}   # aah and torch alternate; each side reports its median
PY=/usr/bin/python3
if ! $PY -c 'import torch' 2>/dev/null; then
	echo "bench_train: skipped: python3-torch is not installed (apt-get install python3-torch)"
	exit 0
fi
[ -x "$BUILD/bench/bench_train" ] || make --no-print-directory "$BUILD/bench/bench_train" >/dev/null
# Natively, then with both sides capped at each level of the ISA ladder
# (tests/isa_ladder.sh; oneDNN's ISA for aah and for PyTorch's bundled
# oneDNN, ATen's kernels too: avx2 or avx512), so an AVX-512 machine also
# measures what the CPUs below it get; BENCH_ISAS picks (native AVX2 ...).
bench_isa() {  # native | a ladder level
	local isa=$1 env=() aten=avx512
	[ "$isa" = AVX2 ] && aten=avx2
	[ "$isa" = native ] || env=(env ONEDNN_MAX_CPU_ISA="$isa" DNNL_MAX_CPU_ISA="$isa"
		ATEN_CPU_CAPABILITY="$aten")
	local probe
	probe=$("${env[@]}" "$BUILD/aah-trial" --probe 2>/dev/null | sed -n 's/^onednn_isa: //p')
	echo "--- $isa: $("$BUILD/aah-trial" --probe 2>/dev/null | sed -n 's/^cpu: //p'), oneDNN ISA $probe"
	printf '%-14s %6s %8s %12s %12s %7s\n' arch batch threads aah_img/s torch_img/s ratio
	for arch in cnn2 resnet_small; do
		f=tests/fixtures/arch/$arch.json
		# for both: on a shared machine spinning threads
		# would measure the neighbours, not the code
		a=() t=()
		for ((r = 0; r < ROUNDS; r++)); do
			a+=("$("${env[@]}" "$BUILD/bench/bench_train" "$f" "$BATCH" "$THREADS" "$STEPS" 5)")
			t+=("$("${env[@]}" $PY tests/bench/bench_train_torch.py --arch "$f" \
				--batch "$BATCH" --threads "$THREADS" --steps "$STEPS" --warmup 5)")
		done
		aah=$(printf '%s\n' "${a[@]}" | sort -g | sed -n "$(((ROUNDS + 1) / 2))p")
		torch=$(printf '%s\n' "${t[@]}" | sort -g | sed -n "$(((ROUNDS + 1) / 2))p")
		ratio=$($PY -c "print(f'{$aah / $torch:.2f}x')")
		printf '%-14s %6s %8s %12s %12s %7s   (aah: %s; torch: %s)\n' "$arch" "$BATCH" "$THREADS" \
			"$aah" "$torch" "$ratio" "${a[*]}" "${t[*]}"
	done
}
[ -x "$BUILD/aah-trial" ] || make --no-print-directory "$BUILD/aah-trial" >/dev/null
for isa in ${BENCH_ISAS:-native $(tests/isa_ladder.sh "$BUILD" | tr '\n' ' ')}; do
	bench_isa "$isa"
done
