#!/usr/bin/env bats
# --deadline (trial.fitExecDuration): a trial shrinks its epoch budget, and
# its cosine schedule with it, to the epochs that fit before a Unix time.
# Deterministic cases only: a deadline already passed (nothing more fits)
# and one a day away (everything fits); what fits in between depends on the
# machine's speed and is the subject of the unit test of
# train_deadline_budget and of the quickstart's measurements, not of a
# timing assert here.

load helpers

setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/aah-deadline-bats.XXXXXX")
	ARCH=$AAH_ROOT/tests/fixtures/arch
	TRAIN=(aah-trial --trial_dir "$T" --arch "$ARCH/cnn2.json" --threads 1 --batch_size 64
	       --train_samples 1024 --val_samples 256 --warmup_1 4 --initial_lr 0.05 --final_lr 0
	       --monitor_interval 0)
}

teardown() {
	rm -rf "$T"
	if [ -n "${WORK:-}" ]; then teardown_workdir; fi
}

# check EXPR: a Python assertion over result.json `r` and the metrics lines `m`
check() {
	python3 - "$T" "$1" <<'PY'
import json, sys
t, expr = sys.argv[1], sys.argv[2]
r = json.load(open(t + "/result.json"))
m = [json.loads(l) for l in open(t + "/metrics.jsonl")]
assert eval(expr), (expr, r, [(x["epoch"], x["lr"]) for x in m])
PY
}

@test "a deadline already passed: one epoch along a one-epoch cosine, stop reason deadline" {
	run "${TRAIN[@]}" --deadline $(($(date +%s) - 1))
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"budget 4 -> 1 epochs"* ]]
	[[ $output == *"epoch 1/1:"* ]]
	# annealed: the epoch's last step ran at --final_lr
	check 'r["status"] == "succeeded" and r["stop_reason"] == "deadline" and r["epochs_run"] == 1'
	check 'len(m) == 1 and m[0]["lr"] == 0'
}

@test "a deadline a day away changes nothing: the same schedule and stop reason as none" {
	run "${TRAIN[@]}" --warmup_1 2
	[ "$status" -eq 0 ]
	python3 -c "import json,sys; print(' '.join(str(json.loads(l)['lr']) for l in open(sys.argv[1])))" \
		"$T/metrics.jsonl" > "$T/lr-none"
	AAH_DEADLINE=$(($(date +%s) + 86400)) run "${TRAIN[@]}" --warmup_1 2
	[ "$status" -eq 0 ]
	[[ $output != *"deadline in"* ]]
	check 'r["stop_reason"] == "budget" and r["epochs_run"] == 2'
	python3 -c "import json,sys; print(' '.join(str(json.loads(l)['lr']) for l in open(sys.argv[1])))" \
		"$T/metrics.jsonl" > "$T/lr-day"
	cmp "$T/lr-none" "$T/lr-day"
}

@test "a resumed trial keeps the budget a deadline cut" {
	run "${TRAIN[@]}" --deadline $(($(date +%s) - 1))
	[ "$status" -eq 0 ]
	check 'r["epochs_run"] == 1 and r["stop_reason"] == "deadline"'
	# a retry with a later deadline: the schedule it followed ended at epoch 1
	run "${TRAIN[@]}" --resume --deadline $(($(date +%s) + 86400))
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"resumed from"* ]]
	check 'r["epochs_run"] == 1 and r["stop_reason"] == "deadline" and len(m) == 1'
}

@test "trial.fitExecDuration: the runner exports AAH_DEADLINE, maxExecDuration's end" {
	setup_workdir
	TRIAL_YAML="  fitExecDuration: true" write_config c.yml "maxTrialNum: 1" "maxExecDuration: 1h"
	t0=$(date +%s)
	TRIAL_SLEEP=0 run aah-runner create -c c.yml
	t1=$(date +%s)
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	d=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ranks'][0]['env']['AAH_DEADLINE'])" \
		"$AAH_WORKDIR/experiments/$id/trials/000001/launch.json")
	[ "$d" -ge $((t0 + 3600 - 1)) ] && [ "$d" -le $((t1 + 3600)) ]
	# off by default
	write_config c2.yml "maxTrialNum: 1" "maxExecDuration: 1h"
	TRIAL_SLEEP=0 run aah-runner create -c c2.yml
	[ "$status" -eq 0 ]
	[ "$(ls "$AAH_WORKDIR"/experiments/*/trials/000001/launch.json | wc -l)" -eq 2 ]
	[ "$(grep -l AAH_DEADLINE "$AAH_WORKDIR"/experiments/*/trials/*/launch.json | wc -l)" -eq 1 ]
}
