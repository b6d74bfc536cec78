#!/usr/bin/env bats
# The Docker backend's command sequence against a stand-in CLI
# (tests/fixtures/docker/fake-docker): no Docker engine runs here, so this
# checks what the backend asks of docker (create, start after the journal,
# inspect, kill, logs, rm -f) and that the contract reaches the ranks; the
# engine itself is untested (docs/docker.md).

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

docker_config() {
	local f=$1; shift
	{
		echo "experimentName: docker-test"
		echo "trainingServicePlatform: docker"
		echo "searchSpacePath: $AAH_ROOT/tests/fixtures/upstream-configs/aah-imagenet-search_space.json"
		for line in "$@"; do echo "$line"; done
		echo "tuner:"
		echo "  builtinTunerName: Random"
		echo "trial:"
		echo "  command: contract_trial.sh"
		if [ -n "${TRIAL_YAML:-}" ]; then printf "%s\n" "$TRIAL_YAML"; fi
		echo "docker:"
		echo "  binary: $AAH_ROOT/tests/fixtures/docker/fake-docker"
		echo "  image: aah-trial:test"
		echo "  pollInterval: 0.2s"
	} > "$f"
}

calls() { grep -c "^$1 " "$FAKE_DOCKER_DIR/calls.log" || true; }

@test "docker: 3 two-rank trials, concurrency 2: containers created, journaled, started, collected, removed" {
	TRIAL_YAML="  nodes: 2" docker_config c.yml "trialConcurrency: 2" "maxTrialNum: 3"
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	[ "$(count_events "$id" trial_finished succeeded)" -eq 3 ]
	[ "$(calls create)" -eq 6 ]
	[ "$(calls start)" -eq 3 ]
	# Every start came after its job id was in the journal.
	[ "$(grep -c '^start-journaled yes' "$FAKE_DOCKER_DIR/calls.log")" -eq 6 ]
	! grep -q '^start-journaled no' "$FAKE_DOCKER_DIR/calls.log"
	# Names and labels as documented; the contract as -e pairs.
	grep -q "^create --name=aah-$id-000001-0 --label=aah.io/experiment=$id --label=aah.io/trial=000001 .* --network=host -v /userhome:/userhome .* -e RANK_ID=0 .* aah-trial:test contract_trial.sh --init_method tcp://127.0.0.1:[0-9]* --rank 0 --world_size 2" "$FAKE_DOCKER_DIR/calls.log"
	# Logs of both ranks went into trial.log, and no container is left.
	for t in 000001 000002 000003; do
		log=$AAH_WORKDIR/experiments/$id/trials/$t/trial.log
		grep -q '^== rank 0 (container ' "$log"
		grep -q '^== rank 1 (container ' "$log"
	done
	[ -z "$(ls "$FAKE_DOCKER_DIR/ctr")" ]
	# The journal's job ids are the container ids (two per trial).
	grep '"event":"trial_submitted"' "$AAH_WORKDIR/experiments/$id/journal.jsonl" |
		grep -qE '"job":"[0-9a-f]{64},[0-9a-f]{64}"'
}

@test "docker: a failing rank fails the trial with the container's exit status; the retry runs" {
	TRIAL_YAML=$'  retries: 1\n  env:\n    TRIAL_FAIL_SEQ: "1"' docker_config c.yml "maxTrialNum: 1"
	run aah-runner create -c c.yml
	echo "$output"
	id=$(only_experiment)
	journal "$id" | grep '"attempt":1,"state":"failed"' |
		grep -q "container aah-$id-000001-0 exited with status 7"
	grep -q "failing on purpose" "$AAH_WORKDIR/experiments/$id/trials/000001/trial.log"
	[ "$(count_events "$id" trial_retry)" -eq 1 ]
	[ "$(calls create)" -eq 2 ]
}

@test "docker: a trial over trial.timeout is killed, collected and removed" {
	TRIAL_YAML=$'  timeout: 2s\n  env:\n    TRIAL_SLEEP: "60"' docker_config c.yml "maxTrialNum: 1"
	run aah-runner create -c c.yml
	echo "$output"
	id=$(only_experiment)
	journal "$id" | grep '"event":"trial_finished"' | grep -q '"reason":"timed out: over the trial timeout of 2s"'
	[ "$(calls kill)" -ge 1 ]
	grep -q "^rm -f " "$FAKE_DOCKER_DIR/calls.log"
	[ -z "$(ls "$FAKE_DOCKER_DIR/ctr")" ]
}
