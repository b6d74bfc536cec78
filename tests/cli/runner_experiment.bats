#!/usr/bin/env bats
# A real experiment on the local backend: 6 trials, 2 at a time, each a
# script that checks the launch contract it receives and writes result.json.

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

@test "6 trials with trialConcurrency 2: contract checked, status and list right" {
	TRIAL_SLEEP=0.3 write_config c.yml "trialConcurrency: 2" "maxTrialNum: 6" "maxExecDuration: 5m"
	export TRIAL_SLEEP=0.3
	run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	[[ ${lines[0]} == "$id" ]]
	[[ $output == *"experiment $id done"* ]]
	# Every trial succeeded, so every contract check passed.
	[ "$(count_events "$id" trial_finished succeeded)" -eq 6 ]
	[ "$(count_events "$id" trial_finished failed)" -eq 0 ]
	for t in 000001 000002 000003 000004 000005 000006; do
		d=$AAH_WORKDIR/experiments/$id/trials/$t
		[ -f "$d/result.json" ] && [ -f "$d/launch.json" ] && [ -f "$d/rank_table.json" ]
		[ -f "$d/params.json" ]   # the Random tuner proposed hyperparameters
		grep -q -- '--kernel_size=' "$d/launch.json"
	done
	# Never more than 2 trials at once: replay submissions and finishes.
	max=$(awk '/"event":"trial_submitted"/ {n++; if (n > m) m = n} /"event":"trial_finished"/ {n--} END {print m}' \
		"$AAH_WORKDIR/experiments/$id/journal.jsonl")
	[ "$max" -eq 2 ]
	grep -q '"event":"experiment_done".*"reason":"max_trials"' "$AAH_WORKDIR/experiments/$id/journal.jsonl"

	run aah-runner status "$id"
	[ "$status" -eq 0 ]
	[[ ${lines[0]} == "experiment $id (cli-test): done" ]]
	[[ ${lines[1]} == "trials: 6 done (6 succeeded, 0 failed), 0 running, 0 queued, 6 max" ]]
	[[ ${lines[2]} == "best accuracy: 0.8000"* ]]
	[[ ${lines[3]} == TRIAL*STATE*ATTEMPT*SLOT*NODES*STARTED*DURATION*BEST_ACC* ]]
	[ "$(printf '%s\n' "${lines[@]}" | grep -c ' succeeded ')" -eq 6 ]
	[[ ${lines[9]} == "000006  succeeded"*"0.8000"* ]]

	run aah-runner list
	[ "$status" -eq 0 ]
	[[ ${lines[0]} == ID*STATE*TRIALS*FAILED*BEST_ACC*CREATED*NAME ]]
	[[ ${lines[1]} == "$id"*done*6*0*0.8000*cli-test ]]
}

@test "GPU slots get disjoint CUDA_VISIBLE_DEVICES sets" {
	# processMode node: one rank per trial, given its slot's whole set
	TRIAL_YAML=$'  gpuNum: 2\n  processMode: node' write_config c.yml "trialConcurrency: 2" "maxTrialNum: 4"
	EXPECT_GPUS=1 TRIAL_SLEEP=0.2 run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	[ "$(count_events "$id" trial_finished succeeded)" -eq 4 ]
	log=$AAH_WORKDIR/experiments/$id/gpus.log
	[ "$(wc -l < "$log")" -eq 4 ]
	# Only the two slot sets appear, and every trial's set matches its slot.
	[ "$(cut -d' ' -f2 "$log" | sort -u | tr '\n' ' ')" = "0,1 2,3 " ]
	while read -r trial gpus; do
		grep -q "\"trial\":\"$trial\".*\"gpus\":\"$gpus\"" "$AAH_WORKDIR/experiments/$id/journal.jsonl"
	done < "$log"
}

@test "a failing trial is retried up to the cap, then marked failed" {
	TRIAL_YAML="  retries: 2" write_config c.yml "trialConcurrency: 1" "maxTrialNum: 3"
	TRIAL_FAIL_SEQ=2 run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	[ "$(count_events "$id" trial_finished failed)" -eq 3 ]      # attempts 1, 2 and 3
	[ "$(count_events "$id" trial_retry)" -eq 2 ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 2 ]
	run aah-runner status "$id"
	[[ $output == *"000002  failed        3 "*"a rank exited with status 7"* ]]
	grep -q "failing on purpose" "$AAH_WORKDIR/experiments/$id/trials/000002/trial.log"
}

@test "a trial over its timeout is canceled and counts as failed" {
	TRIAL_YAML="  timeout: 1s" write_config c.yml "maxTrialNum: 1"
	TRIAL_SLEEP=30 run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	[ "$(count_events "$id" trial_finished failed)" -eq 1 ]
	grep -q '"reason":"timed out: over the trial timeout of 1s"' "$AAH_WORKDIR/experiments/$id/journal.jsonl"
	# The sleeping process is gone.
	! pgrep -f "contract_trial.sh" -u "$(id -u)" -a | grep -q "$id"
}

@test "maxExecDuration stops running trials and ends the experiment" {
	write_config c.yml "trialConcurrency: 2" "maxTrialNum: 10" "maxExecDuration: 2s"
	# Trials that would sleep an hour: a runner that waited for them fails
	# loudly on `timeout`, not on a wall-clock bet.
	TRIAL_SLEEP=3600 run timeout 300 aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	grep -q '"event":"experiment_done".*"reason":"max_duration"' "$AAH_WORKDIR/experiments/$id/journal.jsonl"
	[ "$(count_events "$id" trial_finished canceled)" -eq 2 ]
	run aah-runner status "$id"
	[[ ${lines[0]} == *": done" ]]
}

@test "stop, then resume, finishes the experiment without rerunning finished trials" {
	write_config c.yml "trialConcurrency: 1" "maxTrialNum: 4"
	export TRIAL_SLEEP=0.5 TRIAL_RUN_LOG=$WORK/runs.log
	run aah-runner create -c c.yml --detach
	[ "$status" -eq 0 ]
	id=${lines[0]}
	[[ $output == *"running in the background"* ]]
	# Wait for the first trial to finish, then stop.
	wait_for test -s "$TRIAL_RUN_LOG"
	run aah-runner stop "$id"
	[ "$status" -eq 0 ]
	[[ $output == "experiment $id stopped" ]]
	run aah-runner status "$id"
	[[ ${lines[0]} == *": stopped" ]]
	grep -q '"state":"canceled","exit_code":[-0-9]*,"reason":"stopped"' "$AAH_WORKDIR/experiments/$id/journal.jsonl" ||
		[ "$(count_events "$id" trial_finished succeeded)" -ge 1 ]
	run aah-runner resume "$id"
	[ "$status" -eq 0 ]
	[[ $output == *"experiment $id done"* ]]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 4 ]
	# Each trial completed exactly once.
	[ "$(cut -d' ' -f1 "$TRIAL_RUN_LOG" | sort | uniq -d | wc -l)" -eq 0 ]
	[ "$(wc -l < "$TRIAL_RUN_LOG")" -eq 4 ]
	run aah-runner resume "$id"
	[[ $output == *"already done"* ]]
}

@test "a second runner on the same experiment is refused" {
	write_config c.yml "maxTrialNum: 2"
	TRIAL_SLEEP=3600 aah-runner create -c c.yml --detach > out.txt
	id=$(head -1 out.txt)
	# The runner holds the experiment once it has journaled its start.
	wait_for grep -q '"event":"runner_started"' "$AAH_WORKDIR/experiments/$id/journal.jsonl"
	run aah-runner resume "$id"
	[ "$status" -ne 0 ]
	[[ $output == *"already being run by process"* ]]
	aah-runner stop "$id"
}

@test "a runner whose trials run on wakes at its poll interval, not in a spin" {
	write_config c.yml "trialConcurrency: 2" "maxTrialNum: 2"
	TRIAL_SLEEP=3600 aah-runner create -c c.yml --detach > out.txt
	id=$(head -1 out.txt)
	J=$AAH_WORKDIR/experiments/$id/journal.jsonl
	both() { [ "$(grep -c '"event":"trial_submitted"' "$J")" -eq 2 ]; }
	wait_for both
	pid=$(grep '"event":"runner_started"' "$J" | sed 's/.*"pid":\([0-9]*\).*/\1/')
	# Its main thread blocks between poll rounds: one wake a round at the
	# local backend's 0.05 s, about 40 in 2 s. The loop that waited three
	# times a round's few microseconds woke some 16,000 times and took a
	# fifth of a core from the trainers beside it (`make run`).
	switches() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$pid/status"; }
	a=$(switches)
	sleep 2
	b=$(switches)
	aah-runner stop "$id"
	echo "# the runner woke $((b - a)) times in 2 s with 2 trials running" >&3
	[ $((b - a)) -le 200 ]
}

@test "tuner placed in the trial: the trial proposes before it runs" {
	TUNER=Random write_config c.yml "maxTrialNum: 3" "trialConcurrency: 2"
	sed -i 's/  builtinTunerName: Random/  builtinTunerName: Random\n  placement: trial/' c.yml
	run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	[ "$(count_events "$id" trial_finished succeeded)" -eq 3 ]
	for t in 000001 000002 000003; do
		d=$AAH_WORKDIR/experiments/$id/trials/$t
		grep -q '"propose"' "$d/launch.json"
		[ -f "$d/params.json" ]
		# The hyperparameters reached the trial as --name=value.
		grep -q '"params":" dropout_rate=' "$d/result.json"
	done
}

@test "same seed, same run: proposals and trainer seeds repeat; another seed differs" {
	write_config c.yml "trialConcurrency: 1" "maxTrialNum: 3" "maxExecDuration: 5m"
	export TRIAL_SLEEP=0
	for s in 5 5 6; do
		run aah-runner create -c c.yml --seed $s
		[ "$status" -eq 0 ]
	done
	ids=($(ls -tr "$AAH_WORKDIR/experiments"))
	[ "${#ids[@]}" -eq 3 ]
	# What a trial is given: its hyperparameters and its AAH_SEED.
	given() {
		local d=$AAH_WORKDIR/experiments/$1/trials/$2
		cat "$d/params.json"
		echo "seed=$(jq -r '.ranks[0].env.AAH_SEED' "$d/launch.json")"
	}
	seeds=""
	for t in 000001 000002 000003; do
		a=$(given "${ids[0]}" $t) b=$(given "${ids[1]}" $t) c=$(given "${ids[2]}" $t)
		[[ $a == *seed=[1-9]* ]]
		[ "$a" = "$b" ]
		[ "$a" != "$c" ]
		seeds+="${a##*seed=} "
	done
	# Each trial of one experiment gets its own trainer seed.
	[ "$(tr ' ' '\n' <<<"$seeds" | sed '/^$/d' | sort -u | wc -l)" -eq 3 ]
}

@test "master placement proposes ahead: every trial gets its own proposal, none is left over; idle per slot" {
	write_config c.yml "trialConcurrency: 2" "maxTrialNum: 5" "maxExecDuration: 5m"
	export TRIAL_SLEEP=0.3
	run aah-runner create -c c.yml --seed 4
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	E=$AAH_WORKDIR/experiments/$id
	[ "$(count_events "$id" trial_finished succeeded)" -eq 5 ]
	[ "$(ls "$E/trials")" = "$(printf '%s\n' 000001 000002 000003 000004 000005)" ]
	# five proposals, all different (a proposal made ahead is used once)
	[ "$(cat "$E"/trials/*/params.json | jq -c .parameters | sort -u | wc -l)" -eq 5 ]
	run aah-runner report "$id"
	[ "$status" -eq 0 ]
	[[ $output == *"Slot idle:             slot 0 "*"%, slot 1 "*"%"* ]]
	[ "$(jq '.slot_idle | length' "$E/results.json")" -eq 2 ]
	jq -e '.slot_idle | all(. >= 0 and . <= 1)' "$E/results.json"
}

@test "one slot, master placement: each trial is proposed after its elder's result" {
	TUNER=TPE write_config c.yml "trialConcurrency: 1" "maxTrialNum: 4" "maxExecDuration: 5m"
	export TRIAL_SLEEP=0.3
	run aah-runner create -c c.yml --seed 2
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	[ "$(count_events "$id" trial_finished succeeded)" -eq 4 ]
	# Nothing is proposed ahead below 8 slots: trial k's proposal was made
	# from the k - 1 results before it (one made ahead would know one less).
	run jq -r 'select(.event == "trial_submitted") | "\(.trial_seq) \(.propose_learnt)"' \
		"$AAH_WORKDIR/experiments/$id/journal.jsonl"
	echo "$output"
	[ "$output" = "1 0
2 1
3 2
4 3" ]
}

@test "master placement journals each network's FLOPs per image; the report charges them without reading arch.json" {
	TUNER=NetworkMorphism write_config c.yml "trialConcurrency: 2" "maxTrialNum: 4" \
		"maxExecDuration: 5m"
	sed -i 's|^tuner:$|tuner:\n  classArgs: { input_width: 32, input_channel: 3, n_output_node: 10 }|' c.yml
	run aah-runner create -c c.yml --seed 3
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	E=$AAH_WORKDIR/experiments/$id
	[ "$(count_events "$id" trial_finished succeeded)" -eq 4 ]
	# every first submission names its proposal's network
	run jq -r 'select(.event == "trial_submitted") |
		"\(.trial_seq) \(.arch_flops_fwd > 0) \(.arch_flops_bwd > .arch_flops_fwd) \(.arch_classes)"' \
		"$E/journal.jsonl"
	echo "$output"
	[ "$output" = "1 true true 10
2 true true 10
3 true true 10
4 true true 10" ]
	# the same figures as from every arch.json: the journal stripped of them
	cp -a "$E" "$AAH_WORKDIR/stripped"
	jq -c 'del(.arch_flops_fwd, .arch_flops_bwd, .arch_classes)' "$E/journal.jsonl" \
		> "$AAH_WORKDIR/stripped/journal.jsonl"
	! grep -q arch_flops "$AAH_WORKDIR/stripped/journal.jsonl"
	run aah-runner report "$AAH_WORKDIR/stripped" --epoch-charge aiperf -q -o "$AAH_WORKDIR/from-arch"
	[ "$status" -eq 0 ]
	# and the journal's are read: a trial's arch.json gone (not the best's,
	# which the report shows) charges as before
	best=$(jq -r '.best_trial' "$AAH_WORKDIR/from-arch/results.json")
	for t in 000001 000002 000003 000004; do [ "$t" = "$best" ] || { gone=$t; break; }; done
	rm "$E/trials/$gone/arch.json"
	run aah-runner report "$id" --epoch-charge aiperf -q -o "$AAH_WORKDIR/from-journal"
	[ "$status" -eq 0 ]
	/usr/bin/python3 - "$AAH_WORKDIR/from-arch/results.json" "$AAH_WORKDIR/from-journal/results.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["epoch_charge"] == b["epoch_charge"] == "aiperf", (a["epoch_charge"], b["epoch_charge"])
assert a["final"]["flops"] > a["final"]["flops_images"] > 0, a["final"]
assert a["final"] == b["final"], (a["final"], b["final"])
assert a["samples"] == b["samples"]
PY
}
