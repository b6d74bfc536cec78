#!/usr/bin/env bats
# NNI's trial protocol (docs/nni.md) on the local backend, with Debian's
# python3 and no NNI installed: aah's shipped nni module writes the bytes
# NNI's own SDK writes (tests/fixtures/nni/golden, made by NNI v2.10.1's
# code), the runner reads those bytes as a trial's records, trials written
# for NNI get the tuner's proposal and report their series and result, and
# a trial that reports garbage fails with its reason and no number.

load helpers

MODULE=$AAH_ROOT/runner/nni/python
GOLDEN=$AAH_ROOT/tests/fixtures/nni/golden
SPACE=$AAH_ROOT/tests/fixtures/nni/search_space.json
PY=/usr/bin/python3

setup() { setup_workdir; }
teardown() { teardown_workdir; }

# nni_config FILE [lines...]: an NNI v2 config running nni_trial.py with TPE.
nni_config() {
	local f=$1; shift
	{
		echo "experimentName: nni-protocol"
		echo "searchSpaceFile: $SPACE"
		echo "trialCommand: $PY $AAH_ROOT/tests/fixtures/trials/nni_trial.py"
		echo "trialCodeDirectory: ."
		echo "trialGpuNumber: 0"
		echo "tuner:"
		echo "  name: TPE"
		echo "  classArgs: {optimize_mode: maximize}"
		echo "trainingService:"
		echo "  platform: local"
		for line in "$@"; do echo "$line"; done
	} > "$f"
}

trial_dir() { echo "$AAH_WORKDIR/experiments/$1/trials/$2"; }

@test "aah's nni module writes the bytes NNI v2.10.1's own SDK writes, to the file and on stdout" {
	for platform in local remote; do
		mkdir -p "sys-$platform"
		cp "$GOLDEN/parameter.cfg" "sys-$platform/"
		env -i PATH=/usr/bin:/bin PYTHONPATH="$MODULE" NNI_PLATFORM=$platform NNI_EXP_ID=golden01 \
			NNI_TRIAL_JOB_ID=000001 NNI_SYS_DIR="$PWD/sys-$platform" \
			NNI_OUTPUT_DIR="$PWD/sys-$platform" NNI_TRIAL_SEQ_ID=0 MULTI_PHASE=false \
			$PY "$AAH_ROOT/tests/fixtures/nni/trial_calls.py" > "stdout-$platform"
	done
	cmp sys-local/.nni/metrics "$GOLDEN/metrics"
	cmp stdout-remote "$GOLDEN/stdout"
	[ "$(wc -c < sys-local/.nni/metrics)" -eq 459 ]
	# the module that ran is aah's: no NNI is installed here
	run env PYTHONPATH="$MODULE" $PY -c 'import nni; print(nni.__version__, nni.__file__)'
	[ "$output" = "0+aah $MODULE/nni/__init__.py" ]
}

@test "a user's own NNI is imported in place of aah's, as nni and as nni.trial" {
	mkdir -p user/nni
	echo 'OWN = "the user'"'"'s"' > user/nni/__init__.py
	echo 'def get_trial_id(): return "theirs"' > user/nni/trial.py
	run env PYTHONPATH="$MODULE:$PWD/user" $PY -c 'import nni, nni.trial; print(nni.OWN, nni.__file__, nni.trial.get_trial_id())'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "the user's $PWD/user/nni/__init__.py theirs" ]
}

@test "without NNI_PLATFORM the module runs standalone, as NNI's: no parameters, nothing written" {
	run env -u NNI_PLATFORM PYTHONPATH="$MODULE" $PY -c 'import nni; print(nni.get_next_parameter(), nni.get_trial_id(), nni.get_sequence_id()); nni.report_final_result(0.5)'
	[ "$status" -eq 0 ]
	[[ $output == *"{} STANDALONE 0" ]]
	[ ! -e .nni ]
}

@test "NNI's own bytes, reported by a trial, become its epochs, its result and the report's numbers" {
	cat > replay.sh <<-EOF
	#!/bin/sh
	# a trial that reports exactly what NNI's SDK wrote: the golden records
	mkdir -p "\$NNI_SYS_DIR/.nni" && cat "$GOLDEN/metrics" >> "\$NNI_SYS_DIR/.nni/metrics"
	EOF
	chmod +x replay.sh
	printf 'trialCommand: %s\ntrialConcurrency: 1\nmaxTrialNumber: 1\ntrainingService:\n  platform: local\n' \
		"$PWD/replay.sh" > c.yml
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	T=$(trial_dir "$id" 000001)
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	grep -q '"best_val_acc":0.8125' "$AAH_WORKDIR/experiments/$id/journal.jsonl"
	[ "$(grep -c '"source":"nni"' "$T/metrics.jsonl")" -eq 3 ]
	run aah-runner metrics "$id"
	[[ $output == *'aah_trial_epochs{experiment="'$id'",trial="000001"} 3'* ]]
	[[ $output == *'aah_trial_last_accuracy{experiment="'$id'",trial="000001"} 0.75'* ]]
	[[ $output == *'aah_trial_best_accuracy{experiment="'$id'",trial="000001"} 0.8125'* ]]
	run aah-runner report "$id"
	[[ $output == *"Final Score:           none: the trials counted no FLOPs"* ]]
	[[ $output == *"Best trial:            000001 (accuracy 81.25%"* ]]
	$PY - "$AAH_WORKDIR/experiments/$id/results.json" <<-'PY'
	import json, sys
	r = json.load(open(sys.argv[1]))
	t = r["trials"][0]
	assert (t["state"], t["epochs"], t["best_acc"]) == ("succeeded", 3, 0.8125), t
	assert r["final"]["best_acc"] == 0.8125 and "no_score" in r, r["final"]
	PY
}

@test "TPE trials written for NNI: each gets the tuner's proposal in parameter.cfg and reports its series and result" {
	nni_config c.yml "trialConcurrency: 2" "maxTrialNumber: 3" "seed: 11"
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	[ "$(count_events "$id" trial_finished succeeded)" -eq 3 ]
	$PY - "$AAH_WORKDIR/experiments/$id" "$id" <<-'PY'
	import json, sys
	exp, eid = sys.argv[1], sys.argv[2]
	journal = [json.loads(l) for l in open(exp + "/journal.jsonl")]
	finished = {e["trial"]: e for e in journal if e["event"] == "trial_finished"}
	seen = set()
	for seq in (1, 2, 3):
	    d = "%s/trials/%06d" % (exp, seq)
	    proposed = json.load(open(d + "/params.json"))["parameters"]      # the tuner's
	    cfg = json.load(open(d + "/parameter.cfg"))                        # what NNI's SDK reads
	    got = json.load(open(d + "/received.json"))                        # what the trial got
	    assert cfg == {"parameter_id": seq - 1, "parameter_source": "algorithm",
	                   "parameters": proposed, "parameter_index": 0}, (cfg, proposed)
	    assert got == {"parameters": proposed, "trial": "%06d" % seq, "experiment": eid,
	                   "sequence": seq - 1}, got
	    seen.add(json.dumps(proposed, sort_keys=True))
	    x = proposed["x"]
	    lines = [json.loads(l) for l in open(d + "/metrics.jsonl")]
	    assert [l["epoch"] for l in lines] == [1, 2, 3], lines
	    for l in lines:
	        assert abs(l["val_acc"] - (x / 4 + 0.1 * l["epoch"])) < 1e-12, l
	    final = round(x / 4 + 0.3 + 0.05, 6)
	    res = json.load(open(d + "/result.json"))
	    assert res["status"] == "succeeded" and res["best_val_acc"] == final, res
	    assert finished["%06d" % seq]["best_val_acc"] == final
	assert len(seen) == 3, "three distinct proposals"
	PY
	# nothing was appended to the command: NNI runs trialCommand as written
	grep -q '"argv":\s*\["/usr/bin/python3", "[^"]*nni_trial.py"\]' "$(trial_dir "$id" 000001)/launch.json"
	# the files the runner wrote are what docs/nni.md documents, field by field
	T=$(trial_dir "$id" 000001)
	run $PY "$AAH_ROOT/tests/fixtures/docs/check_formats.py" "$AAH_ROOT/docs/nni.md" \
		aah-metrics/1 "$T/metrics.jsonl" aah-result/1 "$T/result.json" aah-nni-run/1 "$T/.nni/run.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "a trial that reports garbage fails with the reason in its log, and no number of it counts" {
	nni_config c.yml "trialConcurrency: 2" "maxTrialNumber: 5" \
		"trial:" "  env:" "    NNI_TRIAL_MODES: truncate,other-id,nan,string,no-final"
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	[ "$(count_events "$id" trial_finished failed)" -eq 5 ]
	E=$AAH_WORKDIR/experiments/$id
	check() {   # trial, what its log and the journal must say
		grep -q "aah-runner: nni: .*$2.*; the trial fails" "$E/trials/$1/trial.log" ||
			{ echo "trial $1 log lacks '$2':"; cat "$E/trials/$1/trial.log"; return 1; }
		grep '"event":"trial_finished"' "$E/journal.jsonl" | grep "\"trial\":\"$1\"" | grep -q "$2"
	}
	check 000001 "'.nni/metrics': the record at byte 1[0-9][0-9] is cut short: its header says 99 bytes, 22 follow"
	check 000002 "comes from trial '000099', not from this one ('000002')"
	check 000003 "'value' is 'NaN', not a number"
	check 000004 "'value' is '.*0\\.9.*', not a number"
	check 000005 "ended without a final result (it reported 3 intermediate results"
	run aah-runner report "$id"
	# what they did report before the garbage counts; the garbage never does
	$PY - "$E/results.json" <<-'PY'
	import json, sys
	def no_constant(c):
	    raise ValueError(f"results.json holds {c}")
	r = json.load(open(sys.argv[1]), parse_constant=no_constant)
	epochs = {t["id"]: t["epochs"] for t in r["trials"]}
	assert epochs == {"000001": 1, "000002": 1, "000003": 1, "000004": 3, "000005": 3}, epochs
	assert all(t["state"] == "failed" for t in r["trials"])
	assert r["final"]["best_acc"] < 0.99, r["final"]
	PY
	run $PY "$AAH_ROOT/tests/fixtures/docs/check_formats.py" "$AAH_ROOT/docs/nni.md" \
		aah-result/1 "$E/trials/000003/result.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "on another NNI platform the trial prints its records and the runner reads them from the log" {
	nni_config c.yml "trialConcurrency: 1" "maxTrialNumber: 1" \
		"trial:" "  env:" "    NNI_PLATFORM: remote"
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	T=$(trial_dir "$id" 000001)
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	[ "$(grep -c "^NNISDK_MEb'" "$T/trial.log")" -eq 4 ]
	[ ! -s "$T/.nni/metrics" ]
	[ "$(grep -c '"source":"nni"' "$T/metrics.jsonl")" -eq 3 ]
}

@test "check reads NNI's v2 config and says what became of each key; a key aah cannot take exits 2 at its place" {
	nni_config c.yml "maxExperimentDuration: 2h" "nniManagerIp: 10.0.0.1"
	run aah-runner check c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"c.yml: NNI v2 experiment config, read as aah's keys:"* ]]
	[[ $output == *"c.yml:3:1 trialCommand -> trial.command (run as written"* ]]
	[[ $output == *"c.yml:7:3 tuner.name -> tuner.builtinTunerName"* ]]
	[[ $output == *"c.yml:11:1 maxExperimentDuration -> maxExecDuration (7200 s)"* ]]
	[[ $output == *"c.yml:12:1 nniManagerIp: no effect"* ]]
	[[ $output == *"c.yml: ok (local backend, tuner TPE, 1 trial(s) at a time)"* ]]
	sed -i 's/platform: local/platform: openpai/' c.yml
	run aah-runner check c.yml
	echo "$output"
	[ "$status" -eq 2 ]
	[[ $output == *"c.yml:10:13: 'trainingService.platform' is 'openpai': OpenPAI is a service aah does not drive"* ]]
}

@test "a retry runs in a place of its own: NNI's SDK writes there, and its records decide the trial" {
	nni_config c.yml "trialConcurrency: 1" "maxTrialNumber: 1" \
		"trial:" "  retries: 1" "  env:" "    NNI_TRIAL_MODE: fail-once"
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	T=$(trial_dir "$id" 000001)
	[ "$(count_events "$id" trial_finished failed)" -eq 1 ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	$PY - "$T" <<-'PY'
	import json, sys
	t = sys.argv[1]
	first = json.load(open(t + "/result.json"))
	assert first["status"] == "failed" and first["nni_run"] == 1, first
	retry = json.load(open(t + "/attempt-2/result.json"))
	assert retry["status"] == "succeeded" and retry["nni_run"] == 2, retry
	cfg = json.load(open(t + "/attempt-2/parameter.cfg"))
	got = json.load(open(t + "/attempt-2/received.json"))
	assert got["parameters"] == cfg["parameters"], (got, cfg)
	lines = [json.loads(l) for l in open(t + "/attempt-2/metrics.jsonl")]
	assert [(l["nni_run"], l["epoch"]) for l in lines] == [(1, 1), (2, 1), (2, 2), (2, 3)], lines
	assert json.load(open(t + "/.nni/run.json"))["run"] == 2
	PY
	[ ! -e "$T/attempt-2/.nni/run.json" ]
	[ -s "$T/attempt-2/.nni/metrics" ]
}
