#!/usr/bin/env bats
# A trial's outcome is read by one rule (runner/store/outcome.h, docs/formats.md
# "A trial's outcome"): a trial whose result.json and metrics.jsonl
# disagree gets the same best accuracy and FLOPs from the journal the
# scheduler writes, `status`, `report` (its summary and results.json),
# `metrics` and the tuner's history.

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

# The figures themselves are read, never a grep for digits over text that
# also holds clocks and durations (a run time can show any digits).

# status_column NAME: that column of every trial row of `status` ($output).
status_column() {
	awk -v name="$1" '$1 == "TRIAL" { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
		c && $1 ~ /^[0-9][0-9][0-9][0-9][0-9][0-9]$/ { print $1, $c }' <<<"$output"
}

# accuracy_series: every series of `metrics` ($output) whose name says
# accuracy or error, as "<name>{<labels>} <value>".
accuracy_series() {
	grep -E '^aah_[a-z_]*(accuracy|error)[a-z_]*\{' <<<"$output"
}

@test "result.json and metrics.jsonl disagree: every command reads the epochs' figures" {
	TRIAL_COMMAND=disagreeing_trial.sh write_config c.yml "maxTrialNum: 2"
	run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	E=$AAH_WORKDIR/experiments/$id
	[ "$(count_events "$id" trial_finished succeeded)" -eq 2 ]
	# the scheduler journals the epochs' best and FLOPs, not result.json's
	run journal_figures "$E/journal.jsonl"
	echo "$output"
	[ "$output" = "000001 0.62 3000000000
000002 0.62 3000000000" ]

	run aah-runner status "$id"
	[ "$status" -eq 0 ]
	[[ ${lines[2]} == "best accuracy: 0.6200 "* ]]
	[ "$(status_column STATE)" = "000001 succeeded
000002 succeeded" ]
	[ "$(status_column BEST_ACC)" = "000001 0.6200
000002 0.6200" ]

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
	accuracy_series
	[ "$(accuracy_series)" = "aah_best_accuracy{experiment=\"$id\"} 0.62
aah_error_percent{experiment=\"$id\"} 38
aah_trial_best_accuracy{experiment=\"$id\",trial=\"000001\"} 0.62
aah_trial_best_accuracy{experiment=\"$id\",trial=\"000002\"} 0.62
aah_trial_last_accuracy{experiment=\"$id\",trial=\"000001\"} 0.62
aah_trial_last_accuracy{experiment=\"$id\",trial=\"000002\"} 0.62" ]
}
