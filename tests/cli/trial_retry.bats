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
	grep -q -- '--resume' "$T/launch.json"
	grep -q "resumed from '.*checkpoint/state.bin' after epoch 1" "$T/trial.log"
	# Epochs 1, 2, 3, each once: the retry continued, it did not restart.
	[ "$(grep -o '"epoch":[0-9]*' "$T/metrics.jsonl" | tr '\n' ' ')" = '"epoch":1 "epoch":2 "epoch":3 ' ]
	/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["epochs_run"] == 3 and r["status"] == "succeeded", r' "$T/result.json"
	run aah-runner status "$id"
	echo "$output"
	[[ $output == *"retried after attempt 1: a rank was killed by signal 9 (resumed from its checkpoint)"* ]]
}

@test "resumeOnRetry: false runs a retry from scratch, without --resume" {
	TRIAL_YAML=$'  retries: 1\n  resumeOnRetry: false' write_config c.yml "maxTrialNum: 1"
	TRIAL_FAIL_SEQ=1 run aah-runner create -c c.yml -q
	id=$(only_experiment)
	[ "$(count_events "$id" trial_retry)" -eq 1 ]
	! grep -q -- '--resume' "$AAH_WORKDIR/experiments/$id/trials/000001/launch.json"
	run aah-runner status "$id"
	[[ $output == *"retried after attempt 1: a rank exited with status 7"* ]]
	[[ $output != *"resumed from its checkpoint"* ]]
}
