#!/usr/bin/env bats
# The fence by attempt on Slurm, with real daemons (munged, slurmctld,
# slurmd from Debian, started on loopback: tests/slurm/cluster.bash). The
# node's slurmd stops while a trial trains there: its job step runs on, cut
# from the controller, which after SlurmdTimeout calls the node down and
# the job NODE_FAIL. The cluster took the node away: the runner relaunches
# attempt 1 from its checkpoint, not charged, in a place of its own
# (attempt-1.1); the cut-off first launch goes on and writes its result,
# into its own place only. When slurmd is back, Slurm kills what is left of
# the failed job, the relaunch runs from the checkpoint, and the score and
# the archive are the relaunch's (tests/cli/fence.bash).

load helpers
load fence
source "$AAH_ROOT/tests/slurm/cluster.bash"

setup_file() { SLURM_TEST_SLURMD_TIMEOUT=6 slurm_file_cluster_up slurm-fence; }
teardown_file() { slurm_file_cluster_down; }

setup() {
	setup_workdir
	RUNNER_PID=
}

teardown() {
	if [ -n "${RUNNER_PID:-}" ]; then kill -9 "$RUNNER_PID" 2>/dev/null || true; fi
	kill -0 "$(cat "$SLURM_TEST_DIR/run/slurmd.pid" 2>/dev/null)" 2>/dev/null || slurmd_start "$SLURM_TEST_DIR"
	squeue -h -o %i 2>/dev/null | while read -r j; do scancel "$j" 2>/dev/null; done
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		echo "--- squeue -t all:"; squeue -t all 2>&1
		cat "$WORK/runs.log" "$WORK/runner.log" 2>/dev/null
		dump_experiments 20
		slurm_cluster_logs "$SLURM_TEST_DIR"
	fi
	cd / && rm -rf "$WORK"
}

# launch_procs DIR: processes (not zombies) of the launch whose place is
# DIR, by their environment.
launch_procs() {
	/usr/bin/python3 - "$1" <<'PY'
import os, sys
want = [b"AAH_TRIAL_DIR=" + sys.argv[1].encode()]
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if open("/proc/%s/stat" % pid, "rb").read().rsplit(b") ", 1)[1][:1] == b"Z":
            continue
        env = open("/proc/%s/environ" % pid, "rb").read().split(b"\0")
    except OSError:
        continue
    if all(w in env for w in want):
        print(pid)
PY
}

ckpt_at() { [ "$(cat "$AAH_WORKDIR/experiments/$1/trials/000001/checkpoint/step" 2>/dev/null)" = "$2" ]; }
node_is() { sinfo -h -N -o %T | grep -q "^$1"; }

@test "slurm: the node's slurmd stops mid-trial (its step alive): attempt 1 is relaunched from the checkpoint, not charged; the cut-off launch writes only into its own place and is killed when slurmd is back; the score and the archive are the relaunch's" {
	export FENCE_NEXT=1.1
	cat > c.yml <<-EOF
	experimentName: slurm-fence
	trainingServicePlatform: slurm
	searchSpacePath: $AAH_ROOT/tests/fixtures/upstream-configs/aah-imagenet-search_space.json
	maxTrialNum: 1
	tuner:
	  builtinTunerName: Random
	$(fence_trial_yaml)
	slurm:
	  pollInterval: 0.3s
	EOF
	aah-runner create -c c.yml -q > runner.log 2>&1 &
	RUNNER_PID=$!
	wait_for has_experiment
	id=$(only_experiment)
	E=$AAH_WORKDIR/experiments/$id
	first=$E/trials/000001
	# The first launch waits before its last step: step 3 is in its checkpoint.
	wait_for ckpt_at "$id" 3
	[ -n "$(launch_procs "$first")" ]
	slurmd_stop "$SLURM_TEST_DIR"
	# The node is down after SlurmdTimeout, the job NODE_FAIL: attempt 1 is
	# relaunched, not retried (no trial_finished), and submitted again (the
	# relaunch waits for the node).
	WAIT_S=120 wait_for grep -q '"event":"trial_retry","trial":"000001","trial_seq":1,"attempt":1,"reason":"relaunched from its checkpoint: slurm job [0-9]* NODE_FAIL' "$E/journal.jsonl"
	wait_for eval '[ "$(count_events "$id" trial_submitted)" -eq 2 ]'
	[ "$(count_events "$id" trial_finished)" -eq 0 ]
	# Cut off, the first launch goes on: it ends its last step, writes its
	# result (0.91) and holds on; the trial still runs, relaunched.
	[ -n "$(launch_procs "$first")" ]
	touch "$WORK/go.1"
	wait_for grep -q '^1 1 0 .* done=4$' "$WORK/runs.log"
	[ "$(count_events "$id" trial_finished succeeded)" -eq 0 ]
	# slurmd is back: Slurm kills what is left of the failed job, and the
	# relaunch runs on the node, from the checkpoint.
	slurmd_start "$SLURM_TEST_DIR"
	WAIT_S=120 wait_for eval '[ -z "$(launch_procs "$first")" ]'
	WAIT_S=120 wait_for grep -q '^1 1.1 0 .* start=3$' "$WORK/runs.log"
	fence_end "$id"
}
