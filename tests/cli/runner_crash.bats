#!/usr/bin/env bats
# Crash safety: the runner is killed with SIGKILL at many random moments of
# a real experiment and resumed each time. No finished result may be lost
# and no finished trial may run twice.

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

@test "SIGKILL at random moments, then resume: nothing lost, nothing run twice" {
	TRIAL_YAML="  retries: 1" write_config c.yml "trialConcurrency: 2" "maxTrialNum: 16"
	export TRIAL_RUN_LOG=$WORK/runs.log
	run aah-runner create -c c.yml --no-run
	[ "$status" -eq 0 ]
	id=${lines[0]}
	RANDOM=${AAH_TEST_SEED:-4242}
	kills=0
	for round in $(seq 1 60); do
		# Trials take 0.2-0.5 s; the runner is killed 0-0.3 s after it
		# starts, before it could finish what is left on a fast machine
		# (a run whose rounds outlived the experiment killed it 3 times)
		TRIAL_SLEEP=0.$((2 + RANDOM % 4)) aah-runner resume "$id" -q > "resume.$round.log" 2>&1 &
		pid=$!
		sleep "0.$((RANDOM % 3))$((RANDOM % 10))"
		if kill -0 "$pid" 2>/dev/null; then
			kill -9 "$pid"
			kills=$((kills + 1))
		fi
		{ wait "$pid"; } 2>/dev/null || true
		grep -q '"event":"experiment_done"' "$AAH_WORKDIR/experiments/$id/journal.jsonl" && break
	done
	# Finish whatever is left without interference.
	for _ in 1 2 3; do
		grep -q '"event":"experiment_done"' "$AAH_WORKDIR/experiments/$id/journal.jsonl" && break
		TRIAL_SLEEP=0.1 aah-runner resume "$id" -q
	done
	echo "# killed the runner $kills times" >&3
	[ "$kills" -ge 5 ]
	grep -q '"event":"experiment_done"' "$AAH_WORKDIR/experiments/$id/journal.jsonl"

	# Every trial finished exactly once as succeeded, with its result's accuracy.
	[ "$(count_events "$id" trial_finished succeeded)" -eq 16 ]
	[ "$(count_events "$id" trial_finished failed)" -eq 0 ]
	# No trial body completed twice.
	[ "$(wc -l < "$TRIAL_RUN_LOG")" -eq 16 ]
	[ "$(cut -d' ' -f1 "$TRIAL_RUN_LOG" | sort -n | uniq | wc -l)" -eq 16 ]
	# The journal is whole (every line valid JSON, consecutive seq numbers)
	# and holds each trial's own result.
	/usr/bin/python3 - "$AAH_WORKDIR/experiments/$id" <<'PY'
import json, sys
exp = sys.argv[1]
events = [json.loads(l) for l in open(exp + "/journal.jsonl")]
assert [e["seq"] for e in events] == list(range(len(events))), "journal seq numbers are not consecutive"
done = {e["trial"]: e for e in events if e["event"] == "trial_finished"}
assert len(done) == 16, done.keys()
for t, e in done.items():
    res = json.load(open(f"{exp}/trials/{t}/result.json"))
    assert e["state"] == "succeeded" and e["best_val_acc"] == res["best_val_acc"], (t, e, res)
PY
	run aah-runner status "$id"
	[[ ${lines[1]} == "trials: 16 done (16 succeeded, 0 failed), 0 running, 0 queued, 16 max" ]]
}
