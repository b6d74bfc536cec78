#!/usr/bin/env bats
# ModelArts' MPI form (trial.launcher: mpi) in containers on the real
# engine (tests/docker/engine.bash, the CPU trial image from `make images`):
# rank 0's container runs the one mpirun (Debian's Open MPI), which reaches
# the other container over ssh to its sshd (keys made per attempt by the
# runner in <trial dir>/ssh); the ModelArts host names resolve to loopback
# addresses inside every container (--add-host). The local form is
# tests/cli/launch_mpi.bats.

load ../docker/common
load mpi

setup_file() { docker_file_setup; }
teardown_file() { docker_file_teardown; }

setup() { docker_test_setup; }
teardown() { docker_test_teardown; }

# docker_mpi_config FILE WARMUP: mpi.bash's 2-node trial in the CPU trial
# image, as root (ModelArts runs its containers as root).
docker_mpi_config() {
	mpi_config docker "$1"
	sed -i "s/--warmup_1 1 /--warmup_1 $2 /" "$1"
	cat >> "$1" <<-EOF
	docker:
	  binary: $AAH_DOCKER
	  image: aah-trial:cpu
	  user: "0:0"
	  mounts: ["$WORK:$WORK", "$AAH_ROOT:$AAH_ROOT:ro"]
	  pollInterval: 0.2s
	EOF
}

exp_dir() { echo "$AAH_WORKDIR/experiments/$1"; }

@test "docker mpi: one mpirun in rank 0's container runs a 2-rank trial across two containers over ssh" {
	docker_images
	docker_mpi_config c.yml 1
	run timeout 600 aah-runner create -c c.yml --seed 5
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	T=$(exp_dir "$id")/trials/000001
	job="aah-$id-000001"
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	# two containers: the launcher (mpirun, both ranks' output) and a worker (sshd)
	grep '"event":"trial_submitted"' "$(exp_dir "$id")/journal.jsonl" | grep -qE '"job":"[0-9a-f]{64},[0-9a-f]{64}"'
	grep -q '^== rank 0 (container ' "$T/trial.log"
	grep -q '^== rank 1 (container ' "$T/trial.log"
	grep -q '^aah-entrypoint: AAH_MPI_ROLE=launcher$' "$T/trial.log"
	grep -q '^aah-entrypoint: AAH_MPI_ROLE=worker$' "$T/trial.log"
	# rank 0 ran in the launcher's container, rank 1 in the worker's, under
	# their ModelArts host names; the worker's sshd let mpirun in by its key
	grep -qx "mpi rank 0 of 2" "$T/trial.log"
	grep -qx "mpi rank 1 of 2" "$T/trial.log"
	grep -qx "mpi rank 0 on $job-worker-0.$job" "$T/trial.log"
	grep -qx "mpi rank 1 on $job-worker-1.$job" "$T/trial.log"
	grep -q 'Accepted publickey for root from 127.0.0.1' "$T/trial.log"
	[ "$(cat "$T/hostfile")" = "$job-worker-0.$job slots=1
$job-worker-1.$job slots=1" ]
	# keys only: sshd offers no password login; the private keys are 0600
	grep -qx 'PasswordAuthentication no' "$T/ssh/sshd_config"
	[ "$(stat -c %a "$T/ssh/id_ecdsa")" = 600 ]
	[ "$(stat -c %a "$T/ssh/host_ecdsa_key")" = 600 ]
	/usr/bin/python3 - "$T/result.json" <<-'PY'
	import json, sys
	r = json.load(open(sys.argv[1]))
	assert r["status"] == "succeeded" and r["world_size"] == 2, r
	assert 0.0 < r["best_val_acc"] <= 1.0, r
	PY
	[ "$(containers_of "$id")" -eq 0 ]
	# the same trial under the local backend's mpirun: a result of the same shape
	if command -v mpirun >/dev/null; then
		mpi_config local local.yml
		run timeout 600 aah-runner create -c local.yml --seed 5
		echo "$output"
		[ "$status" -eq 0 ]
		L=$(exp_dir "$(ls -t "$AAH_WORKDIR/experiments" | head -1)")/trials/000001
		[ "$(jq -c 'keys' "$L/result.json")" = "$(jq -c 'keys' "$T/result.json")" ]
		[ "$(jq -r '.status, .world_size' "$L/result.json")" = "$(jq -r '.status, .world_size' "$T/result.json")" ]
	else
		echo "# no mpirun on this host: the local run's shape is not compared" >&3
	fi
}

@test "docker mpi: stop during training ends mpirun, both ranks, sshd and every container" {
	docker_images
	docker_mpi_config c.yml 500
	aah-runner create -c c.yml -q > runner.log 2>&1 &
	RUNNER_PID=$!
	wait_for eval '[ -n "$(only_experiment)" ]'
	id=$(only_experiment)
	T=$(exp_dir "$id")/trials/000001
	launcher="aah-$id-000001-0"
	# both ranks met and train (mpirun forwards each one's budget line)
	two_trained() { [ "$("$AAH_DOCKER" logs "$launcher" 2>&1 | grep -c 'budget 500 epochs')" -eq 2 ]; }
	WAIT_S=300 wait_for two_trained
	[ "$(pgrep -f -- "--train_url $T" | wc -l)" -ge 2 ]
	pgrep -f -- "$T/ssh/sshd_config" >/dev/null
	run aah-runner stop "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	wait "$RUNNER_PID" || true
	RUNNER_PID=
	grep '"event":"trial_finished"' "$(exp_dir "$id")/journal.jsonl" | grep -q '"state":"canceled"'
	none_left() { [ "$(containers_of "$id")" -eq 0 ] && ! pgrep -f -- "$T" >/dev/null; }
	wait_for none_left
}
