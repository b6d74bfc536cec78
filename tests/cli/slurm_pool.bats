#!/usr/bin/env bats
# The seed scenario of issue 16 (tests/cli/pool_seed.bash, the same
# assertions as elastic_pool.bats) on real Slurm daemons (tests/slurm/):
# pool.devices stands for the partition's 8 CPUs (declared on this 2-core
# machine), each training's share runs as one Slurm job of that many tasks
# (slurm.tasksPerNode 8: up to 8 ranks on the one node), and a resize ends
# the job at a step boundary (every rank exits 85) and submits a new job on
# the new share with --resume.

load helpers
load pool_seed
source "$AAH_ROOT/tests/slurm/cluster.bash"

setup_file() { SLURM_TEST_CPUS=8 slurm_file_cluster_up slurm; }
teardown_file() { slurm_file_cluster_down; }

setup() { setup_workdir; }

teardown() {
	squeue -h -o %i 2>/dev/null | while read -r j; do scancel "$j" 2>/dev/null; done
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		echo "--- squeue -t all:"; squeue -t all 2>&1
		dump_experiments 30
		slurm_cluster_logs "$SLURM_TEST_DIR"
	fi
	teardown_workdir
}

@test "slurm: seed scenario 8 -> 4/4 -> 3/5 -> 0/8 on real daemons, each at a step boundary, losses as uninterrupted" {
	SEED_PLATFORM=slurm SEED_BACKEND_YAML=$'slurm:\n  pollInterval: 0.5s\n  tasksPerNode: 8'
	seed_scenario
	# every share ran as its own Slurm job of that many tasks
	for d in "$AAH_WORKDIR"/experiments/*/trials/000001; do
		grep "^aah: slurm job [0-9]* on localhost ([0-9] tasks)" "$d/trial.log"
	done
	grep -q "^aah: slurm job [0-9]* on localhost (3 tasks)" "$AAH_WORKDIR"/experiments/*/trials/000001/trial.log
	grep -q "^aah: slurm job [0-9]* on localhost (5 tasks)" "$AAH_WORKDIR"/experiments/*/trials/000001/trial.log
}
