#!/usr/bin/env bats
# Weight inheritance with the real trainer on a slice of Fashion-MNIST: a
# child of the network morphism search starts from its parent's checkpoint
# through morph.json, and the progress lines, result.json and the report
# say so.

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

inherit_config() {
	cat > c.yml <<EOF2
experimentName: inherit
maxTrialNum: 3
trialConcurrency: 1
trainingServicePlatform: local
searchSpacePath: $AAH_ROOT/examples/quickstart-search-space.json
tuner:
  builtinTunerName: NetworkMorphism
  placement: trial
  inheritWeights: $1
  initialArch: $AAH_ROOT/examples/fashion-mnist-cnn.json
trial:
  command: aah-trial --dataset /usr/share/datasets/fashion-mnist --threads 1 --batch_size 64
           --warmup_1 2 --warmup_2 2 --epochs 2 --inherited_epochs 1 --train_samples 512
           --val_samples 128
EOF2
}
# (AAH_SLAVE is trialConcurrency, 1: trial 1 is round 0 of the epoch
# budget and trial 2 round 1, so both rounds get 2 epochs from scratch.)

# create_two INHERIT: a two-trial experiment (seed 3), its trials in $T
create_two() {
	inherit_config "$1"
	sed -i 's/maxTrialNum: 3/maxTrialNum: 2/' c.yml
	run aah-runner create -c c.yml --seed 3
	[ "$status" -eq 0 ]
	T=$AAH_WORKDIR/experiments/${lines[0]}/trials
}

@test "children start from their parent's weights and say so" {
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]
	inherit_config true
	run aah-runner create -c c.yml --seed 3
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	T=$AAH_WORKDIR/experiments/$id/trials
	[ ! -f "$T/000001/morph.json" ]
	[ "$(jq -r .format "$T/000002/morph.json")" = "aah-morph/1" ]
	for t in 000002 000003; do
		p=$(jq -r .parent_trial "$T/$t/morph.json")
		[ "$(jq -r .inherited_from "$T/$t/result.json")" = "$p" ]
		grep -q "starts from the weights of trial $p" "$T/$t/trial.log"
		[[ $output == *"trial $t succeeded"*"from $p |"* ]]
		# its own budget (--inherited_epochs 1), not the parent's epochs again
		[ "$(wc -l < "$T/$t/metrics.jsonl")" -eq 1 ]
		[ "$(jq -r .epochs_run "$T/$t/result.json")" -eq 1 ]
	done
	[ "$(jq -r .epochs_run "$T/000001/result.json")" -eq 2 ]
	# arch.json keeps no copy of the record
	[ "$(jq -r '.meta.morph' "$T/000002/arch.json")" = "null" ]
	run aah-runner report "$id"
	[ "$status" -eq 0 ]
	[[ $output == *"2 started from a parent's weights"* ]]
	E=$AAH_WORKDIR/experiments/$id
	[ "$(jq -r '[.trials[] | select(.inherited_from)] | length' "$E/results.json")" -eq 2 ]
	# the proposers shared the tuner state: trial 3's covered trials 1 and 2,
	# and its header is the one docs/formats.md documents
	head -n 1 "$E/tuner.cache" > state.json
	[ "$(jq -r .observations state.json)" -eq 2 ]
	run /usr/bin/python3 "$AAH_ROOT/tests/fixtures/docs/check_formats.py" \
		"$AAH_ROOT/docs/formats.md" aah-tuner-state/1 state.json
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "without tuner.inheritWeights every trial trains from its own initialisation" {
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]
	create_two false
	[ ! -f "$T/000002/morph.json" ]
	[ "$(jq -r .inherited_from "$T/000002/result.json")" = "null" ]
	[ "$(wc -l < "$T/000002/metrics.jsonl")" -eq 2 ]
}

# A child stopped after one epoch and run again with --resume (a retry, a
# resize or `aah-runner resume` does that) continues from its own
# checkpoint: its budget, learning rate and inherited_from stay those of a
# child, not those of a trial started from scratch.
@test "a resumed child keeps its inherited budget, learning rate and parent" {
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]
	create_two true
	p=$(jq -r .parent_trial "$T/000002/morph.json")
	rm -rf "$T/000002/checkpoint" "$T/000002/metrics.jsonl" "$T/000002/result.json"
	# warmup 2 for a start from scratch, 3 for a child at half the rate
	set -- --dataset /usr/share/datasets/fashion-mnist --threads 1 --batch_size 64 \
		--warmup_1 2 --epochs 2 --inherited_epochs 3 --inherited_lr_scale 0.5 \
		--learning_rate 0.02 --train_samples 512 --val_samples 128 --trial_dir "$T/000002"
	run aah-trial "$@" --max_epochs 1
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"starts from the weights of trial $p (morph.json), learning rate x0.5"* ]]
	run aah-trial "$@" --resume
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"budget 3 epochs"* ]]
	[ "$(wc -l < "$T/000002/metrics.jsonl")" -eq 3 ]
	[ "$(jq -r .inherited_from "$T/000002/result.json")" = "$p" ]
	# the cosine from 0.5 x 0.02 over 3 epochs: each epoch's LR below 0.01
	jq -e -s 'all(.[]; .lr <= 0.01 + 1e-9) and .[0].lr > 0.005' "$T/000002/metrics.jsonl"
}

# A parent whose last launch ran in a place of its own (a retry,
# docs/formats.md "Attempts and their places") keeps its checkpoint there:
# the tuner names it in morph.json's parent_dir, and a copy of morph.json in
# the child's own place (runner/store/place.c) names it from there. The
# trainer follows parent_dir; without it, it finds no parent beside a place.
@test "a child in a place of its own finds its parent's checkpoint in the parent's place through parent_dir" {
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]
	create_two true
	p=$(jq -r .parent_trial "$T/000002/morph.json")
	# the parent's last launch as if it had been its attempt 2
	mkdir "$T/$p/attempt-2"
	mv "$T/$p/checkpoint" "$T/$p/attempt-2/"
	cp "$T/$p/arch.json" "$T/$p/attempt-2/"
	# the child's proposal in its own place, morph.json as a place gets it
	C=$T/000002/attempt-2
	mkdir "$C"
	cp "$T/000002/arch.json" "$T/000002/params.json" "$C/"
	jq --arg d "../../$p/attempt-2" '. + {parent_dir: $d}' "$T/000002/morph.json" > "$C/morph.json"
	set -- --dataset /usr/share/datasets/fashion-mnist --threads 1 --batch_size 64 --warmup_1 2 \
		--epochs 2 --inherited_epochs 1 --train_samples 512 --val_samples 128 --max_epochs 1
	run aah-trial "$@" --trial_dir "$C"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"starts from the weights of trial $p (morph.json)"* ]]
	[ "$(jq -r .inherited_from "$C/result.json")" = "$p" ]
	# the same copy without parent_dir looks beside the place, and finds nothing
	rm -rf "$C/checkpoint" "$C/metrics.jsonl" "$C/result.json"
	cp "$T/000002/morph.json" "$C/morph.json"
	run aah-trial "$@" --trial_dir "$C"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"trial $p has no arch.json or checkpoint: training from scratch"* ]]
	[ "$(jq -r .inherited_from "$C/result.json")" = "null" ]
}
