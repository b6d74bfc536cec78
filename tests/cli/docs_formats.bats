#!/usr/bin/env bats
# The docs against the files of a real run: a short experiment (the tuner,
# aah-trial training for one epoch on a slice of Fashion-MNIST, the local
# backend), then report. Every field table of docs/formats.md and
# docs/report.md must match the files written: every documented field that
# is not optional is there, every field there is documented
# (tests/fixtures/docs/check_formats.py).

load helpers

CHECK=$AAH_ROOT/tests/fixtures/docs/check_formats.py

setup() { setup_workdir; }
teardown() { teardown_workdir; }

@test "the documented fields of every format match the files of a real run" {
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]
	cat > c.yml <<EOF2
experimentName: docs-formats
maxTrialNum: 1
trainingServicePlatform: local
searchSpacePath: $AAH_ROOT/examples/quickstart-search-space.json
tuner:
  builtinTunerName: NetworkMorphism
  initialArch: $AAH_ROOT/examples/fashion-mnist-cnn.json
trial:
  command: aah-trial --dataset /usr/share/datasets/fashion-mnist --threads 1 --batch_size 64
           --warmup_1 1 --epochs 1 --train_samples 256 --val_samples 128
EOF2
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	E=$AAH_WORKDIR/experiments/$id
	T=$E/trials/000001
	grep -q '"state":"succeeded"' "$E/journal.jsonl"
	# The smallest sample step there is (3.6 s): the points run to the first
	# one at or after the last epoch, so results.json has samples to check.
	run aah-runner report "$id" -q --sample-first 0.001 --sample-step 0.001
	[ "$status" -eq 0 ]
	/usr/bin/python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["samples"]' "$E/results.json"
	monitor=$(ls "$T"/device_info/monitor-*.jsonl)

	run /usr/bin/python3 "$CHECK" "$AAH_ROOT/docs/formats.md" \
		aah-experiment/1 "$E/experiment.json" \
		aah-journal/1 "$E/journal.jsonl" \
		aah-params/1 "$T/params.json" \
		aah-launch/1 "$T/launch.json" \
		aah-metrics/1 "$T/metrics.jsonl" \
		aah-result/1 "$T/result.json"
	echo "$output"
	[ "$status" -eq 0 ]
	run /usr/bin/python3 "$CHECK" "$AAH_ROOT/docs/report.md" \
		aah-results/1 "$E/results.json" \
		aah-monitor/1 "$monitor"
	echo "$output"
	[ "$status" -eq 0 ]

	# Every file of the experiment directory is in the layout of formats.md.
	layout=$(sed -n '/^\$AAH_WORKDIR\/experiments\/<exp-id>\/$/,/^```$/p' "$AAH_ROOT/docs/formats.md")
	[ -n "$layout" ]
	for f in $(cd "$E" && find . -type f | sed 's|.*/||' | sort -u); do
		case $f in monitor-*.jsonl | monitor-*.lock | state.bin) continue ;; esac   # under device_info/, checkpoint/
		grep -qF "$f" <<<"$layout" || { echo "not in the layout of docs/formats.md: $f"; false; }
	done
}

@test "the checker catches drift both ways" {
	printf '%s\n' '{"format":"aah-result/1","status":"succeeded","best_val_acc":0.5,"surprise":1}' > r.json
	run /usr/bin/python3 "$CHECK" "$AAH_ROOT/docs/formats.md" aah-result/1 r.json
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"field 'surprise' is not documented"* ]]
	[[ $output == *"documented field 'total_flops' is missing"* ]]
}

@test "collect's one-line description says signing is optional" {
	run aah-runner --help
	[ "$status" -eq 0 ]
	line=$(printf '%s\n' "$output" | grep '^ *collect ')
	echo "$line"
	[[ $line == *"optionally signed"* ]]
}
