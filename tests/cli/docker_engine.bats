#!/usr/bin/env bats
# The Docker backend against a real Docker engine (tests/docker/engine.bash:
# Debian's dockerd 20.10 with its own data root and socket, no bridge network,
# containers on the host network). Trials are containers of the offline base
# image aah-base:bookworm with the test tree bind-mounted, or of the CPU trial
# image aah-trial:cpu (two ranks of aah-trial meeting on 127.0.0.1). What the
# engine cannot do here (--gpus: no NVIDIA runtime) stays in
# docker_backend.bats against the stand-in CLI.

load ../docker/common

setup_file() { docker_file_setup; }
teardown_file() { docker_file_teardown; }

setup() {
	docker_skip_if_down
	setup_workdir
	RUNNER_PID=
}

teardown() {
	if [ -n "${RUNNER_PID:-}" ]; then kill -9 "$RUNNER_PID" 2>/dev/null || true; fi
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -n "${WORK:-}" ]; then
		echo "--- docker ps -a:"; "$AAH_DOCKER" ps -a 2>&1
		dump_experiments 20
	fi
	# This test's containers (the engine is ours alone).
	ids=$("$AAH_DOCKER" ps -aq --filter label=aah.io/experiment 2>/dev/null)
	[ -z "$ids" ] || "$AAH_DOCKER" rm -f $ids >/dev/null 2>&1
	[ -z "${WORK:-}" ] || { cd / && rm -rf "$WORK"; }
}

# docker_config FILE [top-level lines...]: trial lines in TRIAL_YAML, extra
# docker lines in DOCKER_YAML. Default image: the base image with the source
# tree (read-only) and the work dir mounted at their host paths.
docker_config() {
	local f=$1; shift
	{
		echo "experimentName: docker-engine-test"
		echo "trainingServicePlatform: docker"
		echo "searchSpacePath: $AAH_ROOT/tests/fixtures/upstream-configs/aah-imagenet-search_space.json"
		for line in "$@"; do echo "$line"; done
		echo "tuner:"
		echo "  builtinTunerName: Random"
		echo "trial:"
		echo "  command: ${TRIAL_COMMAND:-$AAH_ROOT/tests/fixtures/trials/contract_trial.sh}"
		if [ -n "${TRIAL_YAML:-}" ]; then printf "%s\n" "$TRIAL_YAML"; fi
		echo "docker:"
		echo "  binary: $AAH_DOCKER"
		echo "  image: ${DOCKER_IMAGE:-aah-base:bookworm}"
		echo "  mounts: [\"$WORK:$WORK\", \"$AAH_ROOT:$AAH_ROOT:ro\"]"
		echo "  pollInterval: 0.2s"
		if [ -n "${DOCKER_YAML:-}" ]; then printf "%s\n" "$DOCKER_YAML"; fi
	} > "$f"
}

# gated_trial: $WORK/gated.sh, the contract trial once $WORK/go exists (the
# test creates it when it has seen what it waits for).
gated_trial() {
	cat > "$WORK/gated.sh" <<-EOF
	#!/bin/sh
	while [ ! -e "$WORK/go" ]; do sleep 0.1; done
	exec $AAH_ROOT/tests/fixtures/trials/contract_trial.sh "\$@"
	EOF
	chmod +x "$WORK/gated.sh"
	TRIAL_COMMAND=$WORK/gated.sh
}

exp_dir() { echo "$AAH_WORKDIR/experiments/$1"; }
job_ids() { grep '"event":"trial_submitted"' "$(exp_dir "$1")/journal.jsonl" | sed 's/.*"job":"\([0-9a-f,]*\)".*/\1/'; }
running_containers() { [ "$("$AAH_DOCKER" ps -q --filter label=aah.io/experiment | wc -l)" -ge "$1" ]; }

@test "images: make images builds the CPU trial and master images from the offline base; the binaries start" {
	t0=$SECONDS
	cold=no
	"$AAH_DOCKER" image inspect aah-trial:cpu >/dev/null 2>&1 || cold=yes
	docker_images
	for img in aah-trial:cpu aah-master:cpu; do
		size=$("$AAH_DOCKER" image inspect -f '{{.Size}}' "$img")
		echo "# $img: $((size / 1000000)) MB" >&3
		# Debian bookworm minbase (~120 MB) plus what each needs; a bound that
		# catches a build tree or -dev packages leaking into a runtime image.
		[ "$size" -lt 700000000 ]
		# Non-root user 1000, /userhome theirs, the runner starts.
		[ "$("$AAH_DOCKER" run --rm --network host --entrypoint id "$img" -u)" = 1000 ]
		[ "$("$AAH_DOCKER" run --rm --network host --entrypoint stat "$img" -c %u /userhome)" = 1000 ]
		run "$AAH_DOCKER" run --rm --network host --entrypoint aah-runner "$img" --help
		[ "$status" -eq 0 ]
		[[ $output == *"usage: aah-runner <command>"* ]]
		! "$AAH_DOCKER" run --rm --network host --entrypoint sh "$img" -c 'ls /usr/include/*.h' 2>/dev/null
	done
	echo "# make images: $((SECONDS - t0)) s (cold: $cold)" >&3
	# The trial image: aah-trial through the entrypoint, Fashion-MNIST inside.
	run "$AAH_DOCKER" run --rm --network host aah-trial:cpu aah-trial --help
	[ "$status" -eq 0 ]
	[[ $output == *"aah-entrypoint: argv: aah-trial --help"* ]]
	[[ $output == *"--train_data_dir"* ]]
	"$AAH_DOCKER" run --rm --network host --entrypoint ls aah-trial:cpu /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
	# The master image: kubectl from the build context, the docker CLI.
	run "$AAH_DOCKER" run --rm --network host --entrypoint kubectl aah-master:cpu version --client
	[ "$status" -eq 0 ]
	[[ $output == *"Client Version: v1."* ]]
	"$AAH_DOCKER" run --rm --network host --entrypoint docker aah-master:cpu --version
	run "$AAH_DOCKER" run --rm --network host aah-master:cpu --help
	[ "$status" -eq 2 ]
	[[ $output == *"usage: aah-master CONFIG.yml"* ]]
}

@test "docker engine: 3 trials, concurrency 2, as real containers: contract as env, logs collected, none left" {
	TRIAL_YAML=$'  env:\n    TRIAL_RUN_LOG: '"$WORK/runs.log" docker_config c.yml "trialConcurrency: 2" "maxTrialNum: 3"
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	[ "$(count_events "$id" trial_finished succeeded)" -eq 3 ]
	# Each trial ran once, in a container: contract_trial.sh checked the
	# whole contract and wrote the run log from inside.
	[ "$(sort "$WORK/runs.log" | tr '\n' ' ')" = "1 1 resume=0 2 1 resume=0 3 1 resume=0 " ]
	for t in 000001 000002 000003; do
		log=$(exp_dir "$id")/trials/$t/trial.log
		grep -q '^== rank 0 (container [0-9a-f]*) ==' "$log"
		[ -s "$(exp_dir "$id")/trials/$t/result.json" ]
	done
	# The journal's job ids are the engine's container ids.
	job_ids "$id" | grep -qE '^[0-9a-f]{64}$'
	[ "$(containers_of "$id")" -eq 0 ]
}

@test "docker engine: a 2-rank aah-trial in two trial-image containers meets on 127.0.0.1 and trains" {
	docker_images
	cat > c.yml <<-EOF
	experimentName: docker-engine-2rank
	trainingServicePlatform: docker
	maxTrialNum: 1
	searchSpacePath: $AAH_ROOT/examples/quickstart-search-space.json
	tuner:
	  builtinTunerName: NetworkMorphism
	  initialArch: $AAH_ROOT/examples/fashion-mnist-cnn.json
	trial:
	  command: aah-trial --threads 1 --batch_size 32 --warmup_1 1 --epochs 1 --train_samples 256 --val_samples 128
	  nodes: 2
	docker:
	  binary: $AAH_DOCKER
	  image: aah-trial:cpu
	  user: "0:0"
	  mounts: ["$WORK:$WORK"]
	  pollInterval: 0.2s
	EOF
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	T=$(exp_dir "$id")/trials/000001
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	# Two containers, each printing the contract it got through the image's
	# entrypoint; they met on the host's loopback.
	job_ids "$id" | grep -qE '^[0-9a-f]{64},[0-9a-f]{64}$'
	grep -q '^== rank 0 (container ' "$T/trial.log"
	grep -q '^== rank 1 (container ' "$T/trial.log"
	[ "$(grep -c '^aah-entrypoint: MASTER_ADDR=127.0.0.1$' "$T/trial.log")" -eq 2 ]
	grep -q '^aah-entrypoint: RANK_ID=1$' "$T/trial.log"
	/usr/bin/python3 - "$T/result.json" <<-'PY'
	import json, sys
	r = json.load(open(sys.argv[1]))
	assert r["status"] == "succeeded" and r["world_size"] == 2, r
	assert 0.0 < r["best_val_acc"] <= 1.0, r
	PY
	[ "$(containers_of "$id")" -eq 0 ]
}

@test "docker engine: a failing container fails the attempt with its real exit status; the retry runs" {
	TRIAL_YAML=$'  retries: 1\n  env:\n    TRIAL_FAIL_SEQ: "1"' docker_config c.yml "maxTrialNum: 1"
	run aah-runner create -c c.yml
	echo "$output"
	id=$(only_experiment)
	journal "$id" | grep '"attempt":1,"state":"failed"' |
		grep -q "container aah-$id-000001-0 exited with status 7"
	grep -q "failing on purpose" "$(exp_dir "$id")/trials/000001/trial.log"
	[ "$(count_events "$id" trial_retry)" -eq 1 ]
	[ "$(count_events "$id" trial_submitted)" -eq 2 ]
	[ "$(containers_of "$id")" -eq 0 ]
}

@test "docker engine: a container over its memory limit is reported as OOM-killed (docker inspect)" {
	cat > "$WORK/hog.sh" <<-'EOF'
	#!/bin/sh
	# One line of 400 MB: tail holds it all in memory.
	head -c 400000000 /dev/zero | tail -n 1 > /dev/null
	EOF
	chmod +x "$WORK/hog.sh"
	TRIAL_COMMAND=$WORK/hog.sh DOCKER_YAML="  runArgs: [--memory=64m, --memory-swap=64m]" \
		docker_config c.yml "maxTrialNum: 1"
	run aah-runner create -c c.yml
	echo "$output"
	id=$(only_experiment)
	journal "$id" | grep '"event":"trial_finished"' |
		grep -q "container aah-$id-000001-0: out of memory (OOMKilled), exit code 137"
	[ "$(containers_of "$id")" -eq 0 ]
}

@test "docker engine: docker kill from outside fails the attempt (signal 9, exit 137); the retry is a new container" {
	gated_trial
	TRIAL_YAML="  retries: 1" docker_config c.yml "maxTrialNum: 1"
	aah-runner create -c c.yml -q > runner.log 2>&1 &
	RUNNER_PID=$!
	wait_for running_containers 1
	first=$("$AAH_DOCKER" ps -q --no-trunc --filter label=aah.io/experiment)
	"$AAH_DOCKER" kill "$first"
	id=$(only_experiment)
	wait_for eval '[ "$(count_events "$id" trial_submitted)" -eq 2 ]'
	touch "$WORK/go"
	wait "$RUNNER_PID"
	RUNNER_PID=
	journal "$id" | grep '"event":"trial_finished".*"attempt":1,"state":"failed","exit_code":137' |
		grep -q "container aah-$id-000001-0 was killed by signal 9"
	[ "$(job_ids "$id" | sed -n 1p)" = "$first" ]
	[ "$(job_ids "$id" | sed -n 2p)" != "$first" ]
	journal "$id" | grep -q '"event":"trial_finished".*"attempt":2,"state":"succeeded"'
	[ "$(containers_of "$id")" -eq 0 ]
}

@test "docker engine: a trial over trial.timeout is killed, collected and removed" {
	TRIAL_YAML=$'  timeout: 2s\n  env:\n    TRIAL_SLEEP: "1000"' docker_config c.yml "maxTrialNum: 1"
	run aah-runner create -c c.yml
	echo "$output"
	id=$(only_experiment)
	journal "$id" | grep '"event":"trial_finished"' | grep -q '"reason":"timed out: over the trial timeout of 2s"'
	[ "$(containers_of "$id")" -eq 0 ]
}

@test "docker engine: stop kills the running container; resume runs the trial again in a new one" {
	gated_trial
	docker_config c.yml "maxTrialNum: 1"
	aah-runner create -c c.yml -q > runner.log 2>&1 &
	RUNNER_PID=$!
	wait_for running_containers 1
	id=$(only_experiment)
	first=$(job_ids "$id")
	run aah-runner stop "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	wait "$RUNNER_PID" || true
	RUNNER_PID=
	journal "$id" | grep '"event":"trial_finished"' | grep -q '"state":"canceled".*"reason":"stopped"'
	[ "$(containers_of "$id")" -eq 0 ]
	touch "$WORK/go"
	run aah-runner resume "$id" -q
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(count_events "$id" trial_submitted)" -eq 2 ]
	[ "$(job_ids "$id" | sed -n 2p)" != "$first" ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	[ "$(containers_of "$id")" -eq 0 ]
}

@test "docker engine: SIGKILL of the runner with containers running; resume re-attaches, nothing runs twice" {
	gated_trial
	TRIAL_YAML=$'  retries: 0\n  env:\n    TRIAL_RUN_LOG: '"$WORK/runs.log" \
		docker_config c.yml "trialConcurrency: 2" "maxTrialNum: 3"
	run aah-runner create -c c.yml --no-run
	[ "$status" -eq 0 ]
	id=${lines[0]}
	aah-runner resume "$id" -q > runner1.log 2>&1 &
	RUNNER_PID=$!
	wait_for running_containers 2
	kill -9 "$RUNNER_PID"
	wait "$RUNNER_PID" 2>/dev/null || true
	RUNNER_PID=
	before=$(job_ids "$id" | sort | tr '\n' ' ')
	# The containers outlive the runner.
	[ "$("$AAH_DOCKER" ps -q --no-trunc --filter label=aah.io/experiment="$id" | sort | tr '\n' ' ')" = "$before" ]
	! grep -q '"event":"trial_finished"' "$(exp_dir "$id")/journal.jsonl"
	# Let the first two finish while no runner watches them.
	touch "$WORK/go"
	wait_for eval '[ "$("$AAH_DOCKER" ps -q --filter label=aah.io/experiment="$id" | wc -l)" -eq 0 ]'
	run aah-runner resume "$id" -q
	echo "$output"
	[ "$status" -eq 0 ]
	# The two running containers were followed, not created again; the
	# third trial ran after; each trial ran exactly once.
	[ "$(count_events "$id" trial_submitted)" -eq 3 ]
	[ "$(job_ids "$id" | head -2 | sort | tr '\n' ' ')" = "$before" ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 3 ]
	[ "$(sort "$WORK/runs.log" | tr '\n' ' ')" = "1 1 resume=0 2 1 resume=0 3 1 resume=0 " ]
	[ "$(count_events "$id" runner_started)" -eq 2 ]
	[ "$(containers_of "$id")" -eq 0 ]
}
