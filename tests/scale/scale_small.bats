#!/usr/bin/env bats
# The scale harness (docs/scale.md) at a size `make test` affords: 12 slots,
# 48 trials of the stand-in trainer, the tuner on the master. It asserts
# what must hold at any size, counted from the journal, never a duration:
# every trial settles, the runner proposed each one, and once the first
# wave is out a free slot seldom waits for a proposal (the master's thread
# keeps the next ones ready). `make scale` runs the large sizes.

load ../cli/helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

@test "12 slots, 48 trials, master placement: all settle, each proposed by the runner, few slots wait for a proposal" {
	run /usr/bin/python3 "$AAH_ROOT/tests/scale/scale.py" run --slots 12 --trials 48 \
		--placement master --compress 6000 --work "$WORK/s" --keep --timeout 300 --out "$WORK/r.json"
	echo "$output"
	[ "$status" -eq 0 ]
	R=$WORK/r.json
	[ "$(jq .runner_rc "$R")" -eq 0 ]
	[ "$(jq .trials_created "$R")" -eq 48 ]
	[ "$(jq .trials_settled "$R")" -eq 48 ]
	# the stand-in only succeeds or stops early (AIPerf's patience)
	[ "$(jq '.states | (.succeeded // 0) + (.early_stopped // 0)' "$R")" -eq 48 ]
	[ "$(jq .idle.slots_used "$R")" -eq 12 ]
	J=$(jq -r .expdir "$R")/journal.jsonl
	# the runner proposed every trial, on its thread, and said how long it took
	[ "$(jq -c 'select(.event == "trial_submitted" and .attempt == 1 and .propose_s != null)' "$J" | wc -l)" -eq 48 ]
	# Master-caused gaps past the first wave: a proposal not ready when a
	# slot freed. Proposed one at a time when the slot frees (no thread, or
	# nothing ready ahead), each of the 36 trials would wait; with one kept
	# ready (12 slots / 8), only a burst of trials ending at once does (a
	# count, not a duration: at most half; 4 to 6 seen on 2 cores).
	waits=$(jq -c 'select(.event == "trial_submitted" and .trial_seq > 12 and .proposal_wait_s != null)' "$J" | wc -l)
	echo "waits past the first wave: $waits"
	[ "$waits" -le 18 ]
	# status and the report read the experiment whole
	[ "$(jq .end_commands.status.rc "$R")" -eq 0 ]
	[ "$(jq .end_commands.report.rc "$R")" -eq 0 ]
}

@test "placement trial past the tuner's proposer limit: check says from which trial the runner proposes" {
	cat > c.yml <<-YML
	experimentName: scale-check
	trialConcurrency: 4
	maxTrialNum: 1500
	trainingServicePlatform: local
	tuner:
	  builtinTunerName: NetworkMorphism
	  placement: trial
	  classArgs:
	    optimize_mode: maximize
	trial:
	  command: aah-trial
	YML
	run aah-runner check c.yml
	[ "$status" -eq 0 ]
	[[ $output == *"trials 1 to 1000 propose in their own containers; the runner proposes from trial 1001 on"* ]]
	sed -i 's/maxTrialNum: 1500/maxTrialNum: 1000/' c.yml
	run aah-runner check c.yml
	[ "$status" -eq 0 ]
	[[ $output != *"the runner proposes"* ]]
}
