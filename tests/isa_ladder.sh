#!/usr/bin/env bash
# Prints the ISA ladder, one oneDNN level a line: every ISA level below this
# machine's own that the CPU has (AVX2, AVX512_CORE, AVX512_CORE_VNNI,
# AVX512_CORE_BF16, AVX512_CORE_AMX). oneDNN caps at what the CPU has, so a
# level the CPU lacks probes as a lower one and is left out. Each level
# reproduces a kind of CPU (docs/cpu.md): AVX2 a Zen 3, AVX512_CORE a
# Skylake, AVX512_CORE_BF16 a Cooper Lake or a Zen 4/5. tests/run.sh and
# tests/bench/bench_train.sh run at each.
#   tests/isa_ladder.sh [BUILD]      (BUILD: the build folder, default build)
set -uo pipefail
trial=${1:-${AAH_BUILD:-build}}/aah-trial
isa_of() { ONEDNN_MAX_CPU_ISA=$1 DNNL_MAX_CPU_ISA=$1 "$trial" --probe 2>/dev/null |
	sed -n 's/^onednn_isa: //p'; }
native=$("$trial" --probe 2>/dev/null | sed -n 's/^onednn_isa: //p')
[ -n "$native" ] || { echo "isa_ladder: $trial --probe gave no ISA" >&2; exit 1; }
for level in AVX2 AVX512_CORE AVX512_CORE_VNNI AVX512_CORE_BF16 AVX512_CORE_AMX; do
	isa=$(isa_of "$level")
	[ "$isa" = "${level,,}" ] && [ "$isa" != "$native" ] && echo "$level"
done
exit 0
