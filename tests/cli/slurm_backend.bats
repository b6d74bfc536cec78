#!/usr/bin/env bats
# The Slurm backend against real daemons: munged, slurmctld and slurmd from
# Debian's packages, started on loopback for this file (tests/slurm/).

load helpers
load mpi
load nni
source "$AAH_ROOT/tests/slurm/cluster.bash"
PATH="$AAH_ROOT/tests/fixtures/slurm:$PATH"

setup_file() {
	export SLURM_TEST_DIR SLURM_TL_DIR
	SLURM_TEST_DIR=$(mktemp -d "${BATS_TMPDIR:-/tmp}/aah-slurm.XXXXXX")
	SLURM_TL_DIR=$(mktemp -d "${BATS_TMPDIR:-/tmp}/aah-slurm-tl.XXXXXX")
	if ! slurm_cluster_up "$SLURM_TEST_DIR"; then
		slurm_cluster_down "$SLURM_TEST_DIR"
		return 1
	fi
	export SLURM_CONF
	T_FILE_START=$SECONDS
	export T_FILE_START
	timelimit_start
}

teardown_file() {
	timelimit_stop
	slurm_cluster_down "$SLURM_TEST_DIR"
	echo "# slurm test file: $((SECONDS - T_FILE_START)) s with the cluster up" >&3
	rm -rf "$SLURM_TEST_DIR"
}

# The time-limit test waits for Slurm to end a job over its 1-minute limit
# (Slurm's shortest), 60 to 90 s: slurmctld checks time limits every 30 s.
# So that the other tests need not wait too, its experiment starts here, on
# a second cluster of its own (tests/slurm/cluster.bash in SLURM_TL_DIR: the
# other tests cancel every job of theirs and count the jobs they see), and
# runs beside them; its test, the last, waits for it and checks it.
timelimit_start() {
	local d=$SLURM_TL_DIR
	chmod 0755 "$d"    # munged, as the munge user, makes its key below it
	if ! (SLURM_TEST_GPUS=0 slurm_cluster_up "$d/cluster") >"$d/up.log" 2>&1; then
		echo "the time-limit cluster did not start" > "$d/rc"
		return 0
	fi
	mkdir -p "$d/work"
	(
		cd "$d/work" || exit 1
		export SLURM_CONF=$d/cluster/slurm.conf AAH_WORKDIR=$d/work/aah-work
		SLURM_YAML="  timeLimit: 1m" slurm_config c.yml "maxTrialNum: 1"
		date +%s > "$d/t0"
		FIRST_ATTEMPT_SLEEP=600 aah-runner create -c c.yml > "$d/runner.log" 2>&1
		echo "runner exit $?, after $(($(date +%s) - $(cat "$d/t0"))) s" > "$d/rc.tmp"
		mv "$d/rc.tmp" "$d/rc"
	) </dev/null >/dev/null 2>&1 3>&- &
	echo $! > "$d/pid"
}

timelimit_stop() {
	local d=$SLURM_TL_DIR
	if [ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then
		pkill -9 -P "$(cat "$d/pid")" 2>/dev/null
		kill -9 "$(cat "$d/pid")" 2>/dev/null
	fi
	[ ! -f "$d/cluster/slurm.conf" ] || slurm_cluster_down "$d/cluster"
	rm -rf "$d"
}

setup() {
	setup_workdir
	RUNNER_PID=
}

teardown() {
	if [ -n "${RUNNER_PID:-}" ]; then kill -9 "$RUNNER_PID" 2>/dev/null || true; fi
	# Cancel every job of this test (the cluster is ours alone).
	squeue -h -o %i 2>/dev/null | while read -r j; do scancel "$j" 2>/dev/null; done
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		echo "--- squeue -t all:"; squeue -t all 2>&1
		dump_experiments 20
		slurm_cluster_logs "$SLURM_TEST_DIR"
	fi
	cd / && rm -rf "$WORK"
}

# slurm_config FILE [extra top-level lines...]; trial lines in TRIAL_YAML,
# slurm lines in SLURM_YAML.
slurm_config() {
	local f=$1; shift
	{
		echo "experimentName: slurm-test"
		echo "trainingServicePlatform: slurm"
		echo "searchSpacePath: $AAH_ROOT/tests/fixtures/upstream-configs/aah-imagenet-search_space.json"
		for line in "$@"; do echo "$line"; done
		echo "tuner:"
		echo "  builtinTunerName: Random"
		echo "trial:"
		echo "  command: ${TRIAL_COMMAND:-slurm_trial.sh}"
		if [ -n "${TRIAL_YAML:-}" ]; then printf "%s\n" "$TRIAL_YAML"; fi
		echo "slurm:"
		echo "  pollInterval: 0.5s"
		if [ -n "${SLURM_YAML:-}" ]; then printf "%s\n" "$SLURM_YAML"; fi
	} > "$f"
}

# wait_until SECONDS COMMAND...: poll every 0.2 s, fail with a message.
wait_until() {
	local limit=$1 i; shift
	for ((i = 0; i < limit * 5; i++)); do
		"$@" && return 0
		sleep 0.2
	done
	echo "gave up after ${limit}s waiting for: $*" >&2
	return 1
}

exp_dir() { echo "$AAH_WORKDIR/experiments/$1"; }
has_event() { grep -q "\"event\":\"$2\"" "$(exp_dir "$1")/journal.jsonl" 2>/dev/null; }
job_ids() { grep '"event":"trial_submitted"' "$(exp_dir "$1")/journal.jsonl" | sed 's/.*"job":"\([0-9]*\)".*/\1/'; }
# jobs_in_state STATE N: exactly N jobs of the cluster are in STATE.
jobs_in_state() { [ "$(squeue -h -t "$1" -o %i | wc -l)" -eq "$2" ]; }
# steps_running N: at least N job steps (srun's, "<job>.<n>") are running.
steps_running() { [ "$(squeue -h -s -o %i | grep -cE '\.[0-9]+$')" -ge "$1" ]; }

@test "slurm: 4 trials with concurrency 2 run as Slurm jobs; submit-to-running latency" {
	slurm_config c.yml "trialConcurrency: 2" "maxTrialNum: 4"
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	[ "$(count_events "$id" trial_finished succeeded)" -eq 4 ]
	[ "$(count_events "$id" trial_submitted)" -eq 4 ]
	# Four distinct Slurm jobs, each known to Slurm under the trial's name.
	[ "$(job_ids "$id" | sort -u | wc -l)" -eq 4 ]
	for seq in 1 2 3 4; do
		t=$(printf '%06u' "$seq")
		d=$(exp_dir "$id")/trials/$t
		grep -q "^#SBATCH --job-name=aah-$id-$t\$" "$d/slurm.sh"
		grep -q "^aah: slurm job [0-9]* on localhost (1 tasks)" "$d/trial.log"
		job=$(job_ids "$id" | sed -n "${seq}p")
		[ "$(squeue -h -t all -j "$job" -o '%j|%T')" = "aah-$id-$t|COMPLETED" ]
		# The rank really ran under that job.
		[ "$(cut -d' ' -f2 "$d/started.0")" = "$job" ]
	done
	# Never more than 2 trials at once (from the journal).
	/usr/bin/python3 - "$(exp_dir "$id")" >&3 <<'PY'
import json, sys
exp = sys.argv[1]
ev = [json.loads(l) for l in open(exp + "/journal.jsonl")]
live = peak = 0
lat = []
for e in ev:
    if e["event"] == "trial_submitted":
        live += 1
        peak = max(peak, live)
        start = float(open("%s/trials/%s/started.0" % (exp, e["trial"])).read().split()[0])
        lat.append(start - e["ts"])
    elif e["event"] == "trial_finished":
        live -= 1
assert peak == 2, "peak concurrency %d" % peak
lat.sort()
print("# submit-to-running latency through Slurm (sbatch to the rank's first line), "
      "%d trials: min %.2fs median %.2fs max %.2fs" % (len(lat), lat[0], lat[len(lat) // 2], lat[-1]))
PY
}

@test "slurm: a trial written for NNI (v2 config): its records come back through the file, then through the job's output" {
	for route in file log; do
		cat > c.yml <<-EOF
		experimentName: slurm-nni
		searchSpaceFile: $AAH_ROOT/tests/fixtures/nni/search_space.json
		trialCommand: /usr/bin/python3 $AAH_ROOT/tests/fixtures/trials/nni_trial.py
		trialConcurrency: 1
		maxTrialNumber: 1
		tuner: {name: Random}
		trainingService: {platform: slurm, pollInterval: 0.5s}
		EOF
		[ $route = file ] || printf 'trial:\n  env: {NNI_PLATFORM: remote}\n' >> c.yml
		run aah-runner create -c c.yml
		echo "$output"
		[ "$status" -eq 0 ]
		id=${lines[0]}
		T=$(exp_dir "$id")/trials/000001
		[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
		# slurm-launch put aah's nni module on the rank's path; the rank got the proposal
		nni_check_trial "$T" 3
		if [ $route = log ]; then
			[ "$(grep -c "^NNISDK_MEb'" "$T/trial.log")" -eq 4 ]
		else
			[ "$(head -c 2 "$T/.nni/metrics")" = ME ]
		fi
	done
}

@test "slurm: a 2-node trial's ranks meet through the launch contract" {
	TRIAL_COMMAND=rendezvous_trial.sh TRIAL_YAML="  nodes: 2" SLURM_YAML="  tasksPerNode: 2" \
		slurm_config c.yml "maxTrialNum: 1"
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	d=$(exp_dir "$id")/trials/000001
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	grep -q '^#SBATCH --nodes=1$' "$d/slurm.sh"
	grep -q '^#SBATCH --ntasks-per-node=2$' "$d/slurm.sh"
	grep -q "^aah: slurm job [0-9]* on localhost (2 tasks)" "$d/trial.log"
	# Rank 1 reached rank 0 at MASTER_ADDR:MASTER_PORT, with the real hosts.
	[ "$(cat "$d/rendezvous.txt")" = "hello from rank 1 of 2 via localhost,localhost" ]
	job=$(job_ids "$id")
	[ "$(cut -d' ' -f2-4 "$d/started.0")" = "$job 0 localhost" ]
	[ "$(cut -d' ' -f2-4 "$d/started.1")" = "$job 1 localhost" ]
	# The rank table names the real host, not the placeholder.
	grep -qE '"server_id":[[:space:]]*"localhost"' "$d/rank_table.json"
	! grep -q '@aah-host-' "$d/rank_table.json"
}

# mpi_slurm_config: mpi.bash's 2-node MPI trial, both nodes packed on the
# one Slurm node (2 tasks), polled fast.
mpi_slurm_config() {
	mpi_config slurm
	printf 'slurm:\n  pollInterval: 0.5s\n  tasksPerNode: 2\n' >> c.yml
}

@test "slurm: trial.launcher mpi: one mpirun in the batch step starts both ranks" {
	command -v mpirun >/dev/null || skip "no mpirun here (apt-get install openmpi-bin)"
	mpi_slurm_config
	run timeout 300 aah-runner create -c c.yml --seed 5
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	d=$(exp_dir "$id")/trials/000001
	cat "$d/trial.log"
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	[ "$(jq -r .world_size "$d/result.json")" -eq 2 ]
	grep -qx "mpi rank 0 of 2" "$d/trial.log"
	grep -qx "mpi rank 1 of 2" "$d/trial.log"
	# one allocation of 2 tasks; its batch step runs mpirun, no srun per rank
	grep -q '^#SBATCH --ntasks-per-node=2$' "$d/slurm.sh"
	grep -q 'slurm-launch --mpi' "$d/slurm.sh"
	! grep -q '^exec srun' "$d/slurm.sh"
	# the hostfile names the allocation's real host with its 2 slots
	[ "$(cat "$d/hostfile")" = "localhost slots=2" ]
	[ "$(jq -r '.mpi.argv[0]' "$d/launch.json")" = mpirun ]
	[ "$(job_ids "$id" | wc -l)" -eq 1 ]
}

@test "slurm: trial.launcher mpi: stop ends the job, its mpirun and both ranks" {
	command -v mpirun >/dev/null || skip "no mpirun here (apt-get install openmpi-bin)"
	mpi_slurm_config
	sed -i 's/--warmup_1 1/--warmup_1 500 --patience 500/' c.yml  # no early stop before the stop
	aah-runner create -c c.yml --detach > out.txt
	id=$(head -1 out.txt)
	d=$(exp_dir "$id")/trials/000001
	two_trained() { [ "$(grep -c "budget 500 epochs" "$d/trial.log" 2>/dev/null)" -eq 2 ]; }
	wait_until 180 two_trained
	[ "$(pgrep -f -- "--train_url $d" | wc -l)" -ge 2 ]
	pgrep -f -- "mpirun .*$d/hostfile" >/dev/null
	aah-runner stop "$id"
	none_left() { ! pgrep -f -- "$d" >/dev/null; }
	wait_until 60 none_left
	no_job() { [ -z "$(squeue -h -o %i)" ]; }
	wait_until 60 no_job
	grep -q '"event":"trial_finished".*"state":"canceled"' "$(exp_dir "$id")/journal.jsonl"
}

@test "slurm: GPUs come from Slurm's GRES (--gres=gpu:G), and win over the runner's slot numbers" {
	[ "${SLURM_TEST_GPUS_UP:-0}" -ge 2 ] || skip "no fake GPUs in this cluster (mknod refused)"
	# Another job holds gpu 0, so Slurm hands the trial gpu 1, while the
	# runner's only slot would say 0.
	blocker=$(sbatch --parsable --gres=gpu:1 --output=/dev/null --wrap "sleep 60")
	wait_until 30 jobs_in_state RUNNING 1
	TRIAL_YAML="  gpuNum: 1" slurm_config c.yml "maxTrialNum: 1"
	EXPECT_GPUS=1 run aah-runner create -c c.yml
	echo "$output"
	scancel "$blocker"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	grep -q '^#SBATCH --gres=gpu:1$' "$(exp_dir "$id")/trials/000001/slurm.sh"
	[ "$(cat "$(exp_dir "$id")/gpus.log")" = "000001 1" ]
}

@test "slurm: processMode device: one task per GPU, each rank its own device" {
	[ "${SLURM_TEST_GPUS_UP:-0}" -ge 2 ] || skip "no fake GPUs in this cluster (mknod refused)"
	TRIAL_YAML=$'  gpuNum: 2\n  processMode: device' slurm_config c.yml "maxTrialNum: 1"
	EXPECT_GPUS=1 run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	d=$(exp_dir "$id")/trials/000001
	grep -q '^#SBATCH --ntasks-per-node=2$' "$d/slurm.sh"
	grep -q '^#SBATCH --gres=gpu:2$' "$d/slurm.sh"
	[ "$(sort "$(exp_dir "$id")/gpus.log" | tr '\n' ' ')" = "000001 0 000001 1 " ]
	[ -f "$d/started.0" ] && [ -f "$d/started.1" ]
}

@test "slurm: SIGKILL of the runner, then resume re-attaches to the live jobs" {
	TRIAL_YAML="  retries: 0" slurm_config c.yml "trialConcurrency: 2" "maxTrialNum: 2"
	export TRIAL_RUN_LOG=$WORK/runs.log
	run aah-runner create -c c.yml --no-run
	[ "$status" -eq 0 ]
	id=${lines[0]}
	FIRST_ATTEMPT_SLEEP=8 aah-runner resume "$id" -q > runner1.log 2>&1 &
	RUNNER_PID=$!
	wait_until 30 jobs_in_state RUNNING 2
	kill -9 "$RUNNER_PID"
	wait "$RUNNER_PID" 2>/dev/null || true
	RUNNER_PID=
	before=$(job_ids "$id" | sort | tr '\n' ' ')
	# The jobs outlive the runner.
	[ "$(squeue -h -t RUNNING -o %i | sort | tr '\n' ' ')" = "$before" ]
	! has_event "$id" trial_finished
	run aah-runner resume "$id" -q
	echo "$output"
	[ "$status" -eq 0 ]
	# Nothing was submitted again; both trials finished in their first job.
	[ "$(count_events "$id" trial_submitted)" -eq 2 ]
	[ "$(job_ids "$id" | sort | tr '\n' ' ')" = "$before" ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 2 ]
	[ "$(wc -l < "$TRIAL_RUN_LOG")" -eq 2 ]
	[ "$(count_events "$id" runner_started)" -eq 2 ]
}

@test "slurm: a job left held by a dead runner is released by resume, once" {
	slurm_config c.yml "maxTrialNum: 1"
	# Keep the node busy so the trial's job stays pending.
	cpus=$(sinfo -h -N -o %c | head -1)
	blocker=$(sbatch --parsable --ntasks="$cpus" --output=/dev/null --wrap "sleep 120")
	wait_until 30 jobs_in_state RUNNING 1
	# The runner's squeue and scontrol calls, each with its time, logged
	# by shims first on its PATH: the events this test waits for.
	mkdir shim
	for tool in squeue scontrol; do
		printf '#!/bin/sh\necho "$(date +%%s.%%N) %s $*" >> %s/calls.log\nexec %s "$@"\n' \
			"$tool" "$WORK" "$(command -v "$tool")" > "shim/$tool"
		chmod +x "shim/$tool"
	done
	PATH=$WORK/shim:$PATH aah-runner create -c c.yml -q > runner1.log 2>&1 &
	RUNNER_PID=$!
	wait_until 30 jobs_in_state PENDING 1
	job=$(squeue -h -t PENDING -o %i)
	wait_until 30 grep -q " scontrol release $job\$" calls.log
	# As if the runner died after journaling, before its scontrol release.
	scontrol uhold "$job"
	[ "$(squeue -h -j "$job" -o %r)" = JobHeldUser ]
	# The runner that released it once leaves a later hold alone: not at
	# its next poll, nor at one past the 10 s it waits between releases.
	held=$(date +%s.%N)
	released=$(awk '$2 == "scontrol" && $3 == "release" { t = $1 } END { print t }' calls.log)
	polled_after() { awk -v t="$1" '$2 == "squeue" && $1 > t { n++ } END { exit !(n >= 2) }' calls.log; }
	wait_until 60 polled_after "$(echo "$held $released" | awk '{ printf "%.6f\n", ($1 > $2 + 11 ? $1 : $2 + 11) }')"
	[ "$(squeue -h -j "$job" -o %r)" = JobHeldUser ]
	[ "$(grep -c ' scontrol release ' calls.log)" -eq 1 ]
	kill -9 "$RUNNER_PID"
	wait "$RUNNER_PID" 2>/dev/null || true
	aah-runner resume "$(only_experiment)" -q > runner2.log 2>&1 &
	RUNNER_PID=$!
	wait_until 30 eval '[ "$(squeue -h -j "$job" -o %r)" != JobHeldUser ]'
	scancel "$blocker"
	wait_until 60 eval '! kill -0 "$RUNNER_PID" 2>/dev/null'
	wait "$RUNNER_PID"
	RUNNER_PID=
	id=$(only_experiment)
	[ "$(count_events "$id" trial_submitted)" -eq 1 ]
	[ "$(job_ids "$id")" = "$job" ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
}

@test "slurm: scancel of a running trial fails the attempt and the retry runs" {
	TRIAL_YAML="  retries: 1" slurm_config c.yml "maxTrialNum: 1"
	FIRST_ATTEMPT_SLEEP=60 aah-runner create -c c.yml -q > runner.log 2>&1 &
	RUNNER_PID=$!
	wait_until 30 jobs_in_state RUNNING 1
	first=$(squeue -h -t RUNNING -o %i)
	scancel "$first"
	wait_until 60 eval '! kill -0 "$RUNNER_PID" 2>/dev/null'
	wait "$RUNNER_PID"
	RUNNER_PID=
	id=$(only_experiment)
	journal "$id" | grep trial_finished
	# Attempt 1: failed, blamed on the outside cancel; attempt 2: a new job.
	journal "$id" | grep '"event":"trial_finished".*"attempt":1,"state":"failed"' |
		grep -q "slurm job $first CANCELLED: canceled outside aah"
	[ "$(count_events "$id" trial_retry)" -eq 1 ]
	[ "$(job_ids "$id" | sed -n 1p)" = "$first" ]
	second=$(job_ids "$id" | sed -n 2p)
	[ -n "$second" ] && [ "$second" != "$first" ]
	journal "$id" | grep -q '"event":"trial_finished".*"attempt":2,"state":"succeeded"'
}

@test "slurm: stop cancels the running job; resume runs the trial again as a new job" {
	slurm_config c.yml "maxTrialNum: 1"
	FIRST_ATTEMPT_SLEEP=60 aah-runner create -c c.yml -q > runner.log 2>&1 &
	RUNNER_PID=$!
	wait_until 30 jobs_in_state RUNNING 1
	id=$(only_experiment)
	first=$(job_ids "$id")
	# stop once the trial runs, not while Slurm still launches its step: a
	# cancel 0.1 s after the launch left the step's sleep unkilled, and
	# slurmstepd held the job COMPLETING until it abandoned the step's IO
	# 60 s later ("eio_handle_mainloop: Abandoning IO"), stop's own limit
	wait_until 30 eval 'ls "$AAH_WORKDIR/experiments/$id/trials/000001"/started.* >/dev/null 2>&1'
	run aah-runner stop "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	wait "$RUNNER_PID" || true
	RUNNER_PID=
	journal "$id" | grep '"event":"trial_finished"' | grep -q '"state":"canceled".*"reason":"stopped"'
	wait_until 30 eval '[ "$(squeue -h -t all -j "$first" -o %T)" = CANCELLED ]'
	run aah-runner resume "$id" -q
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(count_events "$id" trial_submitted)" -eq 2 ]
	second=$(job_ids "$id" | sed -n 2p)
	[ "$second" != "$first" ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
}

@test "slurm: slurmctld down for a while (about 10 s): the runner waits it out, the journal stays whole" {
	slurm_config c.yml "maxTrialNum: 1"
	FIRST_ATTEMPT_SLEEP=15 aah-runner create -c c.yml > runner.log 2>&1 &
	RUNNER_PID=$!
	wait_until 30 jobs_in_state RUNNING 1
	# A job is RUNNING once its batch script starts, before srun has asked
	# the controller for the step: stopping slurmctld in between fails the
	# srun, not the runner. Wait for the step.
	wait_until 30 steps_running 1
	slurm_ctld_stop "$SLURM_TEST_DIR"
	# squeue gives up after about 10 s of retries; the runner says why it
	# cannot see the job, and keeps going.
	wait_until 30 grep -q "squeue failed: .*Unable to contact slurm controller" runner.log
	kill -0 "$RUNNER_PID"
	slurm_ctld_start "$SLURM_TEST_DIR"
	wait_until 60 eval '! kill -0 "$RUNNER_PID" 2>/dev/null'
	wait "$RUNNER_PID"
	RUNNER_PID=
	cat runner.log
	id=$(only_experiment)
	[ "$(count_events "$id" trial_submitted)" -eq 1 ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	/usr/bin/python3 -c 'import json,sys; ev=[json.loads(l) for l in open(sys.argv[1])]; assert [e["seq"] for e in ev] == list(range(len(ev)))' \
		"$(exp_dir "$id")/journal.jsonl"
}

@test "slurm: an sbatch refusal (invalid partition) fails the trial clearly, journal intact" {
	SLURM_YAML="  partition: no-such-partition" slurm_config c.yml "maxTrialNum: 1"
	run aah-runner create -c c.yml
	echo "$output"
	id=$(only_experiment)
	journal "$id" | grep '"event":"trial_finished"' |
		grep -q 'could not be started: slurm backend: cannot submit trial 000001: slurm: sbatch refused trial 000001: sbatch: error: invalid partition specified: no-such-partition'
	[ "$(count_events "$id" trial_submitted)" -eq 0 ]
	/usr/bin/python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' \
		"$(exp_dir "$id")/journal.jsonl"
}

@test "slurm: a trial over its Slurm time limit is reported as timed out" {
	# started by setup_file (timelimit_start), on its own cluster
	d=$SLURM_TL_DIR
	wait_until 240 test -f "$d/rc" || { cat "$d/up.log"; slurm_cluster_logs "$d/cluster"; false; }
	cat "$d/up.log" "$d/runner.log"
	echo "# time-limit test: Slurm ended the job, $(cat "$d/rc") (limit 60 s)" >&3
	[[ $(cat "$d/rc") == "runner exit "* ]]
	export AAH_WORKDIR=$d/work/aah-work
	id=$(only_experiment)
	grep -q '^#SBATCH --time=0-00:01:00$' "$(exp_dir "$id")/trials/000001/slurm.sh"
	journal "$id" | grep '"event":"trial_finished"' |
		grep -q '"state":"failed".*"reason":"timed out: slurm job [0-9]* TIMEOUT: over its Slurm time limit'
}
