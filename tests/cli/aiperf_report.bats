#!/usr/bin/env bats
# The report's AIPerf choices (issue 17), as a user picks them: the rule set
# (report.rules, --rules) and the epoch charge (report.epochCharge,
# --epoch-charge) on a synthetic experiment of
# tests/fixtures/report/make-experiment.sh.

setup() {
	W=$(mktemp -d "${BATS_TMPDIR:-/tmp}/aah-aiperf-report.XXXXXX")
	export AAH_WORKDIR=$W
	mkdir -p "$W/experiments"
	"$AAH_ROOT/tests/fixtures/report/make-experiment.sh" "$W/experiments" exp00001 12 5 3
	E=$W/experiments/exp00001
}

teardown() {
	if [ -n "${W:-}" ]; then rm -rf "$W"; fi
}

@test "report names its rule set and epoch charge; --rules and --epoch-charge choose them" {
	run aah-runner report exp00001
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"(rules of AIPerf's README)"* ]]
	[[ $output == *"epochs charged by the images trained"* ]]
	[[ $output == *"Clock:                 starts at the first trial"* ]]
	grep -q "docs/aiperf.md" "$E/report.html"
	run aah-runner report exp00001 --rules report.py --epoch-charge aiperf -o "$W"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"(rules of AIPerf's report.py)"* ]]
	[[ $output == *"epochs charged as AIPerf's score.py"* ]]
	/usr/bin/python3 - "$E/results.json" "$W/results.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert (a["rule_set"], a["epoch_charge"]) == ("readme", "images"), a
assert (b["rule_set"], b["epoch_charge"]) == ("report.py", "aiperf"), b
assert a["start"] >= a["created"], a
# the images figure is the same either way; AIPerf's charge is ImageNet's
assert a["final"]["flops_images"] == b["final"]["flops_images"]
assert a["final"]["flops"] == a["final"]["flops_images"]
assert b["final"]["flops"] != b["final"]["flops_images"], b["final"]
PY
	run aah-runner report exp00001 --rules nni
	[ "$status" -eq 2 ]
	[[ $output == *"--rules: 'nni' is none of readme, report.py"* ]]
}
