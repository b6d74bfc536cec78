#!/usr/bin/env bats
# The fence by attempt on the kubernetes backend. A trial's node is cut from
# the API server while its pod trains: the taint manager evicts the pod
# (DisruptionTarget, Terminating) but its kubelet cannot be reached, so the
# pod runs on and the Job (podReplacementPolicy: Failed) waits for it. The
# runner cancels the attempt at trial.timeout and retries it as attempt 2,
# a new Job; the cut-off pod goes on and writes its result, into its own
# place only. When the node answers, its kubelet stops the pod, and the
# score and the archive are attempt 2's (tests/cli/fence.bash).
#
# NO Kubernetes API server runs here (none can): the cluster is simulated
# (tests/cli/cluster_sim.bash; CLUSTER_SIM_CUT plays the cut once the first
# checkpoint holds step 3, the file uncut ends it). The pods are the real
# trial entrypoint running tests/fixtures/trials/ckpt_trial.sh.

load helpers
load cluster_sim
load fence

setup() { cluster_setup; }
teardown() {
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		cat "$WORK/runs.log" "$WORK/runner.log" 2>/dev/null
		tail -n 30 "$CLUSTER_SIM_DIR"/pods/*.log 2>/dev/null
	fi
	cluster_teardown
}

ckpt_at() { [ "$(cat "$AAH_WORKDIR"/experiments/*/trials/000001/checkpoint/step 2>/dev/null)" = "$1" ]; }
cut_pod_gone() { [ -f "$CLUSTER_SIM_DIR/pods/$(cat "$CLUSTER_SIM_DIR/cut").rc" ]; }

@test "kubernetes (cluster simulated, no API server): a node cut from the API server mid-trial: the retry finishes from the checkpoint; the cut-off pod writes only into its own place and is stopped when the node answers; the score and the archive are the retry's" {
	cluster_note
	cat > c.yml <<-EOF
	experimentName: k8s-fence
	trainingServicePlatform: kubernetes
	workdir: $WORK/aah-work
	maxTrialNum: 1
	searchSpacePath: $AAH_ROOT/tests/fixtures/upstream-configs/aah-imagenet-search_space.json
	tuner:
	  builtinTunerName: Random
	$(fence_trial_yaml "  timeout: 30s")
	kubernetes:
	  kubectl: $SIM
	  image: aah-base:bookworm
	  mountPath: $WORK
	  claimName: aah-userhome
	  pollInterval: 0.2s
	EOF
	export AAH_WORKDIR=$WORK/aah-work
	export CLUSTER_SIM_CUT="0:$WORK/aah-work/experiments/*/trials/000001/checkpoint/step"
	aah-runner create -c c.yml -q > "$WORK/runner.log" 2>&1 &
	RUNNER_PID=$!
	wait_for has_experiment
	id=$(only_experiment)
	E=$AAH_WORKDIR/experiments/$id
	# Attempt 1 waits before its last step; its node is cut from the API
	# server once its checkpoint exists (in the simulated cluster's next call).
	wait_for ckpt_at 3
	wait_for test -f "$CLUSTER_SIM_DIR/cut"
	# The Job cannot end while the pod is out of reach: at trial.timeout the
	# runner cancels attempt 1 and retries it, from the checkpoint (step 3).
	WAIT_S=90 wait_for grep -q '"event":"trial_finished","trial":"000001".*"attempt":1,"state":"failed".*timed out' "$E/journal.jsonl"
	wait_for grep -q '^1 2 0 .* start=3$' "$WORK/runs.log"
	grep -q "pod $(cat "$CLUSTER_SIM_DIR/cut") disrupted (DeletionByTaintManager)" "$E/journal.jsonl"
	# Cut off, attempt 1's pod goes on: it ends its last step, writes its
	# result (0.91) and holds on; the trial still runs, as attempt 2.
	touch "$WORK/go.1"
	wait_for grep -q '^1 1 0 .* done=4$' "$WORK/runs.log"
	[ "$(count_events "$id" trial_finished succeeded)" -eq 0 ]
	! cut_pod_gone
	# The node answers: its kubelet stops the pod the API server evicted.
	touch "$CLUSTER_SIM_DIR/uncut"
	wait_for cut_pod_gone
	fence_end "$id"
	# what the simulated API server answered is in the real format
	/usr/bin/python3 "$AAH_ROOT/tests/fixtures/k8s/k8s_check.py" --schema-only --quiet "$CLUSTER_SIM_DIR"/answers/*.json
}
