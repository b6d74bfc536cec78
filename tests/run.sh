#!/usr/bin/env bash
# Run every test suite and end with one line: "N passed, N failed[, N skipped]".
#   unit: build/tests/unit/test_* (Criterion, TAP output); the kernel and
#         trainer suites again at each ISA level below the machine's own
#         (unit-avx2/, unit-avx512_core/, ...: the ladder, docs/cpu.md); a
#         unit test that prints "skipped" on stderr fails its suite
#   fuzz: every tests/fuzz/fuzz_<name>.c target over its corpus
#         (tests/fuzz/run.sh regress; AAH_FUZZ_BUILD, default build-fuzz,
#         holds the targets `make fuzz-bins` built; unbuilt ones are skipped)
#   cli, e2e, scale: tests/{cli,e2e,scale}/*.bats (bats, TAP output)
# AAH_BUILD picks the build folder; AAH_TEST_FILTER runs only suites whose
# name contains it.
set -uo pipefail
cd "$(dirname "$0")/.."
export AAH_BUILD=${AAH_BUILD:-build}
export AAH_ROOT=$PWD
export PATH="$AAH_ROOT/$AAH_BUILD:$PATH"
log_dir=$(mktemp -d "${TMPDIR:-/tmp}/aah-test.XXXXXX")
pass=0 fail=0 skip=0 failed_suites=()
suite_times=()   # "<seconds> <name>" of each suite run, for the slowest at the end

count() {    # count TAP lines of one suite's output file
	local f=$1 p n s
	p=$(grep -cE '^ok ' "$f" | tr -d ' ')
	s=$(grep -cE '^ok .*# (SKIP|skip)' "$f" | tr -d ' ')
	n=$(grep -cE '^not ok ' "$f" | tr -d ' ')
	echo "$((p - s)) $n $s"
}

run_suite() {  # name, then the command
	local name=$1; shift
	if [ -n "${AAH_TEST_FILTER:-}" ] && [[ $name != *"$AAH_TEST_FILTER"* ]]; then return; fi
	local out="$log_dir/${name//\//_}.tap" t0=$SECONDS rc
	"$@" >"$out" 2>"$out.err"; rc=$?
	read -r p n s < <(count "$out")
	if [ "$rc" -ne 0 ] && [ "$n" -eq 0 ]; then n=1; fi   # crashed before reporting
	if [[ $name == unit* ]] && [ -n "$(silent_skips "$out.err")" ]; then
		echo "not ok - a test printed 'skipped' on stderr without reporting a skip (cr_skip_test):" >>"$out"
		silent_skips "$out.err" | sed 's/^/#   /' >>"$out"
		n=$((n + 1))
	fi
	pass=$((pass + p)); fail=$((fail + n)); skip=$((skip + s))
	printf '%-40s %4d passed %3d failed %3d skipped  (%ds)\n' "$name" "$p" "$n" "$s" $((SECONDS - t0))
	suite_times+=("$((SECONDS - t0)) $name")
	if [ "$n" -ne 0 ]; then
		failed_suites+=("$name")
		grep -E '^not ok|^#' "$out" | head -40
		tail -40 "$out.err"
	fi
	grep -E '^ok .*# (SKIP|skip)' "$out" | sed 's/^/    /' | head -10
}

# The machine, as the trainer's own probe sees it: every timing and skip
# below depends on it (docs/cpu.md).
probe() { "$AAH_BUILD/aah-trial" --probe 2>/dev/null | sed -n "s/^$1: //p"; }
capped() { ONEDNN_MAX_CPU_ISA=$1 DNNL_MAX_CPU_ISA=$1 "${@:2}"; }
native_isa=$(probe onednn_isa)
echo "test machine: $(probe cpu); oneDNN ISA $native_isa, layout $(probe layout)," \
	"bf16 $(probe bf16)"
# The ISA ladder (tests/isa_ladder.sh): every oneDNN ISA level below the
# machine's own that the CPU has, each named with the probe's answers.
mapfile -t ladder < <(tests/isa_ladder.sh "$AAH_BUILD")
for level in "${ladder[@]}"; do
	echo "ladder: oneDNN capped at $level: ISA $(capped "$level" probe onednn_isa)," \
		"layout $(capped "$level" probe layout), bf16 $(capped "$level" probe bf16)"
done
[ ${#ladder[@]} -ne 0 ] || echo "ladder: none (oneDNN ISA $native_isa is the lowest level)"

# A unit test reports a skip through cr_skip_test, which TAP shows; one that
# prints "skipped" on stderr and returns passes silently. Such a line counts
# as a failure of its suite.
silent_skips() {   # the suite's stderr file
	grep -E '^skipped' "$1" | head -5
}

for t in "$AAH_BUILD"/tests/unit/test_*; do
	[ -x "$t" ] && [ -f "$t" ] || continue
	run_suite "unit/$(basename "$t")" "$t" --tap=/dev/stdout --jobs 1
done
# The kernel and trainer suites once more at each level of the ladder
# (ONEDNN_MAX_CPU_ISA; DNNL_MAX_CPU_ISA for older builds).
for level in "${ladder[@]}"; do
	name=$(echo "$level" | tr 'A-Z_' 'a-z_')
	for t in "$AAH_BUILD"/tests/unit/test_{kernels_*,trial_model,trial_train,precision,inherit,carve}; do
		[ -x "$t" ] && [ -f "$t" ] || continue
		run_suite "unit-$name/$(basename "$t")" capped "$level" "$t" --tap=/dev/stdout --jobs 1
	done
done
for t in tests/fuzz/fuzz_*.c; do
	[ -f "$t" ] || continue
	run_suite "fuzz/$(basename "$t" .c)" tests/fuzz/run.sh regress "$(basename "$t" .c)"
done
for dir in cli e2e scale; do
	for t in tests/$dir/*.bats; do
		[ -f "$t" ] || continue
		run_suite "$dir/$(basename "$t" .bats)" bats --tap "$t"
	done
done

echo
if [ ${#failed_suites[@]} -ne 0 ]; then
	echo "failed suites: ${failed_suites[*]} (logs in $log_dir)"
else
	rm -rf "$log_dir"
fi
# The whole run's time and where it went: the 5 slowest suites.
echo "total: $((SECONDS / 60))m$((SECONDS % 60))s; slowest suites:"
[ ${#suite_times[@]} -eq 0 ] || printf '%s\n' "${suite_times[@]}" | sort -rn | head -5 | while read -r t name; do
	printf '  %5ds  %s\n' "$t" "$name"
done
if [ "$skip" -ne 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
