#!/usr/bin/env bats
# One pod of a two-pod trial is preempted on the kubernetes backend: the Job
# controller replaces it (the podFailurePolicy ignores DisruptionTarget),
# but the other rank has lost its peer in the middle of a collective and
# fails, so the Job fails. The runner sees that a pod of the failed Job was
# taken away and relaunches the same attempt from its checkpoint: no retry
# is charged to trial.retries and every epoch is trained once.
#
# NO Kubernetes API server runs here (none can): the cluster is simulated
# (tests/cli/cluster_sim.bash; CLUSTER_SIM_PREEMPT plays the preemption once
# the trial's first checkpoint exists). The pods are the real entrypoint and
# the real aah-trial on a slice of Fashion-MNIST.

load helpers
load cluster_sim

setup() { cluster_setup; }
teardown() { cluster_teardown; }

@test "kubernetes (cluster simulated, no API server): a preempted pod of a 2-pod trial, the Job relaunched from its checkpoint, no retry charged, each epoch once" {
	cluster_note
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]
	port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	cat > c.yml <<-EOF
	experimentName: k8s-test
	trainingServicePlatform: kubernetes
	workdir: $WORK/aah-work
	maxTrialNum: 1
	searchSpacePath: $AAH_ROOT/examples/quickstart-search-space.json
	tuner:
	  builtinTunerName: NetworkMorphism
	  initialArch: $AAH_ROOT/tests/fixtures/arch/cnn_nobn.json
	trial:
	  command: aah-trial --threads 1 --global_batch 64 --warmup_1 8 --train_samples 19200 --val_samples 200 --patience 100
	  nodes: 2
	  masterPort: $port
	  retries: 0
	kubernetes:
	  kubectl: $SIM
	  image: aah-trial:cpu
	  mountPath: $WORK
	  claimName: aah-userhome
	  pollInterval: 0.1s
	EOF
	export CLUSTER_SIM_PREEMPT="1:$WORK/aah-work/experiments/*/trials/000001/checkpoint/state.bin"
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(grep -E '^[a-z0-9]{8}$' <<<"$output")
	E=$WORK/aah-work/experiments/$id
	T=$E/trials/000001
	job=k8s-test-$id-000001-1
	pod=$(cat "$CLUSTER_SIM_DIR/preempted")
	[[ $pod == $job-1-* ]]
	# the cluster: index 1 preempted and replaced (annotated with one
	# ignored failure), index 0 failed on the lost peer, the Job failed;
	# then the relaunch's Job, created after the finished one was deleted
	/usr/bin/python3 - "$CLUSTER_SIM_DIR"/deleted/"$job".*.json <<-'PY'
	import json, sys
	rec = json.load(open(sys.argv[1]))
	pods = [(p["index"], p.get("preemptions", 0), bool(p.get("disrupted"))) for p in rec["pods"]]
	assert pods == [(0, 0, False), (1, 0, True), (1, 1, False)], pods
	assert rec["failed"]["reason"] == "MaxFailedIndexesExceeded", rec["failed"]
	PY
	grep -q 'aah-trial: error: rank 0: rank 1 closed the connection' "$CLUSTER_SIM_DIR"/pods/"$job"-0-*.log
	# rank 0 said it lost a peer (exit 86), not that it failed by itself
	grep -qx 86 $(grep -l 'rank 1 closed the connection' "$CLUSTER_SIM_DIR"/pods/"$job"-0-*.log | sed 's/\.log$/.rc/')
	[ "$(grep -c "^$id $job 2$" "$CLUSTER_SIM_DIR/created.log")" -eq 2 ]
	# the runner: one relaunch of attempt 1, from the checkpoint, not a retry
	grep '"event":"trial_retry"' "$E/journal.jsonl"
	[ "$(grep -c '"event":"trial_retry"' "$E/journal.jsonl")" -eq 1 ]
	grep -q '"event":"trial_retry","trial":"000001","trial_seq":1,"attempt":1,"reason":"relaunched from its checkpoint: pod '"$pod"' was disrupted (PreemptionByScheduler) and the other ranks lost it (Job '"$job"')"' "$E/journal.jsonl"
	[ "$(grep -c '"event":"trial_finished"' "$E/journal.jsonl")" -eq 1 ]
	grep -q '"event":"trial_finished".*"attempt":1.*"state":"succeeded"' "$E/journal.jsonl"
	# the relaunch ran in a place of its own (its predecessor's pods may
	# have run on, cut off), resumed from a copy of the checkpoint, and
	# every epoch was trained once
	A=$(place_dir "$id")
	[ "$A" = "$T/attempt-1.1" ]
	grep -qE "resumed from '$A/checkpoint/state.bin' after epoch [1-7]$" "$T/trial.log"
	[ "$(grep -o '"epoch":[0-9]*' "$A/metrics.jsonl" | tr '\n' ' ')" = '"epoch":1 "epoch":2 "epoch":3 "epoch":4 "epoch":5 "epoch":6 "epoch":7 "epoch":8 ' ]
	/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["epochs_run"] == 8 and r["status"] == "succeeded", r' "$A/result.json"
	run aah-runner status "$id"
	echo "$output"
	[[ $output == *"relaunched from its checkpoint: pod $pod was disrupted (PreemptionByScheduler)"* ]]
	# what the simulated API server answered is in the real format
	/usr/bin/python3 "$AAH_ROOT/tests/fixtures/k8s/k8s_check.py" --schema-only --quiet "$CLUSTER_SIM_DIR"/answers/*.json
}
