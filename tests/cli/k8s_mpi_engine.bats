#!/usr/bin/env bats
# trial.launcher: mpi on the kubernetes backend, its pods run for real:
# `aah-runner create` renders the Secret, Service and Indexed Job and hands
# them to kubectl; NO Kubernetes API server can run here, so kubectl is the
# fake of tests/fixtures/k8s/bin/kubectl, whose create hook runs the Job's
# two pods as containers of the CPU trial image on the real Docker engine
# (tests/docker/run_pods.py, standing in for the Job controller and the
# kubelet: the pods' own loopback IPs, hostnames, the Secret mounted as the
# kubelet mounts it). Each pod runs sshd as the image's non-root user; pod 0
# waits for both, writes the hostfile and runs the contract's mpirun, which
# starts rank 0 and rank 1 over ssh; the ranks train Fashion-MNIST a
# little and rank 0 writes result.json, which the runner reads back.

load ../docker/common
load mpi

K8S=$AAH_ROOT/tests/fixtures/k8s

setup_file() { docker_file_setup; }
teardown_file() { docker_file_teardown; }

setup() {
	docker_test_setup
	export FAKE_KUBECTL_DIR=$WORK/fake
	mkdir -p "$FAKE_KUBECTL_DIR/script"
	export PATH="$K8S/bin:$PATH"
}
teardown() { docker_test_teardown; }

answers() {
	local key=$1; shift
	printf '%s\n' "$@" > "$FAKE_KUBECTL_DIR/script/$key"
}

free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The 2-node trial of mpi.bash on kubernetes, in the CPU trial image: the
# experiment on the shared volume ($WORK, mounted at the same path in the
# pods), the source tree (the model's arch file) as a read-only dataset
# volume, a free rendezvous port (pods share the host's network here).
mpi_k8s_engine_config() {
	mpi_config kubernetes c.yml
	sed -i "1s/.*/experimentName: k8s-test/" c.yml
	sed -i "s/--warmup_1 1 /--warmup_1 1 --epochs 1 /" c.yml
	sed -i "s/^  launcher: mpi$/  launcher: mpi\n  masterPort: $(free_port)\n  retries: 0/" c.yml
	cat >> c.yml <<-EOF
	workdir: $WORK/aah-work
	kubernetes:
	  image: aah-trial:cpu
	  mountPath: $WORK
	  claimName: aah-userhome
	  shmSize: 256Mi
	  volumes:
	  - name: src
	    hostPath: $AAH_ROOT
	    mountPath: $AAH_ROOT
	  pollInterval: 0.2s
	  kubectlTimeout: 600s
	  kubectlRetries: 0
	EOF
}

# The fake kubectl's create hook: check the documents, then run the Job's
# pods on the engine until they end (the create answers when they have).
# The shared volume's files belong to the pods' user, as on an NFS export
# that squashes to it.
pods_on_engine_hook() {
	cat > "$FAKE_KUBECTL_DIR/on-create" <<-EOF
	#!/bin/sh
	set -eu
	/usr/bin/python3 "$K8S/k8s_check.py" --quiet "\$1"
	chmod 0755 "$WORK"
	chown -R 1000:1000 "$WORK/aah-work"
	/usr/bin/python3 "$AAH_ROOT/tests/docker/run_pods.py" "$AAH_DOCKER" "\$1" "$WORK" > "$FAKE_KUBECTL_DIR/pods.out" 2>&1
	EOF
	chmod +x "$FAKE_KUBECTL_DIR/on-create"
}

@test "kubernetes mpi: the rendered launcher and worker pods run on the engine and train a 2-rank trial to its result (NO API server)" {
	echo "# NO Kubernetes API server here: kubectl is a fake whose create runs the rendered pods as containers on the Docker engine (tests/docker/run_pods.py stands in for the Job controller and kubelet)" >&3
	docker_images
	mpi_k8s_engine_config
	pods_on_engine_hook
	answers create create-ok
	# the look before the create (no Job of the name), then the Job is done
	answers get-job jobs-empty jobs-complete
	answers get-pod pods-succeeded
	answers logs logs-ok
	run timeout 900 aah-runner create -c c.yml --seed 5
	echo "$output"
	cat "$FAKE_KUBECTL_DIR/pods.out" || true
	for f in "$FAKE_KUBECTL_DIR"/stdin.*.pod*.log; do echo "--- $f"; cat "$f"; done
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	E=$AAH_WORKDIR/experiments/$id
	T=$E/trials/000001
	job=k8s-test-$id-000001-1
	ma=aah-$id-000001
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	grep -qx "pod $job-0: exit 0" "$FAKE_KUBECTL_DIR/pods.out"
	grep -qx "pod $job-1: exit 0" "$FAKE_KUBECTL_DIR/pods.out"
	stdin=$(ls "$FAKE_KUBECTL_DIR"/stdin.* | grep -v '\.pod\|-ssh$' | head -1)
	pod0=$stdin.pod0.log
	pod1=$stdin.pod1.log
	# pod 0 is the launcher: every pod's sshd answered before mpirun ran
	grep -qx 'aah-entrypoint: AAH_MPI_ROLE=pod' "$pod0"
	grep -qx 'aah-entrypoint: AAH_MPI_INDEX=0' "$pod0"
	grep -qx 'aah-entrypoint: AAH_MPI_INDEX=1' "$pod1"
	grep -qx "aah-entrypoint: the sshd of $ma-worker-0.$ma answers" "$pod0"
	grep -qx "aah-entrypoint: the sshd of $ma-worker-1.$ma answers" "$pod0"
	grep -q '^aah-entrypoint: argv: mpirun .* -np 2 ' "$pod0"
	# both ranks, each in its own pod (hostname <job>-<index>), output
	# through mpirun in the launcher's log
	grep -qx "mpi rank 0 of 2" "$pod0"
	grep -qx "mpi rank 1 of 2" "$pod0"
	grep -qx "mpi rank 0 on $job-0" "$pod0"
	grep -qx "mpi rank 1 on $job-1" "$pod0"
	# the worker's sshd, on its pod IP at port 2222, let the launcher's key in
	# as the image's non-root user
	grep -q '^Server listening on 127\.[0-9.]* port 2222\.' "$pod1"   # sshd -e ends its lines with CR LF
	grep -q '^Accepted publickey for aah from ' "$pod1"
	# the hostfile the launcher wrote: the contract's ModelArts names
	[ "$(cat "$T/hostfile")" = "$ma-worker-0.$ma slots=1
$ma-worker-1.$ma slots=1" ]
	/usr/bin/python3 - "$T/result.json" <<-'PY'
	import json, sys
	r = json.load(open(sys.argv[1]))
	assert r["status"] == "succeeded" and r["world_size"] == 2, r
	assert 0.0 < r["best_val_acc"] <= 1.0, r
	PY
	# the runner took the pods' result: the journal's trial_finished has it
	acc=$(jq -r .best_val_acc "$T/result.json")
	grep '"event":"trial_finished"' "$E/journal.jsonl" | grep -q "\"best_val_acc\":$acc"
	# the Secret went with the Job; the key is in no log and no file of the experiment
	grep -q "delete secret $job-ssh --ignore-not-found --wait=false" "$FAKE_KUBECTL_DIR/calls.log"
	key_line=$(sed -n 2p "$stdin.$job-ssh/id_ecdsa")
	[ ${#key_line} -ge 40 ]
	! grep -qF -- "$key_line" "$pod0" "$pod1"
	! grep -rqF -- "$key_line" "$E"
	[ "$(containers_of)" -eq 0 ]
	echo "# kubernetes mpi on the engine: 2 pods (sshd + mpirun), 2 ranks, best_val_acc $acc" >&3
}

@test "kubernetes mpi: a launcher whose workers never start gives up after the wait with a clear message, mpirun never runs" {
	docker_images
	mpi_k8s_engine_config
	echo "  pendingTimeout: 3s" >> c.yml
	# the documents as `render` prints them for `kubectl apply` (placeholder
	# experiment), the trial directory on the shared volume made by hand
	aah-runner render -c c.yml -o json > job.json
	"$K8S/k8s_check.py" --quiet job.json
	mkdir -p "$WORK/aah-work/experiments/rendered/trials/000001"
	chmod 0755 "$WORK"
	chown -R 1000:1000 "$WORK/aah-work"
	# only the launcher's pod is placed; the worker never starts
	RUN_PODS_INDEXES=0 run timeout 300 /usr/bin/python3 "$AAH_ROOT/tests/docker/run_pods.py" \
		"$AAH_DOCKER" job.json "$WORK"
	echo "$output"
	cat job.json.pod0.log
	[ "$status" -eq 1 ]
	job=k8s-test-rendered-000001-1
	[ "$output" = "pod $job-0: exit 1" ]
	ma=aah-rendered-000001
	grep -qx 'aah-entrypoint: AAH_MPI_WAIT_S=3' job.json.pod0.log
	# its own sshd answered; the worker's never did
	grep -qx "aah-entrypoint: the sshd of $ma-worker-0.$ma answers" job.json.pod0.log
	grep -q "^aah-entrypoint: the sshd of $ma-worker-1.$ma did not answer within 3 s" job.json.pod0.log
	! grep -q '^mpi rank' job.json.pod0.log
	[ ! -e "$WORK/aah-work/experiments/rendered/trials/000001/hostfile" ]
	[ "$(containers_of)" -eq 0 ]
}

@test "kubernetes mpi: the kubelet's SIGTERM (Job deleted, pod preempted) ends mpirun, both ranks and sshd, not the grace period's SIGKILL" {
	docker_images
	mpi_k8s_engine_config
	sed -i "s/--warmup_1 1 --epochs 1 /--warmup_1 500 --epochs 500 --patience 500 /" c.yml
	aah-runner render -c c.yml -o json > job.json
	mkdir -p "$WORK/aah-work/experiments/rendered/trials/000001"
	chmod 0755 "$WORK"
	chown -R 1000:1000 "$WORK/aah-work"
	/usr/bin/python3 "$AAH_ROOT/tests/docker/run_pods.py" "$AAH_DOCKER" job.json "$WORK" > pods.out 2>&1 &
	RUNNER_PID=$!
	# both ranks met and train (mpirun forwards each one's budget line)
	two_trained() { [ "$(grep -c 'budget 500 epochs' job.json.pod0.log 2>/dev/null || true)" = 2 ]; }
	WAIT_S=300 wait_for two_trained
	job=k8s-test-rendered-000001-1
	# what the kubelet does to a pod it stops (preempted, or its Job
	# deleted): SIGTERM, then SIGKILL after the grace period (here far
	# longer than any test). The launcher's pod first, alone: its mpirun
	# must hear it; then the worker's.
	"$AAH_DOCKER" stop -t 600 "$job-0"
	# the launcher, stopping, tells the worker it is done: the worker's
	# container may be gone already, ended by itself (its exit is in pods.out)
	"$AAH_DOCKER" stop -t 600 "$job-1" 2>/dev/null || true
	wait "$RUNNER_PID" || true
	RUNNER_PID=
	cat pods.out
	tail -n 5 job.json.pod0.log job.json.pod1.log
	code0=$(sed -n "s/^pod $job-0: exit //p" pods.out)
	code1=$(sed -n "s/^pod $job-1: exit //p" pods.out)
	# ended by the signal it was sent, not killed (137) after the grace period
	[ -n "$code0" ] && [ "$code0" -ne 0 ] && [ "$code0" -ne 137 ]
	[ -n "$code1" ] && [ "$code1" -ne 137 ]
	[ "$(containers_of)" -eq 0 ]
	! pgrep -f -- "--train_url $WORK/aah-work/experiments/rendered/trials/000001" >/dev/null
}
