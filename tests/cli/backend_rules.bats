#!/usr/bin/env bats
# A backend's rules beyond its key table (struct aah_backend.check_config):
# `check` and `create` refuse what the backend would refuse later, as a
# config error (status 2) naming file:line:col and key; `render` keeps its
# own status 1 for the same rules.

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

# backend_config FILE PLATFORM [section lines...]
backend_config() {
	local f=$1 platform=$2 line; shift 2
	{
		echo "experimentName: rules"
		echo "trainingServicePlatform: $platform"
		echo "workdir: $WORK/aah-work"
		echo "searchSpacePath: $AAH_ROOT/tests/fixtures/upstream-configs/aah-imagenet-search_space.json"
		echo "tuner:"
		echo "  builtinTunerName: Random"
		echo "trial:"
		echo "  command: aah-trial --dataset fashion"
		echo "$platform:"
		for line in "$@"; do echo "  $line"; done
	} > "$f"
}

# check_says STATUS TEXT: `check c.yml` exits STATUS and prints TEXT.
check_says() {
	run aah-runner check c.yml
	echo "$output"
	[ "$status" -eq "$1" ]
	[[ $output == *"$2"* ]]
}

@test "kubernetes: check and create refuse a bad namespace or no /userhome source (2); render says 1" {
	backend_config c.yml kubernetes "claimName: c" "namespace: Bad_NS"
	check_says 2 "c.yml:11:14: 'kubernetes.namespace' must be a DNS-1123 label"
	run aah-runner create -c c.yml --no-run
	[ "$status" -eq 2 ]
	[[ $output == *"'kubernetes.namespace' must be a DNS-1123 label"* ]]
	[ ! -d "$WORK/aah-work/experiments" ] || [ -z "$(ls "$WORK/aah-work/experiments")" ]
	run aah-runner render -c c.yml
	[ "$status" -eq 1 ]
	[[ $output == *"'kubernetes.namespace' must be a DNS-1123 label"* ]]

	backend_config c.yml kubernetes "image: x"
	check_says 2 "needs exactly one /userhome source"
	backend_config c.yml kubernetes "claimName: c"
	check_says 0 "c.yml: ok (kubernetes backend"
}

@test "docker: check refuses an empty image or one with blanks (2), names file:line:col" {
	backend_config c.yml docker 'image: ""'
	check_says 2 "c.yml:10:10: 'docker.image' must be an image reference without blanks"
	backend_config c.yml docker 'image: "aah trial"'
	run aah-runner check -c c.yml
	[ "$status" -eq 2 ]
	[[ $output == *"'docker.image' must be an image reference"* ]]
	backend_config c.yml docker "image: aah-trial:cpu"
	check_says 0 "c.yml: ok (docker backend"
}
