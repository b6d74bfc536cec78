#!/usr/bin/env bash
# Where a training step's oneDNN time goes, with activations kept NHWC
# (AAH_LAYOUT=nhwc, the layout before they stayed blocked between layers)
# and blocked (the default): runs build/bench/bench_train under
# ONEDNN_VERBOSE=1 and sums the primitives' own execution times per kind,
# in ms per step, reorders of activations (batch first) apart from those of
# weights, and the reorders' share of all oneDNN time.
# usage: tests/bench/bench_reorders.sh [ARCH.json] [batch] [threads] [steps]
# (AAH_BUILD picks the build; the first step, which builds every primitive,
# is left out.)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${AAH_BUILD:-build}
ARCH=${1:-tests/fixtures/arch/resnet_small.json}
BATCH=${2:-128} THREADS=${3:-1} STEPS=${4:-3}
[ -x "$BUILD/bench/bench_train" ] || make --no-print-directory "$BUILD/bench/bench_train" >/dev/null
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for layout in nhwc blocked; do
	AAH_LAYOUT=$layout ONEDNN_VERBOSE=1 "$BUILD/bench/bench_train" "$ARCH" "$BATCH" "$THREADS" \
		$((STEPS + 1)) 0 >"$dir/log"
	# the steps run back to back: the first 1/(STEPS+1) of the executions
	# are the first step
	awk -F, -v steps="$STEPS" -v batch="$BATCH" '
		$1 == "onednn_verbose" && $2 == "exec" { line[++n] = $0 }
		END {
			for (i = int(n / (steps + 1)) + 1; i <= n; i++) {
				split(line[i], f, ",")
				kind = f[4]
				if (kind == "reorder") {
					split(f[10], d, "x")
					kind = d[1] == batch ? "reorder_activations" : "reorder_weights"
					re += f[11]
				}
				ms[kind] += f[11]
				total += f[11]
			}
			ms["reorder_activations"] += 0
			for (k in ms)
				printf "%s %.2f\n", k, ms[k] / steps
			printf "all_oneDNN %.2f\nreorder_share_%% %.1f\n", total / steps, 100 * re / total
		}' "$dir/log" | sort >"$dir/$layout"
done
echo "$ARCH, batch $BATCH, $THREADS thread(s): oneDNN ms per step"
printf '%-22s %10s %10s\n' kind nhwc blocked
join -a1 -a2 -e - -o 0,1.2,2.2 "$dir/nhwc" "$dir/blocked" |
	awk '{ printf "%-22s %10s %10s\n", $1, $2, $3 }'
