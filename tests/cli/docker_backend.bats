#!/usr/bin/env bats
# The Docker backend's GPU flags against a stand-in CLI
# (tests/fixtures/docker/fake-docker): `--gpus` needs the NVIDIA container
# runtime, which the real engine of these machines lacks, so this is the one
# thing still checked on a stand-in; everything else runs against a real
# engine in docker_engine.bats. The stand-in runs each "container" as a local
# process with exactly its -e environment.

load helpers

setup() {
	setup_workdir
	export FAKE_DOCKER_DIR=$WORK/docker
	mkdir -p "$FAKE_DOCKER_DIR"
}

teardown() {
	# Stop whatever "containers" are left (our own processes, by pid).
	for p in "$FAKE_DOCKER_DIR"/ctr/*/pid; do
		[ -f "$p" ] && kill -KILL -- "-$(cat "$p")" 2>/dev/null
	done
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -f "$FAKE_DOCKER_DIR/calls.log" ]; then
		echo "--- docker calls:"; cut -c1-200 "$FAKE_DOCKER_DIR/calls.log"
	fi
	cd / && rm -rf "$WORK"
}

@test "docker (stand-in CLI, no NVIDIA runtime here): each slot's containers get their own --gpus, renumbered inside" {
	echo "# stand-in docker CLI: --gpus needs the NVIDIA container runtime, absent from this engine" >&3
	cat > c.yml <<-EOF
	experimentName: docker-gpus
	trainingServicePlatform: docker
	searchSpacePath: $AAH_ROOT/tests/fixtures/upstream-configs/aah-imagenet-search_space.json
	trialConcurrency: 2
	maxTrialNum: 2
	tuner:
	  builtinTunerName: Random
	trial:
	  command: contract_trial.sh
	  gpuNum: 2
	  processMode: node
	  env:
	    EXPECT_GPUS: "1"
	docker:
	  binary: $AAH_ROOT/tests/fixtures/docker/fake-docker
	  image: aah-trial:test
	  pollInterval: 0.2s
	EOF
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	[ "$(count_events "$id" trial_finished succeeded)" -eq 2 ]
	# Two slots, disjoint devices, the list quoted for docker's CSV reading.
	grep -o -- '--gpus="device=[0-9],[0-9]"' "$FAKE_DOCKER_DIR/calls.log" | sort -u > gpus.txt
	cat gpus.txt
	[ "$(wc -l < gpus.txt)" -eq 2 ]
	grep -qx -- '--gpus="device=0,1"' gpus.txt
	grep -qx -- '--gpus="device=2,3"' gpus.txt
	# Inside, the container sees only its devices: 0 and 1.
	[ "$(cut -d' ' -f2 "$AAH_WORKDIR/experiments/$id/gpus.log" | sort -u)" = "0,1" ]
}
