#!/usr/bin/env bats
# A trial that finished stays finished (issue 13, items 1 and 2): a result
# on disk wins over a cancel (stop, maxExecDuration) that came after it, and
# a resumed runner sees a trial that ended as ended even when nobody reaps
# it. Every wait is on an event (a file, a journal line, a process state),
# bounded at 60 s, and fails loudly at the bound.

load helpers

setup() {
	setup_workdir
	export RUNS=$WORK/runs.log GATE=$WORK/gate LINGER_OFF=$WORK/no-linger
	# The trial: marks its start, waits for the gate, writes result.json,
	# marks "done", then (unless told not to) lingers until it is killed,
	# so that a cancel comes after the result is on disk.
	cat > "$WORK/trial.sh" <<'SH'
#!/bin/sh
echo "start $AAH_TRIAL_ID $$" >> "$RUNS"
i=0
while [ ! -e "$GATE" ]; do
	i=$((i + 1)); [ "$i" -le 600 ] || { echo "trial: the gate never opened" >&2; exit 9; }
	sleep 0.1
done
printf '{"format":"aah-result/1","status":"succeeded","stop_reason":"budget","best_val_acc":0.75,"best_epoch":1,"final_val_acc":0.75,"epochs_run":1,"train_flops":1e9,"eval_flops":1e8,"total_flops":1.1e9,"wall_seconds":1,"precision":"fp32","devices":["cpu"],"world_size":1,"params":""}\n' \
	> "$AAH_TRIAL_DIR/result.json.tmp"
mv "$AAH_TRIAL_DIR/result.json.tmp" "$AAH_TRIAL_DIR/result.json"
echo "done $AAH_TRIAL_ID $$" >> "$RUNS"
i=0
while [ ! -e "$LINGER_OFF" ] && [ "$i" -lt 1200 ]; do i=$((i + 1)); sleep 0.1; done
exit 0
SH
	chmod +x "$WORK/trial.sh"
}

teardown() {
	[ -n "${HELPER_PID:-}" ] && kill -9 "$HELPER_PID" 2>/dev/null
	teardown_workdir
}

# wait_for WHAT COMMAND...: run COMMAND until it succeeds, up to 60 s.
wait_for() {
	local what=$1; shift
	for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
	echo "# gave up after 60 s waiting for $what" >&3
	return 1
}

has_events() { # ID EVENT N: the journal holds at least N EVENT lines
	[ "$(count_events "$1" "$2")" -ge "$3" ]
}

starts() { grep -c '^start ' "$RUNS" || true; }

@test "kill, resume, stop after the trial wrote its result, resume: the trial ran once and succeeded" {
	TRIAL_COMMAND=$WORK/trial.sh write_config c.yml "maxTrialNum: 1"
	aah-runner create -c c.yml -q > create.log 2>&1 &
	runner=$!
	wait_for "the experiment" has_experiment
	id=$(only_experiment)
	wait_for "the trial's submission" has_events "$id" trial_submitted 1
	wait_for "the trial's start" test -s "$RUNS"
	kill -9 "$runner"
	wait "$runner" || true

	aah-runner resume "$id" -q > resume1.log 2>&1 &
	resumed=$!
	wait_for "the resumed runner" has_events "$id" runner_started 2
	touch "$GATE"
	wait_for "result.json" test -e "$AAH_WORKDIR/experiments/$id/trials/000001/result.json"
	wait_for "the trial's done mark" grep -q '^done ' "$RUNS"
	run aah-runner stop "$id"
	[ "$status" -eq 0 ]
	wait "$resumed" || true

	touch "$LINGER_OFF"
	run timeout 120 aah-runner resume "$id" -q
	echo "$output"
	[ "$status" -eq 0 ]
	cat "$RUNS"
	[ "$(starts)" -eq 1 ]
	journal "$id" | grep '"event":"trial_finished"'
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	[ "$(count_events "$id" trial_finished)" -eq 1 ]
	run aah-runner status "$id"
	[[ ${lines[1]} == "trials: 1 done (1 succeeded, 0 failed), 0 running, 0 queued, 1 max" ]]
}

@test "maxExecDuration running out after the trial wrote its result: the trial succeeded" {
	TRIAL_COMMAND=$WORK/trial.sh write_config c.yml "maxTrialNum: 1" "maxExecDuration: 5s"
	touch "$GATE"
	run timeout 120 aah-runner create -c c.yml -q
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	# The budget must have run out while the trial lingered, after its result.
	if ! grep -q '^done ' "$RUNS"; then
		echo "# the trial did not write its result within the 5 s budget: the machine is too loaded for this test" >&3
		false
	fi
	grep -q '"event":"experiment_done".*"reason":"max_duration"' "$AAH_WORKDIR/experiments/$id/journal.jsonl"
	journal "$id" | grep '"event":"trial_finished"'
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	[ "$(starts)" -eq 1 ]
}

# The runner runs under a parent that never reaps (a subreaper, as a PID 1
# without init would be): once the runner is killed, the finished trial
# stays a zombie under it. Resume must see it as ended and settle it.
@test "resume settles a finished trial that nobody reaped (a zombie)" {
	TRIAL_COMMAND=$WORK/trial.sh write_config c.yml "maxTrialNum: 1"
	touch "$LINGER_OFF"
	/usr/bin/python3 - aah-runner create -c c.yml -q > create.log 2>&1 <<'PY' &
import ctypes, os, sys, time
PR_SET_CHILD_SUBREAPER = 36
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
if os.fork() == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
time.sleep(600)   # never wait(): children stay zombies
PY
	HELPER_PID=$!
	wait_for "the experiment" has_experiment
	id=$(only_experiment)
	wait_for "the trial's start" test -s "$RUNS"
	wait_for "the runner's pid" has_events "$id" runner_started 1
	runner=$(journal "$id" | grep '"event":"runner_started"' | sed 's/.*"pid":\([0-9]*\).*/\1/')
	trial=$(sed -n 's/^start [0-9]* \([0-9]*\)$/\1/p' "$RUNS")
	kill -9 "$runner"
	touch "$GATE"
	zombie() { [ "$(awk '{ print $3 }' "/proc/$trial/stat" 2>/dev/null)" = Z ]; }
	wait_for "the trial to end as a zombie" zombie
	run timeout 60 aah-runner resume "$id" -q
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	[ "$(starts)" -eq 1 ]
}
