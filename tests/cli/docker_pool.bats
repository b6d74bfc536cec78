#!/usr/bin/env bats
# The seed scenario of issue 16 (tests/cli/pool_seed.bash, the same
# assertions as elastic_pool.bats) with the real Docker engine
# (tests/docker/engine.bash): each training's share runs as that many
# containers of aah-trial:cpu (one per rank, meeting on the host's
# loopback), and a resize ends them at a step boundary (every rank exits
# 85) and starts new containers on the new share with --resume.

load ../docker/common
load pool_seed

setup_file() { docker_file_setup; }
teardown_file() { docker_file_teardown; }

setup() { docker_test_setup; }
teardown() { docker_test_teardown; }

@test "docker engine: seed scenario 8 -> 4/4 -> 3/5 -> 0/8, a container per rank, each at a step boundary, losses as uninterrupted" {
	docker_images
	SEED_PLATFORM=docker
	SEED_BACKEND_YAML="docker:
  binary: $AAH_DOCKER
  image: aah-trial:cpu
  user: \"0:0\"
  mounts: [\"$WORK:$WORK\"]
  pollInterval: 0.2s"
	seed_scenario
	# every share ran as that many containers: one per rank, a new set per size
	for e in "$AAH_WORKDIR"/experiments/*; do
		grep '"event":"trial_submitted"' "$e/journal.jsonl" |
			sed 's/.*"job":"\([0-9a-f,]*\)".*/\1/' | awk -F, '{ print NF }' | tr '\n' ' ' >> sizes
		echo >> sizes
	done
	cat sizes
	grep -qx '8 4 3 ' sizes
	grep -qx '4 5 8 ' sizes
	[ "$(containers_of)" -eq 0 ]
}
