#!/usr/bin/env bats
# The scale harness (docs/scale.md) at a size `make test` affords: 12 slots,
# 48 trials of the stand-in trainer, the tuner on the master. It asserts
# what must hold at any size, counted from the journal, never a duration:
# every trial settles, the runner proposed each one, and once the first
# wave is out a free slot seldom waits for a proposal (the master's thread
# keeps the next ones ready). The same harness on real Slurm daemons and on
# the simulated Kubernetes cluster, 8 slots each. `make scale` runs the
# large sizes.

load ../cli/helpers

setup() { setup_workdir; }
teardown() {
	# a Slurm cluster's directory is the harness's own temp dir (munged must
	# reach it): work/cluster names it
	if [ -L "$WORK/s/cluster" ]; then rm -rf "$(readlink "$WORK/s/cluster")"; fi
	teardown_workdir
}

# c.yml: NetworkMorphism over aah-trial (never run: check reads it), $1
# trials at a time, $2 in all, tuner.placement $3.
nm_config() {
	cat > c.yml <<-YML
	experimentName: scale-check
	trialConcurrency: $1
	maxTrialNum: $2
	trainingServicePlatform: local
	tuner:
	  builtinTunerName: NetworkMorphism
	  placement: $3
	  classArgs:
	    optimize_mode: maximize
	trial:
	  command: aah-trial
	YML
}

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

# small_cluster_run PLATFORM: 8 slots, 24 trials on a cluster the harness
# starts and stops itself; every trial settles and ran as one job of it.
small_cluster_run() {
	run /usr/bin/python3 "$AAH_ROOT/tests/scale/scale.py" run --platform "$1" --slots 8 \
		--trials 24 --tuner Random --compress 6000 --work "$WORK/s" --keep --timeout 300 \
		--out "$WORK/r.json"
	echo "$output"
	[ "$status" -eq 0 ]
	R=$WORK/r.json
	[ "$(jq -r .platform "$R")" = "$1" ]
	[ "$(jq .runner_rc "$R")" -eq 0 ]
	[ "$(jq .trials_settled "$R")" -eq 24 ]
	[ "$(jq '.states | (.succeeded // 0) + (.early_stopped // 0)' "$R")" -eq 24 ]
	[ "$(jq .idle.slots_used "$R")" -eq 8 ]
	J=$(jq -r .expdir "$R")/journal.jsonl
	[ "$(jq -c "select(.event == \"trial_submitted\" and .backend == \"$1\")" "$J" | wc -l)" -eq 24 ]
	# the stand-ins' ends reached trial.log through the cluster (Slurm's
	# --output, kubectl logs): the slots' busy time and the runner's
	# end-to-settled figure are counted, not missing
	[ "$(jq '[.idle.busy_s, .idle.end_to_settle_p50_s] | map(select(. != null)) | length' "$R")" -eq 2 ]
}

@test "slurm (real daemons): 8 slots, 24 trials, each a Slurm job; the cluster is the harness's own" {
	[ "$(id -u)" -eq 0 ] || skip "the Slurm daemons need root"
	small_cluster_run slurm
	# 24 jobs, each run by Slurm: its own id, one each
	[ "$(jq -r 'select(.event == "trial_submitted") | .job' "$(jq -r .expdir "$WORK/r.json")/journal.jsonl" | sort -u | grep -cE '^[0-9]+$')" -eq 24 ]
	# and the harness stopped its daemons
	! pgrep -f "slurmctld -f $(readlink "$WORK/s/cluster")/slurm.conf"
}

@test "kubernetes (cluster simulated, no API server): 8 slots, 24 trials, each an Indexed Job" {
	echo "# NO Kubernetes API server ran: kubectl is tests/fixtures/k8s/cluster_sim.py" >&3
	small_cluster_run kubernetes
	[ "$(wc -l < "$WORK/s/cluster/created.log")" -eq 24 ]
}

@test "placement trial past the tuner's proposer limit: check says from which trial the runner proposes" {
	nm_config 4 1500 trial
	run aah-runner check c.yml
	[ "$status" -eq 0 ]
	[[ $output == *"trials 1 to 1000 propose in their own containers; the runner proposes from trial 1001 on"* ]]
	sed -i 's/maxTrialNum: 1500/maxTrialNum: 1000/' c.yml
	run aah-runner check c.yml
	[ "$status" -eq 0 ]
	[[ $output != *"the runner proposes"* ]]
}

@test "at many slots check says how many proposals the runner makes from one search; a config's own search_batch wins" {
	nm_config 4096 10000 master
	run aah-runner check c.yml
	[ "$status" -eq 0 ]
	[[ $output == *"at 4096 trials at a time the runner makes up to 8 proposals from each search while no result comes in (classArgs.search_batch: 8;"* ]]
	sed -i 's/trialConcurrency: 4096/trialConcurrency: 1024/' c.yml
	run aah-runner check c.yml
	[[ $output == *"up to 4 proposals from each search"* ]]
	sed -i 's/trialConcurrency: 1024/trialConcurrency: 511/' c.yml
	run aah-runner check c.yml
	[ "$status" -eq 0 ]
	[[ $output != *"search_batch"* ]]
	sed -i 's/trialConcurrency: 511/trialConcurrency: 4096/; s/optimize_mode: maximize/search_batch: 1/' c.yml
	run aah-runner check c.yml
	[ "$status" -eq 0 ]
	[[ $output != *"proposals from each search"* ]]
	# proposed in the trials (under the proposer limit), the runner proposes nothing
	nm_config 4096 900 trial
	run aah-runner check c.yml
	[ "$status" -eq 0 ]
	[[ $output != *"proposals from each search"* ]]
	sed -i 's/optimize_mode: maximize/search_batch: 0/' c.yml
	run aah-runner check c.yml
	[ "$status" -eq 2 ]
	[[ $output == *"c.yml:9:19: 'tuner.classArgs.search_batch': tuner NetworkMorphism: classArgs.search_batch must be between 1 and 256"* ]]
}

@test "proposal latency: a trial proposed before a kill and submitted after it is no proposal's time" {
	# Trial 2 is created, the runner killed, and the resumed runner submits
	# it 9 s later with the proposal it had (no propose_s): not a latency.
	# A runner that journals no propose_s at all is timed from creation.
	/usr/bin/python3 - "$AAH_ROOT/tests/scale" <<-'PY'
	import sys
	sys.path.insert(0, sys.argv[1])
	import scale
	ev = [{"event": "trial_created", "trial_seq": 1, "ts": 0.0},
	      {"event": "trial_submitted", "trial_seq": 1, "ts": 0.1, "propose_s": 0.002},
	      {"event": "trial_created", "trial_seq": 2, "ts": 1.0},
	      {"event": "runner_started", "ts": 9.0},
	      {"event": "trial_submitted", "trial_seq": 2, "ts": 10.0}]
	lat = scale.latencies(ev, {}, "master")
	assert lat == [(1, 0.002, 0)], lat
	before = [e for e in ev if e["event"] != "trial_submitted"] + [
	    {"event": "trial_submitted", "trial_seq": 1, "ts": 0.5},
	    {"event": "trial_submitted", "trial_seq": 2, "ts": 10.0}]
	before.sort(key=lambda e: e["ts"])
	lat = scale.latencies(before, {}, "master")
	assert [(n, round(l, 3)) for n, l, _ in lat] == [(1, 0.5), (2, 9.0)], lat
	PY
}
