#!/usr/bin/env bats
# The seed scenario of issue 16 on the local backend, on a pretend 8-GPU
# host (SEED_GPUS: the pool's devices are GPUs 0-7; nothing runs on a GPU,
# each rank's CUDA_VISIBLE_DEVICES is checked from its own environment; the
# scenario and its assertions: tests/cli/pool_seed.bash, shared with
# slurm_pool.bats and docker_pool.bats), and a runner killed while the pool
# is reallocated.

load helpers
load pool_seed

setup() { setup_workdir; }
teardown() { teardown_workdir; }

@test "seed scenario on a pretend 8-GPU host: 8 -> 4/4 -> 3/5 -> 0/8, each rank on its own granted device" {
	SEED_GPUS=1 seed_scenario
}

@test "a runner killed while the pool is reallocated resumes to the same shares, nothing lost or run twice" {
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]
	config a.yml 6
	config b.yml 3
	start_a
	kill -9 "$ra"                  # A's trial runs on, no runner watches it
	wait "$ra" 2>/dev/null || true
	start_b
	# the reallocation is journaled; nobody has told A's trial yet
	WAIT_S=120 wait_for ledger_has ":4,\"$b/000001\":4}"
	A=$AAH_WORKDIR/experiments/$a/trials/000001
	[ "$(cat "$A/world_size")" = 8 ]
	aah-runner resume "$a" -q > a2.log 2>&1 &
	ra=$!
	WAIT_S=120 wait_for applied "$a" 4
	wait "$ra"
	wait "$rb"
	cat a2.log b.log
	E=$AAH_WORKDIR/experiments/$a
	grep -q "world size 8 -> 4 at step [0-9]*" "$A/trial.log"
	grep -q '"event":"trial_retry".*"attempt":1,"reason":"resized at a step boundary (it ran on 8 devices)"' "$E/journal.jsonl"
	! grep -q '"state":"failed"' "$E/journal.jsonl"
	# every launch after the first follows a resize (4, and 8 again if B
	# ended first): no other rerun
	resizes=$(grep -c '"event":"trial_retry".*"reason":"resized at a step boundary' "$E/journal.jsonl")
	[ "$(grep -c '"event":"trial_retry"' "$E/journal.jsonl")" -eq "$resizes" ]
	[ "$(grep -c '"event":"trial_submitted"' "$E/journal.jsonl")" -eq $((1 + resizes)) ]
	grep -q '"event":"trial_finished".*"state":"succeeded"' "$E/journal.jsonl"
	# The resize nobody watched went on in a place of its own (its job was
	# lost, not seen to end), from a copy of the checkpoint and the epochs
	# before it; the resizes seen to end stayed in their place.
	[ "$(place_dir "$a")" = "$A/attempt-1.1" ]
	[ "$(grep -o '"epoch":[0-9]*' "$(place_dir "$a")/metrics.jsonl" | tr '\n' ' ')" = '"epoch":1 "epoch":2 "epoch":3 "epoch":4 "epoch":5 "epoch":6 ' ]
	run aah-runner status "$a"
	echo "$output"
	[[ $output == *"retried after attempt 1: resized at a step boundary (it ran on 8 devices)"* ]]
}
