#!/usr/bin/env bats
# A retried trial resumes from its last checkpoint: the real aah-trial on a
# slice of Fashion-MNIST, killed (SIGKILL) in its second epoch, retried by
# the runner with --resume; the metrics show the epochs continuing. An epoch
# takes seconds here, the kill follows the checkpoint within a poll (0.1 s).

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

@test "a trial killed mid-epoch is retried from its checkpoint, each epoch counted once" {
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]
	cat > c.yml <<EOF2
experimentName: retry-resume
maxTrialNum: 1
trainingServicePlatform: local
searchSpacePath: $AAH_ROOT/examples/quickstart-search-space.json
tuner:
  builtinTunerName: NetworkMorphism
  initialArch: $AAH_ROOT/examples/fashion-mnist-cnn.json
trial:
  command: aah-trial --threads 1 --batch_size 32 --warmup_1 3 --train_samples 2048 --val_samples 64
  retries: 1
EOF2
	aah-runner create -c c.yml -q > runner.log 2>&1 &
	runner=$!
	wait_for has_experiment
	id=$(only_experiment)
	T=$AAH_WORKDIR/experiments/$id/trials/000001
	# The checkpoint of epoch 1 is written after its metrics line: once it is
	# there, the trainer is in epoch 2.
	wait_for test -f "$T/checkpoint/state.bin"
	pid=$(pgrep -f -- "--train_url $T" | head -1)
	[ -n "$pid" ]
	grep -q '"epoch":1' "$T/metrics.jsonl"
	! grep -q '"epoch":2' "$T/metrics.jsonl"
	kill -9 "$pid"
	wait "$runner"
	cat runner.log
	E=$AAH_WORKDIR/experiments/$id
	grep -q '"event":"trial_retry".*"attempt":2.*"reason":"a rank was killed by signal 9"' "$E/journal.jsonl"
	grep -q '"event":"trial_finished".*"attempt":2.*"state":"succeeded"' "$E/journal.jsonl"
	# Attempt 2 ran in its own place, from a copy of attempt 1's checkpoint
	# and epochs; attempt 1's place keeps what it wrote.
	A=$(place_dir "$id")
	[ "$A" = "$T/attempt-2" ]
	grep -q -- '--resume' "$A/launch.json"
	! grep -q -- '--resume' "$T/launch.json"
	grep -q "resumed from '$A/checkpoint/state.bin' after epoch 1" "$T/trial.log"
	[ "$(grep -o '"epoch":[0-9]*' "$T/metrics.jsonl" | tr '\n' ' ')" = '"epoch":1 ' ]
	[ ! -e "$T/result.json" ]
	# Epochs 1, 2, 3, each once: the retry continued, it did not restart.
	[ "$(grep -o '"epoch":[0-9]*' "$A/metrics.jsonl" | tr '\n' ' ')" = '"epoch":1 "epoch":2 "epoch":3 ' ]
	/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["epochs_run"] == 3 and r["status"] == "succeeded", r' "$A/result.json"
	run aah-runner status "$id"
	echo "$output"
	[[ $output == *"retried after attempt 1: a rank was killed by signal 9 (resumed from its checkpoint)"* ]]
}

@test "resumeOnRetry: false runs a retry from scratch, without --resume" {
	TRIAL_YAML=$'  retries: 1\n  resumeOnRetry: false' write_config c.yml "maxTrialNum: 1"
	TRIAL_FAIL_SEQ=1 run aah-runner create -c c.yml -q
	id=$(only_experiment)
	[ "$(count_events "$id" trial_retry)" -eq 1 ]
	[ "$(place_dir "$id")" = "$AAH_WORKDIR/experiments/$id/trials/000001/attempt-2" ]
	! grep -q -- '--resume' "$(place_dir "$id")/launch.json"
	# from scratch: nothing of attempt 1's checkpoint or epochs was copied
	[ ! -e "$(place_dir "$id")/checkpoint" ] && [ ! -e "$(place_dir "$id")/metrics.jsonl" ]
	run aah-runner status "$id"
	[[ $output == *"retried after attempt 1: a rank exited with status 7"* ]]
	[[ $output != *"resumed from its checkpoint"* ]]
}

# A journal from before places (docs/formats.md, "Attempts and their
# places") has no "place": every launch wrote into the trial directory, as a
# first launch still does. A runner killed between attempt 1's failure and
# its retry leaves exactly such a journal; resumed, the retry writes into a
# place of its own, from the trial directory's checkpoint, and every
# command reads the trial by the journal's places.
@test "a journal with no places (a runner killed before the retry): resume retries in attempt-2 from the trial directory's checkpoint" {
	TRIAL_COMMAND=ckpt_trial.sh TRIAL_YAML=$'  retries: 1\n  env:\n    TRIAL_STEPS: "3"\n    TRIAL_STEP_S: "0"\n    TRIAL_FAIL_ATTEMPT: "1"\n    TRIAL_RUN_LOG: '"$WORK/runs.log" \
		write_config c.yml "maxTrialNum: 1"
	run aah-runner create -c c.yml --no-run
	[ "$status" -eq 0 ]
	id=${lines[0]}
	E=$AAH_WORKDIR/experiments/$id
	T=$E/trials/000001
	# killed right after attempt 1's failure is journaled, before its retry
	AAH_FAULT_KILL_EVENT=trial_finished AAH_FAULT_KILL_AFTER=1 aah-runner resume "$id" -q > r1.log 2>&1 || true
	grep -q '"event":"trial_finished".*"attempt":1,"state":"failed"' "$E/journal.jsonl"
	! grep -q '"event":"trial_retry"' "$E/journal.jsonl"
	! grep -q '"place"' "$E/journal.jsonl"
	[ "$(cat "$T/checkpoint/step")" = 1 ]
	run aah-runner resume "$id" -q
	echo "$output"
	[ "$status" -eq 0 ]
	cat "$WORK/runs.log"
	[ "$(place_dir "$id")" = "$T/attempt-2" ]
	grep -q '^1 2 0 .* start=1$' "$WORK/runs.log"
	grep -q '^1 2 0 .* done=3$' "$WORK/runs.log"
	[ "$(cat "$T/attempt-2/checkpoint/step")" = 3 ] && [ "$(cat "$T/checkpoint/step")" = 1 ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	run aah-runner status "$id"
	[[ ${lines[2]} == "best accuracy: 0.5500 "* ]]
	run aah-runner report "$id" -q -o "$WORK/out"
	[ "$status" -eq 0 ]
	/usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["trials"][0]; assert t["best_acc"] == 0.55 and t["state"] == "succeeded", t' "$WORK/out/results.json"
}
