#!/usr/bin/env bats
# examples/nni-pytorch on the local backend: a trial written for NNI
# (Debian's PyTorch, real Fashion-MNIST) run by aah-runner with TPE from
# its NNI v2 config. Checked: the parameters each trial received against
# the tuner's proposals, the intermediate series in `aah-runner metrics`
# against the records the trial wrote, the final values in the report, a
# runner killed mid-trial and resumed, and a trial whose metrics file is
# corrupted. Small: 2000 training images, 2 or 3 epochs, 1 or 2 trials
# each. (The example in a container: docker_nni.bats.)

load helpers

EXAMPLE=$AAH_ROOT/examples/nni-pytorch
FAST="--train_samples 2000 --test_samples 500"

setup() {
	setup_workdir
	RUNNER_PID=
	/usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null ||
		skip "Debian's PyTorch is not installed (apt-get install python3-torch python3-torchvision: make deps)"
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
		skip "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)"
}

teardown() {
	if [ -n "${RUNNER_PID:-}" ]; then kill -9 "$RUNNER_PID" 2>/dev/null || true; fi
	teardown_workdir
}

# example_config FILE TRIALS EPOCHS [COMMAND]: the example's config.yml,
# its trials shortened, its space narrowed to values that learn in so few
# epochs (tests/fixtures/nni/SOURCE.md), the rest as it is.
example_config() {
	local cmd=${4:-/usr/bin/python3 $EXAMPLE/fashion_mnist.py}
	sed -e "s|^trialCommand: .*|trialCommand: $cmd --epochs $3 $FAST|" \
		-e "s|^trialCodeDirectory: .*|trialCodeDirectory: $EXAMPLE|" \
		-e "s|^searchSpaceFile: .*|searchSpaceFile: $AAH_ROOT/tests/fixtures/nni/pytorch_space.json|" \
		-e "s|^maxTrialNumber: .*|maxTrialNumber: $2|" "$EXAMPLE/config.yml" > "$1"
	grep -q "^trialCommand: $cmd --epochs" "$1"
}

# records DIR: what the trial reported, read from its .nni/metrics as
# NNI's manager reads it: "P <value>" per intermediate result, "F <value>".
records() {
	/usr/bin/python3 - "$1/.nni/metrics" <<-'PY'
	import json, sys
	raw = open(sys.argv[1], "rb").read()
	while raw:
	    assert raw[:2] == b"ME", raw[:16]
	    size = int(raw[2:8])
	    r = json.loads(raw[8:8 + size])
	    print("P" if r["type"] == "PERIODICAL" else "F", r["value"])
	    raw = raw[8 + size:]
	PY
}

@test "examples/nni-pytorch: TPE over 3 trials written for NNI, each with the tuner's proposal; series, metrics and report agree" {
	example_config c.yml 3 3
	run aah-runner create -c c.yml --seed 48
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	E=$AAH_WORKDIR/experiments/$id
	[ "$(count_events "$id" trial_finished succeeded)" -eq 3 ]
	run aah-runner metrics "$id"
	metrics=$output
	run aah-runner report "$id"
	echo "$output"
	for seq in 1 2 3; do
		t=$(printf '%06d' "$seq")
		T=$E/trials/$t
		# the parameters it received: the tuner's proposal, as parameter.cfg gave them
		/usr/bin/python3 - "$T" "$seq" <<-'PY'
		import json, re, sys
		t, seq = sys.argv[1], int(sys.argv[2])
		proposed = json.load(open(t + "/params.json"))["parameters"]
		assert sorted(proposed) == ["batch_size", "channels", "hidden", "lr", "momentum"], proposed
		cfg = json.load(open(t + "/parameter.cfg"))
		assert cfg["parameter_id"] == seq - 1 and cfg["parameters"] == proposed, cfg
		said = re.search(r"^parameters: (\{.*\})$", open(t + "/trial.log").read(), re.M)
		assert json.loads(said.group(1)) == proposed, (said.group(1), proposed)
		PY
		# the series: every intermediate record an epoch, in order; the last
		# one in `aah-runner metrics`; the final one the trial's result
		records "$T" > rec.txt
		[ "$(grep -c '^P ' rec.txt)" -eq 3 ]
		[ "$(grep -c '^F ' rec.txt)" -eq 1 ]
		/usr/bin/python3 - "$T" rec.txt <<-'PY'
		import json, sys
		t = sys.argv[1]
		rec = [l.split() for l in open(sys.argv[2])]
		periodical = [float(v) for k, v in rec if k == "P"]
		final = [float(v) for k, v in rec if k == "F"][0]
		lines = [json.loads(l) for l in open(t + "/metrics.jsonl")]
		close = lambda a, b: abs(a - b) <= 1e-12   # cJSON writes 15 digits where they read back close
		assert len(lines) == 3 and all(close(l["val_acc"], v) for l, v in zip(lines, periodical)), (lines, periodical)
		assert [float(l["nni_value"]) for l in lines] == periodical   # the record's own text, exact
		assert [l["epoch"] for l in lines] == [1, 2, 3]
		assert close(json.load(open(t + "/result.json"))["best_val_acc"], final)
		PY
		last=$(grep '^P ' rec.txt | tail -1 | cut -d' ' -f2)
		final=$(grep '^F ' rec.txt | cut -d' ' -f2)
		grep -q "^aah_trial_epochs{experiment=\"$id\",trial=\"$t\"} 3$" <<<"$metrics"
		value=$(sed -n "s/^aah_trial_last_accuracy{experiment=\"$id\",trial=\"$t\"} //p" <<<"$metrics")
		/usr/bin/python3 -c 'import sys; assert abs(float(sys.argv[1]) - float(sys.argv[2])) <= 1e-12, sys.argv' "$value" "$last"
		# the report's final value of the trial is its FINAL record
		/usr/bin/python3 - "$E/results.json" "$t" "$final" <<-'PY'
		import json, sys
		r = json.load(open(sys.argv[1]))
		tr = next(x for x in r["trials"] if x["id"] == sys.argv[2])
		assert tr["state"] == "succeeded" and tr["epochs"] == 3, tr
		assert abs(tr["best_acc"] - float(sys.argv[3])) <= 1e-12, (tr, sys.argv[3])
		PY
	done
	# real training on real data: better than guessing (10 classes), and the
	# report's best is the best trial's final result
	/usr/bin/python3 - "$E/results.json" <<-'PY'
	import json, sys
	r = json.load(open(sys.argv[1]))
	best = max(t["best_acc"] for t in r["trials"])
	assert best > 0.6 and r["final"]["best_acc"] == best, (best, r["final"])
	assert "no_score" in r
	PY
	grep -q 'Best trial: ' <<<"$(aah-runner report "$id")"
	echo "# best accuracy $(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["final"]["best_acc"])' "$E/results.json")" >&3
}

@test "examples/nni-pytorch: the runner killed mid-trial resumes; each intermediate result counts once" {
	example_config c.yml 1 3
	aah-runner create -c c.yml > create.log 2>&1 &
	RUNNER_PID=$!
	wait_for has_experiment
	id=$(only_experiment)
	T=$AAH_WORKDIR/experiments/$id/trials/000001
	wait_for grep -q '"epoch":1,' "$T/metrics.jsonl"   # the trial is mid-way
	kill -9 "$RUNNER_PID"
	wait "$RUNNER_PID" 2>/dev/null || true
	RUNNER_PID=
	! grep -q '"event":"trial_finished"' "$AAH_WORKDIR/experiments/$id/journal.jsonl"
	run aah-runner resume "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	[ "$(count_events "$id" trial_submitted)" -eq 1 ]   # followed, not run again
	[ "$(grep -o '"epoch":[0-9]*' "$T/metrics.jsonl" | tr '\n' ' ')" = '"epoch":1 "epoch":2 "epoch":3 ' ]
	records "$T" > rec.txt
	[ "$(grep -c '^P ' rec.txt)" -eq 3 ]
	/usr/bin/python3 -c 'import json,sys; assert abs(json.load(open(sys.argv[1]))["best_val_acc"] - float(sys.argv[2])) <= 1e-12' \
		"$T/result.json" "$(grep '^F ' rec.txt | cut -d' ' -f2)"
}

@test "examples/nni-pytorch: a trial whose metrics file is corrupted fails with the reason; its numbers never count" {
	# trial 2's metrics file starts with a mangled record (a header of
	# zeros, as a torn write leaves); the trial then writes its own after it
	cat > corrupt.sh <<-'EOF'
	#!/bin/sh
	[ "$NNI_TRIAL_SEQ_ID" != 1 ] || printf 'ME\000\000\000\000\000\000{"parameter_id": 1' >> "$NNI_SYS_DIR/.nni/metrics"
	exec "$@"
	EOF
	chmod +x corrupt.sh
	example_config c.yml 2 2 "$PWD/corrupt.sh /usr/bin/python3 $EXAMPLE/fashion_mnist.py"
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	E=$AAH_WORKDIR/experiments/$id
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	[ "$(count_events "$id" trial_finished failed)" -eq 1 ]
	why="'.nni/metrics': the record at byte 0 does not start with ME and its length in six digits"
	grep -qF "aah-runner: nni: $why" "$E/trials/000002/trial.log"
	grep '"event":"trial_finished"' "$E/journal.jsonl" | grep '"trial":"000002"' | grep -qF "$why"
	# the trial ran to its end and reported; none of it was read
	[ "$(grep -c '^epoch [12]: test accuracy' "$E/trials/000002/trial.log")" -eq 2 ]
	[ ! -e "$E/trials/000002/metrics.jsonl" ]
	run aah-runner report "$id"
	# the Score's best is trial 1's alone: the best of its intermediate
	# results and its FINAL one (docs/report.md: best(P)); an intermediate
	# can beat the FINAL on this tiny training
	/usr/bin/python3 - "$E/results.json" "$E/trials/000001/result.json" "$E/trials/000001/metrics.jsonl" <<-'PY'
	import json, sys
	r = json.load(open(sys.argv[1]))
	t = {x["id"]: x for x in r["trials"]}
	assert t["000002"]["state"] == "failed" and t["000002"]["epochs"] == 0, t["000002"]
	one = [json.load(open(sys.argv[2]))["best_val_acc"]]
	one += [json.loads(l)["val_acc"] for l in open(sys.argv[3]) if l.strip()]
	assert r["final"]["best_acc"] == max(one), (r["final"], one)
	PY
}
