#!/usr/bin/env bash
# The fuzz targets of tests/fuzz/, built by `make fuzz-bins` into
# $AAH_FUZZ_BUILD/fuzz/ (default build-fuzz). Two modes:
#   run.sh regress fuzz_<name>   every file of tests/fuzz/corpus/<name>/ once,
#                                one TAP line per file (tests/run.sh's suite)
#   run.sh fuzz SECONDS          each target for SECONDS, from its corpus; new
#                                inputs go to $AAH_FUZZ_BUILD/fuzz/work/<name>/,
#                                crashes to $AAH_FUZZ_BUILD/fuzz/crashes/<name>/
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
build=${AAH_FUZZ_BUILD:-build-fuzz}
corpus=tests/fuzz/corpus
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

regress() {   # target
	local t=$1 name=${1#fuzz_} bin=$build/fuzz/$1
	local files=() out rc
	mapfile -t files < <(find "$corpus/$name" -type f | LC_ALL=C sort)
	if [ ${#files[@]} -eq 0 ]; then
		echo "1..1"
		echo "not ok 1 - $t: no corpus in $corpus/$name"
		return 1
	fi
	echo "1..${#files[@]}"
	if [ ! -x "$bin" ]; then
		local i=0 f
		for f in "${files[@]}"; do
			echo "ok $((++i)) - $t: $f # SKIP $bin not built (make fuzz-bins)"
		done
		return 0
	fi
	# One process runs the files (libFuzzer, or driver.c, prints "Running: F"
	# before and "Executed F" after each); the first file that starts but
	# never finishes crashed it, and the files after it get a new process.
	local i=0 bad=0 rest=("${files[@]}") ran f
	while [ ${#rest[@]} -gt 0 ]; do
		out=$("$bin" -timeout=60 "${rest[@]}" 2>&1); rc=$?
		ran=$(sed -nE 's/^Executed (.*) in [0-9]+ ms$/\1/p; s/^Executed (.*)$/\1/p' <<<"$out")
		local next=()
		for f in "${rest[@]}"; do
			if [ ${#next[@]} -gt 0 ]; then
				next+=("$f")
			elif grep -qxF -- "$f" <<<"$ran"; then
				echo "ok $((++i)) - $t: $f"
			else
				echo "not ok $((++i)) - $t: $f"
				bad=1
				echo "# $t exited with $rc on $f; its output:"
				tail -60 <<<"$out" | sed 's/^/# /'
				next=("")
			fi
		done
		if [ ${#next[@]} -eq 0 ] && [ "$rc" -ne 0 ]; then
			echo "not ok $((++i)) - $t exited with $rc after every file ran"
			tail -60 <<<"$out" | sed 's/^/# /'
			return 1
		fi
		rest=("${next[@]:1}")
	done
	return "$bad"
}

fuzz() {   # seconds
	local secs=$1 bin t name work crashes log execs ncrash rc total=0
	for bin in "$build"/fuzz/fuzz_*; do
		case $bin in *.d) continue ;; esac   # the linker's dependency files
		[ -x "$bin" ] || continue
		t=$(basename "$bin") name=${t#fuzz_}
		work=$build/fuzz/work/$name crashes=$build/fuzz/crashes/$name
		log=$build/fuzz/$t.log
		mkdir -p "$work" "$crashes"
		"$bin" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
			-artifact_prefix="$crashes/" "$work" "$corpus/$name" >"$log" 2>&1; rc=$?
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
		ncrash=$(find "$crashes" -type f | wc -l)
		printf '%-14s %10s executions in %ss, %d crash file(s) in %s, exit %d (log %s)\n' \
			"$t" "${execs:-?}" "$secs" "$ncrash" "$crashes" "$rc" "$log"
		if [ "$rc" -ne 0 ] || [ "$ncrash" -ne 0 ]; then total=$((total + 1)); fi
	done
	[ "$total" -eq 0 ]
}

case ${1:-} in
regress) regress "$2" ;;
fuzz) fuzz "${2:-60}" ;;
*) echo "usage: $0 regress fuzz_<name> | fuzz SECONDS" >&2; exit 2 ;;
esac
