#!/usr/bin/env bats
# One source of truth for each figure: `report`, `metrics` and `status` show
# the same best accuracy, error and per-trial FLOPs for the same experiment,
# also when a trial is a shell script that writes only result.json (no
# metrics.jsonl): then result.json's best_val_acc and total_flops are the
# trial's figures, as docs/formats.md says.

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

@test "a trial with only result.json: report, metrics and status agree" {
	cat > result_only.sh <<'SH'
#!/bin/sh
printf '{"format":"aah-result/1","status":"succeeded","stop_reason":"budget","best_val_acc":0.5,"total_flops":3e9,"precision":"fp32","devices":["cpu"]}\n' \
	> "$AAH_TRIAL_DIR/result.json.tmp"
mv "$AAH_TRIAL_DIR/result.json.tmp" "$AAH_TRIAL_DIR/result.json"
SH
	chmod +x result_only.sh
	TRIAL_COMMAND=$WORK/result_only.sh write_config c.yml "maxTrialNum: 1"
	run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	[ ! -e "$AAH_WORKDIR/experiments/$id/trials/000001/metrics.jsonl" ]

	run aah-runner status "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ ${lines[2]} == "best accuracy: 0.5000"* ]]
	[[ $output == *"000001  succeeded"*"0.5000"* ]]

	run aah-runner report "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"Error:                 50.00%"* ]]
	[[ $output == *"Best trial:            000001 (accuracy 50.00%)"* ]]
	/usr/bin/python3 - "$AAH_WORKDIR/experiments/$id/results.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["trials"][0]
assert t["best_acc"] == 0.5, t
assert t["flops"] == 3e9, t
assert d["final"]["best_acc"] == 0.5, d["final"]
assert d["final"]["error_pct"] == 50, d["final"]
assert d["final"]["flops"] == 3e9, d["final"]
PY

	run aah-runner metrics "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | grep -qxF "aah_best_accuracy{experiment=\"$id\"} 0.5"
	printf '%s\n' "$output" | grep -qxF "aah_error_percent{experiment=\"$id\"} 50"
	printf '%s\n' "$output" | grep -qxF "aah_trial_best_accuracy{experiment=\"$id\",trial=\"000001\"} 0.5"
}
