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

@test "held-orphan and aah-hold: internal, they say so; a launch the journal lacks never runs" {
	run aah-runner held-orphan --help
	[ "$status" -eq 0 ]
	[[ $output == *"Not for use by hand"* ]]
	run aah-runner held-orphan
	[ "$status" -eq 2 ]
	[[ $output == *"usage: aah-runner held-orphan EXPDIR -- PROGRAM"* ]]
	run aah-runner held-orphan "$PWD/no-experiment" -- touch ran
	[ "$status" -eq 125 ]
	[ ! -e ran ]
	run aah-hold
	[ "$status" -eq 2 ]
	[[ $output == *"aah-runner's local backend starts it"* ]]
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

@test "status --last N lists the last N trials and says how many it left out" {
	write_config c.yml "maxTrialNum: 5"
	TRIAL_SLEEP=0 run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	run aah-runner status "$id" --last 2
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^00000[45] ' <<< "$output")" -eq 2 ]
	[ "$(grep -c '^00000[123] ' <<< "$output")" -eq 0 ]
	[[ $output == *"(3 earlier finished trials not listed: --last 0 lists every one)"* ]]
	[[ $output == *"trials: 5 done"* ]]
	run aah-runner status "$id"
	[ "$(grep -c '^00000[1-5] ' <<< "$output")" -eq 5 ]
	[[ $output != *"not listed"* ]]
	run aah-runner status "$id" --last -1
	[ "$status" -eq 2 ]
}

# The processes of experiment ID's trials (the contract trial's sleep
# included): those the runner gave the experiment's id.
trial_procs() {
	/usr/bin/python3 - "$1" <<'PY'
import os, sys
tag = b"AAH_EXPERIMENT_ID=" + sys.argv[1].encode()
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if tag in open("/proc/%s/environ" % pid, "rb").read().split(b"\0"):
            print(pid)
    except OSError:
        pass
PY
}

# submitted ID N: the journal of ID holds N submissions
submitted() {
	[ "$(grep -c '"trial_submitted"' "$AAH_WORKDIR/experiments/$1/journal.jsonl" 2>/dev/null)" = "$2" ]
}

@test "status after the runner was killed: its running trials are not settled, resume settles them" {
	write_config c.yml "maxTrialNum: 2" "trialConcurrency: 2"
	TRIAL_SLEEP=600 aah-runner create -c c.yml --detach > out.txt
	id=$(head -1 out.txt)
	wait_for submitted "$id" 2
	kill -9 "$(cat "$AAH_WORKDIR/experiments/$id/runner.pid")"
	wait_for sh -c "aah-runner status $id | grep -q ': stopped'"
	run aah-runner status "$id"
	echo "$output"
	[[ $output == *"trials: 0 done (0 succeeded, 0 failed), 2 running"* ]]
	[[ $output == *"the runner stopped with 2 trials running, not settled since: \`aah-runner resume $id\` settles them"* ]]
	[ "$(grep -c '^00000[12] .*running .*not settled: the runner stopped$' <<< "$output")" -eq 2 ]
	# the trials the killed runner left behind, gone: resume settles them
	kill -9 $(trial_procs "$id") 2>/dev/null || true
	run aah-runner resume "$id" -q
	run aah-runner status "$id"
	echo "$output"
	[[ $output != *"not settled"* ]]
	[[ $output == *"trials: 2 done"* ]]
}

@test "every shipped config passes check" {
	run aah-runner check "$AAH_ROOT"/examples/*.yml "$AAH_ROOT"/k8s/config.yml
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c ': ok (' <<< "$output")" -eq 4 ]
}

# Issue 13 #6: every number has a range; a value past it is refused with
# file:line:col, the key, the range and the value, and creates nothing.
@test "check: config numbers out of range name the place, key, range and value" {
	check_refused() {  # expected-message yaml-lines...
		local want=$1; shift
		printf '%s\n' "$@" > n.yml
		run aah-runner check n.yml
		[ "$status" -eq 2 ] || { echo "accepted (status $status): $*"; echo "$output"; return 1; }
		[ "$output" = "aah-runner: error: n.yml:$want" ] || { echo "got: $output"; return 1; }
	}
	check_refused "1:18: 'maxExecDuration' must be between 0 and 365d, got 99999999999999999999d" \
		"maxExecDuration: 99999999999999999999d" "trial:" "  command: x"
	check_refused "1:18: 'maxExecDuration' must be between 0 and 365d, got 9223372036854775807" \
		"maxExecDuration: 9223372036854775807" "trial:" "  command: x"
	check_refused "1:14: 'maxTrialNum' must be between 1 and 999999, got 99999999999999999999" \
		"maxTrialNum: 99999999999999999999" "trial:" "  command: x"
	check_refused "2:19: 'report.sampleInterval' must be between 1s and 365d, got 1e-9" \
		"report:" "  sampleInterval: 1e-9" "trial:" "  command: x"
	check_refused "3:15: 'trial.masterPort' must be between 0 and 65535, got 70000" \
		"trial:" "  command: x" "  masterPort: 70000"
	run aah-runner create -c n.yml --no-run
	[ "$status" -eq 2 ]
	[ ! -d "$AAH_WORKDIR/experiments" ] || [ -z "$(ls "$AAH_WORKDIR/experiments")" ]
}

# Issue 13 #6: command-line numbers have ranges too (propose --trial
# 999999999999 wrapped to 32 bits).
@test "command-line numbers out of range are refused naming the option and range" {
	write_config c.yml "maxTrialNum: 1"
	run aah-runner create -c c.yml --no-run
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	run aah-runner propose --experiment "$id" --trial 999999999999
	[ "$status" -eq 2 ]
	[ "$output" = "aah-runner: error: propose: --trial must be between 1 and 999999, got 999999999999" ]
	[ ! -e "$AAH_WORKDIR/experiments/$id/trials/3567587327" ]
	run aah-runner propose --experiment "$id" --trial 2.5
	[ "$status" -eq 2 ]
	[[ $output == *"--trial needs an integer, got '2.5'"* ]]
	run aah-runner status "$id" --watch --interval 0
	[ "$status" -eq 2 ]
	[[ $output == *"--interval must be between 0.1 and 3600, got 0"* ]]
	run aah-runner create -c c.yml --seed -1
	[ "$status" -eq 2 ]
	[[ $output == *"--seed must be between 0 and 2147483647, got -1"* ]]
	run aah-runner propose --help
	[[ $output == *"--trial N"*"[1 to 999999]"* ]]
}
