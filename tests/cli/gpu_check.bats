#!/usr/bin/env bats
# tests/gpu/lease.sh's own checks that run without a GPU: its preflight
# names a library a binary lacks (the old `ldd | grep -q` under pipefail
# missed one 51 times in 300: SIGPIPE), its dry run reports every part as
# failed for want of a device, --collect refuses to empty the build it
# collects from, and the Fashion-MNIST subset --collect carries.

load helpers

setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/aah-gpu-check.XXXXXX")
}

teardown() {
	rm -rf "$T"
}

@test "the preflight names a missing library every time, and stops before the tests" {
	mkdir -p "$T/lib" "$T/build/tests/unit"
	echo 'int aah_gone(void) { return 0; }' >"$T/gone.c"
	echo 'int aah_gone(void); int main(void) { return aah_gone(); }' >"$T/main.c"
	cc -shared -fPIC -Wl,-soname,libaahgone.so.1 -o "$T/lib/libaahgone.so.1" "$T/gone.c"
	cc -o "$T/build/tests/unit/test_precision" "$T/main.c" -L"$T/lib" -l:libaahgone.so.1
	rm "$T/lib/libaahgone.so.1"
	for i in 1 2 3 4 5 6 7 8 9 10; do
		OUT=$T/out AAH_BUILD=$T/build run "$AAH_ROOT/tests/gpu/lease.sh"
		[ "$status" -eq 1 ]
		[[ $output == *"test_precision lacks libraries: libaahgone.so.1"* ]]
		[[ $output == *"stopped: a binary or library is missing"* ]]
		[[ $output != *"== 2. op tests"* ]]
		# the binaries it does not find are named too
		[[ $output == *"/aah-trial is missing"* ]]
	done
	grep -q 'libaahgone.so.1' "$T/out/lease-log.txt"
	grep -q 'lacks libraries' "$T/out/lease-report.txt"
}

@test "the Fashion-MNIST subset holds the first samples of each file, as aah reads them" {
	[ -f /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz ] || skip "no Fashion-MNIST here"
	run "$AAH_ROOT/tests/gpu/fmnist-subset.py" /usr/share/datasets/fashion-mnist "$T/fm" 300 100
	[ "$status" -eq 0 ]
	/usr/bin/python3 - /usr/share/datasets/fashion-mnist "$T/fm" <<'PY'
import gzip, struct, sys
src, dest = sys.argv[1:]
for name, n, per in (("train-images-idx3-ubyte", 300, 784), ("train-labels-idx1-ubyte", 300, 1),
                     ("t10k-images-idx3-ubyte", 100, 784), ("t10k-labels-idx1-ubyte", 100, 1)):
    a = gzip.open(f"{src}/{name}.gz").read()
    b = gzip.open(f"{dest}/{name}.gz").read()
    dims = a[3]
    assert b[:4] == a[:4], name
    assert struct.unpack(">I", b[4:8])[0] == n, name
    assert b[8:4 + 4 * dims] == a[8:4 + 4 * dims], name
    assert b[4 + 4 * dims:] == a[4 + 4 * dims:4 + 4 * dims + n * per], name
PY
}

@test "the dry run without a GPU: every part runs and fails for want of a device, the log is whole" {
	if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
		skip "this machine has a GPU: the script's real run is the check"
	fi
	[ -x "$AAH_ROOT/$AAH_BUILD/bench/bench_train" ] || skip "bench_train is not built (make bench-bins)"
	OUT=$T/out AAH_BUILD=$AAH_BUILD run "$AAH_ROOT/tests/gpu/lease.sh"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"FAILED: device: none"* ]]
	for part in "== 0. preflight" "== 1. the kernel families' SASS" "== 2. op tests" \
		"== 3. ResNet-50" "== 4. aah-trial" "== 5. Nsight Compute" "== 6. fp16" \
		"== 7. ResNet-50 at AIPerf's batch" "== 8. compute-sanitizer" "done in "; do
		[[ $output == *"$part"* ]]
	done
	for t in test_kernels_ref test_kernels_cast test_precision test_kernels_refnet test_kernels_train_gpu; do
		line=$(grep "^$t: exit" <<<"$output")
		[[ $line == "$t: exit 1, "* ]]
		n=$(sed -n 's/.* \([0-9]*\) for want of a device.*/\1/p' <<<"$line")
		[ "$n" -gt 0 ]
	done
	# on the device machine the host backends' cases are left to make test
	ref=$(grep "^test_kernels_ref: exit" <<<"$output")
	[ "$(sed -n 's/.*, \([0-9]*\) ok,.*/\1/p' <<<"$ref")" -lt 20 ]
	[[ $output == *"Assertion failed: AAH_REQUIRE_CUDA=1: skipped: no CUDA device"* ]]
	[[ $output == *"FAILED: aah-trial --backend auto did not train on cuda"* ]]
	[[ $output == *"FAILED: AIPerf's batch: no GPU to size it by"* ]]
	# the log holds every part whole, the report the summary
	for part in test_kernels_ref test_kernels_cast test_precision test_kernels_refnet \
		test_monitor_sampling test_kernels_train_gpu "aah-trial --backend auto"; do
		grep -q "^----- $part (exit " "$T/out/lease-log.txt"
	done
	grep -q '^done in [0-9]* s: exit 1$' "$T/out/lease-report.txt"
	grep -q '^variant ' "$T/out/lease-matrix.txt"
}

@test "--collect from build-gpu itself is refused before it empties that folder" {
	mkdir -p "$T/root/tests" "$T/root/build-gpu"
	cp -r "$AAH_ROOT/tests/gpu" "$T/root/tests/"
	echo kept >"$T/root/build-gpu/aah-trial"
	for b in build-gpu ./build-gpu "$T/root/build-gpu/"; do
		AAH_BUILD=$b run "$T/root/tests/gpu/lease.sh" --collect
		[ "$status" -eq 2 ]
		[[ $output == *"AAH_BUILD=$b is build-gpu, the folder --collect empties"* ]]
		[ "$(cat "$T/root/build-gpu/aah-trial")" = kept ]
	done
}
