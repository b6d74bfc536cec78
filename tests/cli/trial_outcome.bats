#!/usr/bin/env bats
# A trial's outcome is read by one rule (runner/store/outcome.h, docs/formats.md
# "A trial's outcome"): a trial whose result.json and metrics.jsonl
# disagree gets the same best accuracy and FLOPs from the journal the
# scheduler writes, `status`, `report` (its summary and results.json),
# `metrics` and the tuner's history.

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

@test "result.json and metrics.jsonl disagree: every command reads the epochs' figures" {
	TRIAL_COMMAND=disagreeing_trial.sh write_config c.yml "maxTrialNum: 2"
	run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	E=$AAH_WORKDIR/experiments/$id
	[ "$(count_events "$id" trial_finished succeeded)" -eq 2 ]
	# the scheduler journals the epochs' best and FLOPs, not result.json's
	[ "$(grep -c '"event":"trial_finished".*"best_val_acc":0.62' "$E/journal.jsonl")" -eq 2 ]
	[ "$(grep -c '"event":"trial_finished".*"flops":3000000000' "$E/journal.jsonl")" -eq 2 ]
	! grep -qE '(^|[^0-9])0\.98765' "$E/journal.jsonl"

	run aah-runner status "$id"
	[ "$status" -eq 0 ]
	[[ ${lines[2]} == "best accuracy: 0.6200"* ]]
	[ "$(printf '%s\n' "${lines[@]}" | grep -c ' succeeded .* 0\.6200 ')" -eq 2 ]

	run aah-runner report "$id" -o "$WORK/out"
	[ "$status" -eq 0 ]
	[[ $output == *"Best trial:            000001 (accuracy 62.00%"* ]]
	/usr/bin/python3 - "$WORK/out/results.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["trials"]) == 2, d["trials"]
for t in d["trials"]:
    assert abs(t["best_acc"] - 0.62) < 1e-12, t
    assert abs(t["flops"] - 3e9) < 1, t
    assert t["epochs"] == 2, t
PY

	run aah-runner metrics "$id"
	[ "$status" -eq 0 ]
	[[ $output == *"aah_trial_best_accuracy{experiment=\"$id\",trial=\"000001\"} 0.62"$'\n'* ]]
	[[ $output == *"aah_best_accuracy{experiment=\"$id\"} 0.62"$'\n'* ]]
	! grep -qE '(^|[^0-9])0\.98765' <<<"$output"
}
