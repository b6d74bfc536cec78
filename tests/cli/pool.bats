#!/usr/bin/env bats
# The device pool shared by the experiments of one work directory: two
# runner processes, the ledger's shares in status, `aah-runner priority`,
# a training that ends giving its devices back. The trainings here are the
# contract stand-in, which never resizes: each keeps the ranks it started
# on (RUNNING_ON) while the runner tells it its share in world_size, so a
# training whose share is held by one that never gives it back waits
# (trial_elastic.bats and elastic_pool.bats run the real trainer).

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

pool_line() {   # pool_line EXP: the status line of EXP's training in the pool
	aah-runner status "$1" | grep "^$2/000001 "
}

ledger_has() {
	grep -q "$1" "$AAH_WORKDIR/pool/ledger.jsonl" 2>/dev/null
}

@test "two experiments share 8 devices: 8, 4/4, 3/5 by priority, then 8 when one ends" {
	write_config a.yml "maxTrialNum: 1" "pool:" "  devices: 8" "  maxDevices: 8"
	write_config b.yml "maxTrialNum: 1" "pool:" "  devices: 8" "  priority: 5000"
	TRIAL_SLEEP=3600 aah-runner create -c a.yml -q > a.log 2>&1 &
	wait_for ledger_has '"shares":{"[a-z0-9]*/000001":8}'
	a=$(only_experiment)
	[[ "$(pool_line "$a" "$a")" == *" 5000      8        8 (0-7)" ]]
	[ "$(grep -c -- '"--elastic"' "$AAH_WORKDIR/experiments/$a/trials/000001/launch.json")" -eq 8 ]
	TRIAL_SLEEP=3600 aah-runner create -c b.yml -q > b.log 2>&1 &
	wait_for ledger_has ':4,"[a-z0-9]*/000001":4}'
	b=$(ls "$AAH_WORKDIR/experiments" | grep -v "^$a\$")
	run aah-runner priority "$b" 10000
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"$a/000001"*"priority 5000"*"devices 3 of 8"* ]]
	[[ $output == *"$b/000001"*"priority 10000"*"devices 5 of 8"* ]]
	run aah-runner status "$a"
	echo "$output"
	[[ $output == *"device pool: 8 devices, 2 trainings"* ]]
	[[ "$(pool_line "$a" "$a")" == *" 5000      3        8 (0-7)" ]]
	# b's share is on devices a still runs on: b waits, not launched
	[[ "$(pool_line "$a" "$b")" == *" 10000     5        0 (-)" ]]
	[ ! -e "$AAH_WORKDIR/experiments/$b/trials/000001/world_size" ]
	# metrics exports them for Prometheus
	run aah-runner metrics "$a"
	printf '%s\n' "$output" | grep -qxF "aah_pool_devices{experiment=\"$a\",trial=\"000001\"} 3"
	printf '%s\n' "$output" | grep -qxF "aah_pool_priority{experiment=\"$a\",trial=\"000001\"} 5000"
	printf '%s\n' "$output" | grep -qxF "aah_pool_running_on{experiment=\"$a\",trial=\"000001\"} 8"
	! printf '%s\n' "$output" | grep -q "trial=\"$b"
	# the runner tells its trial the new share
	wait_for grep -qx 3 "$AAH_WORKDIR/experiments/$a/trials/000001/world_size"
	[ "$(count_events "$b" trial_submitted)" -eq 0 ]
	# a ends: its training leaves and b's starts on the whole pool
	aah-runner stop "$a"
	wait_for ledger_has "\"shares\":{\"$b/000001\":8}"
	wait_for ledger_has "\"event\":\"applied\",\"training\":\"$b/000001\",\"devices\":8,"
	[[ "$(pool_line "$b" "$b")" == *" 10000     8        8 (0-7)" ]]
	[ "$(grep -c -- '"--elastic"' "$AAH_WORKDIR/experiments/$b/trials/000001/launch.json")" -eq 8 ]
	aah-runner stop "$b"
	wait_for ledger_has "\"event\":\"leave\",\"training\":\"$b/000001\""
	# the allocations, in order
	grep -o '"shares":{[^}]*}' "$AAH_WORKDIR/pool/ledger.jsonl" | sed "s#$a#A#g; s#$b#B#g" > allocs
	cat allocs
	[ "$(tr '\n' ' ' < allocs)" = '"shares":{"A/000001":8} "shares":{"A/000001":4,"B/000001":4} "shares":{"A/000001":3,"B/000001":5} "shares":{"B/000001":8} ' ]
}

# maxExecDuration runs out while b's training waits for its share (a holds
# the devices and, the stand-in, never gives them back): no queued trial
# runs once the budget is spent, so it settles as canceled and b's runner
# ends (before, it looped until stopped; `timeout` makes that a failure).
@test "the budget runs out while a training waits for its share: canceled, the runner ends" {
	write_config a.yml "maxTrialNum: 1" "pool:" "  devices: 8" "  maxDevices: 8"
	write_config b.yml "maxTrialNum: 1" "maxExecDuration: 2s" "pool:" "  devices: 8"
	TRIAL_SLEEP=3600 aah-runner create -c a.yml -q > a.log 2>&1 &
	wait_for ledger_has '"shares":{"[a-z0-9]*/000001":8}'
	a=$(only_experiment)
	run timeout 30 aah-runner create -c b.yml -q
	echo "$output (status $status)"
	b_status=$status
	aah-runner stop "$a"
	wait_for ledger_has "\"event\":\"leave\",\"training\":\"$a/000001\""
	[ "$b_status" -eq 0 ]
	b=$(ls "$AAH_WORKDIR/experiments" | grep -v "^$a\$")
	journal "$b" | grep -q '"event":"experiment_done".*"reason":"max_duration"'
	journal "$b" | grep -q '"event":"trial_finished".*"state":"canceled".*"reason":"experiment budget (maxExecDuration) reached while it waited to run"'
	[ "$(count_events "$b" trial_submitted)" -eq 0 ]
	# it left the pool: a keeps all 8
	ledger_has "\"event\":\"leave\",\"training\":\"$b/000001\""
}

@test "priority: a bad value or an unknown experiment is refused" {
	run aah-runner priority nosuch 10
	[ "$status" -eq 1 ]
	[[ $output == *"no experiment 'nosuch'"* ]]
	run aah-runner priority nosuch 0
	[ "$status" -eq 2 ]
	[[ $output == *"from 1 to 1000000"* ]]
	run aah-runner priority nosuch
	[ "$status" -eq 2 ]
}

@test "pool.minDevices above pool.maxDevices is a config error naming the line" {
	write_config c.yml "pool:" "  devices: 8" "  minDevices: 4" "  maxDevices: 2"
	run aah-runner check c.yml
	echo "$output"
	[ "$status" -eq 2 ]
	[[ $output == *"c.yml:6:"*"'pool.minDevices' must not be above pool.maxDevices"* ]]
}
