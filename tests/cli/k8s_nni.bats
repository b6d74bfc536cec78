#!/usr/bin/env bats
# A trial written for NNI on the kubernetes backend, from NNI's v2 config
# form (trainingService: {platform: kubernetes, ...}): its records reach
# the runner through /userhome (.nni/metrics on the shared volume) and,
# with another NNI_PLATFORM, through the pod's log, copied into trial.log
# when the Job ends and read before the trial is judged (docs/nni.md).
#
# NO Kubernetes API server runs here (none can): the cluster is simulated
# (tests/cli/cluster_sim.bash); the pod is the real trial entrypoint and the
# real trial (tests/fixtures/trials/nni_trial.py) with aah's nni module on
# its path, where the trial image has it.

load helpers
load cluster_sim
load nni

setup() { cluster_setup; }
teardown() { cluster_teardown; }

# k8s_nni_config FILE [trial: lines...]
k8s_nni_config() {
	local f=$1; shift
	cat > "$f" <<-EOF
	experimentName: k8s-nni
	searchSpaceFile: $AAH_ROOT/tests/fixtures/nni/search_space.json
	trialCommand: /usr/bin/python3 $AAH_ROOT/tests/fixtures/trials/nni_trial.py
	trialConcurrency: 1
	maxTrialNumber: 1
	experimentWorkingDirectory: $WORK/aah-work
	tuner:
	  name: Random
	trainingService:
	  platform: kubernetes
	  kubectl: $SIM
	  image: aah-trial:cpu
	  mountPath: $WORK
	  claimName: aah-userhome
	  pollInterval: 0.1s
	  resultWait: 0s
	trial:
	  env:
	    PYTHONPATH: $AAH_ROOT/runner/nni/python
	EOF
	for line in "$@"; do echo "$line" >> "$f"; done
}

@test "kubernetes (cluster simulated, no API server): NNI's records through /userhome, then through the pod's log" {
	cluster_note
	for route in file log; do
		if [ $route = log ]; then k8s_nni_config c.yml "    NNI_PLATFORM: remote"; else k8s_nni_config c.yml; fi
		run aah-runner create -c c.yml
		echo "$output"
		[ "$status" -eq 0 ]
		id=$(grep -E '^[a-z0-9]{8}$' <<<"$output")
		E=$WORK/aah-work/experiments/$id
		T=$E/trials/000001
		grep -q '"event":"trial_finished".*"state":"succeeded"' "$E/journal.jsonl"
		# the pod got the proposal; its three intermediate results and the final one came back
		nni_check_trial "$T" 3
		if [ $route = log ]; then
			# the records were in the pod's log only, which reached trial.log at the Job's end
			[ ! -s "$T/.nni/metrics" ]
			grep -q "^==> kubernetes pod .* <==" "$T/trial.log"
			[ "$(grep -c "NNISDK_MEb'" "$T/trial.log")" -eq 4 ]
		else
			[ "$(head -c 2 "$T/.nni/metrics")" = ME ]
		fi
	done
}
