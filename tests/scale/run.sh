#!/bin/bash
# make scale: the scale harness at the sizes of docs/scale.md's table, one
# experiment at a time, then the table's rows. Each size is
# "slots:trials:placement[:compress[:platform]]" (platform local, slurm:
# real daemons, as root, or kubernetes: the simulated cluster);
# SCALE_SIZES overrides the list, SCALE_OUT the folder of the results (one
# JSON per size).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export AAH_BUILD=${AAH_BUILD:-build}
OUT=${SCALE_OUT:-$ROOT/$AAH_BUILD/scale/results}
SIZES=${SCALE_SIZES:-"64:500:master:1000 64:300:trial:1000 512:2000:master:400"}
mkdir -p "$OUT"
results=()
for size in $SIZES; do
	IFS=: read -r slots trials placement compress platform <<<"$size"
	compress=${compress:-400}
	platform=${platform:-local}
	out="$OUT/$slots-$trials-$placement-$compress-$platform.json"
	echo "scale: $slots slots, $trials trials, tuner on the $placement, compress $compress, $platform -> $out" >&2
	/usr/bin/python3 "$ROOT/tests/scale/scale.py" run --slots "$slots" --trials "$trials" \
		--placement "$placement" --compress "$compress" --platform "$platform" --out "$out"
	results+=("$out")
done
/usr/bin/python3 "$ROOT/tests/scale/scale.py" table "${results[@]}"
