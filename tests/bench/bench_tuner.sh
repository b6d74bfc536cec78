#!/usr/bin/env bash
# Tuner benchmark: NetworkMorphism propose/observe latency at history sizes
# 10, 100, 1000 and 5000 for CnnGenerator- and ResNet-50-sized models (up to
# n = 1000 also a fresh proposer that replays the history first, the cost of
# each proposal with tuner.placement: trial, and one that starts from the
# state cache tuner.cache); the
# table prints the issue's targets and the ratio to them side by side.
# BENCH_TUNER_ARGS overrides the program's arguments (e.g. "--sizes 10,100").
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${AAH_BUILD:-build}/bench/bench_tuner
[ -x "$bin" ] || make -j2 "$bin" >/dev/null
# shellcheck disable=SC2086
exec "$bin" ${BENCH_TUNER_ARGS:---sizes 10,100,1000,5000 --reps 3 --threads 2}
