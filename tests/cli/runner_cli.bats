#!/usr/bin/env bats
# The command line itself: help, bad usage, config errors as a user sees
# them, status --watch and list on an empty work directory.

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

@test "help lists every command; an unknown command is refused" {
	run aah-runner --help
	[ "$status" -eq 0 ]
	for c in create resume stop status list propose check report collect verify metrics; do
		[[ $output == *"  $c "* ]]
	done
	run aah-runner frobnicate
	[ "$status" -eq 2 ]
	[[ $output == *"'frobnicate' is not a command"* ]]
	run aah-runner create --help
	[ "$status" -eq 0 ]
	[[ $output == *"--config FILE"* ]]
	run aah-runner create --bogus
	[ "$status" -eq 2 ]
	[[ $output == *"unknown option '--bogus'"* ]]
	run aah-runner create
	[ "$status" -eq 2 ]
	[[ $output == *"give the config with -c FILE"* ]]
}

@test "check: upstream configs pass, a typo fails with file:line:col and a suggestion" {
	run aah-runner check "$AAH_ROOT"/tests/fixtures/upstream-configs/*-config.yml
	[ "$status" -eq 0 ]
	[ "$(grep -c ': ok (' <<< "$output")" -eq 6 ]
	printf 'trialConcurrency: 1\nmaxTrailNum: 3\ntrial:\n  command: x\n' > bad.yml
	run aah-runner check bad.yml
	[ "$status" -eq 2 ]   # a config error: the status create gives (issue 13)
	[ "$output" = "aah-runner: error: bad.yml:2:1: 'maxTrailNum' is not a known key (did you mean 'maxTrialNum'?)" ]
	# A bad config creates nothing.
	run aah-runner create -c bad.yml
	[ "$status" -eq 2 ]
	[ ! -d "$AAH_WORKDIR/experiments" ] || [ -z "$(ls "$AAH_WORKDIR/experiments")" ]
}

@test "status of an unknown experiment says where it looked; list on an empty workdir" {
	run aah-runner status nosuchid
	[ "$status" -eq 1 ]
	[[ $output == *"no experiment 'nosuchid' in '$AAH_WORKDIR/experiments'"* ]]
	run aah-runner list
	[ "$status" -eq 0 ]
	[[ $output == *"(no experiments in $AAH_WORKDIR/experiments)"* ]]
}

@test "status --watch redraws while the experiment runs" {
	write_config c.yml "maxTrialNum: 3"
	TRIAL_SLEEP=1 aah-runner create -c c.yml --detach > out.txt
	id=$(head -1 out.txt)
	run aah-runner status "$id" --watch --interval 0.3 --count 3
	[ "$status" -eq 0 ]
	[ "$(grep -c "^experiment $id" <<< "$output")" -ge 2 ]
	[[ $output == *"remaining budget:"* ]]
	aah-runner stop "$id"
}

@test "every shipped config passes check" {
	run aah-runner check "$AAH_ROOT"/examples/*.yml "$AAH_ROOT"/k8s/config.yml
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c ': ok (' <<< "$output")" -eq 4 ]
}
