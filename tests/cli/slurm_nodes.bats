#!/usr/bin/env bats
# Slurm across nodes, with real daemons: three nodes, each slurmd in
# namespaces of its own (network, hostname, mount: its address on the
# cluster's bridge, its own /tmp and spool; /userhome shared), brought up
# from the slurm.conf and gres.conf `aah-runner slurm-conf` writes
# (tests/slurm/cluster.bash, slurm_nodes_up). The runner runs on the host,
# as on a login node; every test's work directory is in the shared
# userhome. One cluster for the file; a test that loses a node brings it
# back in teardown.

load helpers
load mpi
load pool_seed
source "$AAH_ROOT/tests/slurm/cluster.bash"

# Where namespaces or Slurm's daemons are not to be had (not root, no
# slurmd, a sandbox without unshare), every test skips saying why; a
# cluster that could start and did not is a failure.
setup_file() {
	export T_FILE_START=$SECONDS NODES_SKIP
	if NODES_SKIP=$(slurm_nodes_unavailable); then
		return 0
	fi
	NODES_SKIP=
	SLURM_TEST_SLURMD_TIMEOUT=10 slurm_file_nodes_up slurm-nodes
}

teardown_file() {
	[ -n "$NODES_SKIP" ] && return 0
	slurm_file_nodes_down
	echo "# slurm nodes file: $((SECONDS - T_FILE_START)) s with the cluster up" >&3
}

setup() {
	[ -z "$NODES_SKIP" ] || skip "no multi-node Slurm test cluster here: $NODES_SKIP"
	D=$SLURM_TEST_DIR
	WORK=$(mktemp -d "$D/userhome/test.XXXXXX")
	export AAH_WORKDIR=$WORK/aah-work
	cd "$WORK" || return 1
	RUNNER_PID=
}

teardown() {
	local n
	[ -z "$NODES_SKIP" ] || return 0
	# shellcheck disable=SC2086 # one PID a word
	if [ -n "${RUNNER_PID:-}" ]; then kill -9 $RUNNER_PID 2>/dev/null || true; fi
	rm -f "$D/epilog.hold"
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		echo "--- squeue -t all:"; squeue -t all 2>&1
		cat "$WORK"/*.log 2>/dev/null | tail -n 20
		dump_experiments 20
		slurm_nodes_logs "$D"
	fi
	squeue -h -o %i 2>/dev/null | while read -r j; do scancel "$j" 2>/dev/null; done
	wait_for eval '[ -z "$(squeue -h -o %i)" ]'
	for n in $SLURM_TEST_NODE_NAMES; do
		[ -s "$D/run/$n.ns" ] && continue
		slurm_node_start "$D" "$n"
		# idle in sinfo is not yet back: a CI run's next test got the node
		# restarted a second before, and srun's launch on it failed
		# ("Communication connection failure", nothing in its slurmd's log);
		# a step of its own says it takes launches again
		WAIT_S=30 wait_for srun -w "$n" -N 1 -t 1 true
	done
	cd / && rm -rf "$WORK"
}

# nodes_config FILE [extra top-level lines...]; trial lines in TRIAL_YAML,
# slurm lines in SLURM_YAML.
nodes_config() {
	local f=$1 line; shift
	{
		echo "experimentName: slurm-nodes"
		echo "trainingServicePlatform: slurm"
		echo "searchSpacePath: $AAH_ROOT/examples/quickstart-search-space.json"
		echo "maxTrialNum: 1"
		for line in "$@"; do echo "$line"; done
		echo "tuner:"
		echo "  builtinTunerName: Random"
		echo "trial:"
		printf "%s\n" "$TRIAL_YAML"
		echo "slurm:"
		echo "  pollInterval: 0.5s"
		if [ -n "${SLURM_YAML:-}" ]; then printf "%s\n" "$SLURM_YAML"; fi
	} > "$f"
}

# Fashion-MNIST, a little of it, on the CPU ranks (the nodes' GPUs are fake).
FMNIST="aah-trial --dataset /usr/share/datasets/fashion-mnist --threads 1"
FMNIST+=" --arch $AAH_ROOT/examples/fashion-mnist-cnn.json --batch_size 32"
FMNIST+=" --warmup_1 1 --train_samples 256 --val_samples 128"

addr_of() { awk -v n="$1" '$2 == n { print $1 }' "$D/hosts"; }
# ring_peer LOG RANK: the address rank RANK's allreduce ring sends to.
ring_peer() { sed -n "s/^aah-trial: rank $2 of [0-9]*: allreduce ring to rank [0-9]* at \([0-9.]*\):.*/\1/p" "$1"; }
jobs_of() { grep -o '"event":"trial_submitted".*"job":"[0-9]*"' "$AAH_WORKDIR/experiments/$1/journal.jsonl" | sed 's/.*"job":"\([0-9]*\)"/\1/'; }

@test "slurm nodes: 3 slurmd, each in namespaces of its own (hostname, address, /tmp), the cluster up from aah-runner slurm-conf's files" {
	sed 's/^/# /' "$D/log/slurm-conf.log" | head -n 5 >&3
	sinfo -N -h -o '%N %T CPUs=%c %G' | sed 's/^/# sinfo: /' >&3
	[ "$(sinfo -N -h -o '%N %T %G' | tr '\n' ' ')" = "node1 idle gpu:2 node2 idle gpu:2 node3 idle gpu:2 " ]
	grep -q "^# slurm.conf written by aah-runner slurm-conf from $D/hosts.txt:" "$D/slurm.conf"
	grep -q "^SlurmctldHost=head(10.77.0.1)$" "$D/slurm.conf"
	host_net=$(readlink /proc/$$/ns/net)
	seen=" $host_net "
	for n in node1 node2 node3; do
		# slurm.conf has the node's CPUs and memory as its own slurmd -C says
		probed=$(slurm_node_exec "$D" "$n" slurmd -C | head -n 1)
		cpus=$(sed 's/.* CPUs=\([0-9]*\) .*/\1/' <<< "$probed")
		mem=$(sed 's/.* RealMemory=\([0-9]*\).*/\1/' <<< "$probed")
		grep -qx "NodeName=$n NodeAddr=$(addr_of "$n") CPUs=$cpus RealMemory=$mem Gres=gpu:2 State=UNKNOWN" "$D/slurm.conf"
		grep -qx "NodeName=$n Name=gpu File=$D/dev/gpu\[0-1\]" "$D/gres.conf"
		# its slurmd in a network namespace of its own, its hostname its name
		pid=$(cat "$D/nodes/$n/slurmd.pid")
		net=$(readlink "/proc/$pid/ns/net")
		[[ $seen != *" $net "* ]]
		seen+="$net "
		[ "$(readlink "/proc/$pid/ns/uts")" != "$(readlink /proc/$$/ns/uts)" ]
		[ "$(slurm_node_exec "$D" "$n" hostname)" = "$n" ]
		[ "$(slurm_node_exec "$D" "$n" ip -4 -o addr show eth0 | awk '{ print $4 }')" = "$(addr_of "$n")/24" ]
		# a /tmp of its own, with its spool; the shared directory is shared
		slurm_node_exec "$D" "$n" test -d "/tmp/aah-slurmd-$n"
		[ "$(slurm_node_exec "$D" "$n" ls /tmp | grep -c '^aah-slurmd-')" -eq 1 ]
		slurm_node_exec "$D" "$n" touch "$D/userhome/from-$n"
		echo "# $n: slurmd $pid, $net, hostname $n, $(addr_of "$n")" >&3
	done
	[ "$(ls "$D/userhome" | grep -c '^from-node')" -eq 3 ]
	# slurmctld in the head's namespace; the host's network untouched
	[ "$(readlink "/proc/$(cat "$D/run/slurmctld.pid")/ns/net")" != "$host_net" ]
	! ip -o link | grep -qE 'aahbr0|v-node'
}

@test "slurm nodes: a host that slurm.conf does not list: its slurmd cannot start, and the start names it and why" {
	# node4 resolves (the cluster's hosts file has it) but slurm.conf has no
	# entry for it: its slurmd finds no NodeName of its own and exits
	echo "10.77.0.14 node4" >> "$D/hosts"
	run slurm_node_start "$D" node4
	slurm_node_kill "$D" node4
	sed -i '/ node4$/d' "$D/hosts"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"slurm test cluster: slurmd on node4 did not start: "*"fatal: Unable to determine this slurmd's NodeName"* ]]
	echo "# $(grep -m1 'slurmd on node4' <<< "$output")" >&3
	# nothing of node4 is left: no process in its namespaces, no holder
	[ ! -e "$D/run/node4.ns" ]
	[ "$(sinfo -h -N -o %N | tr '\n' ' ')" = "node1 node2 node3 " ]
}

@test "slurm nodes: a 2-node trial: each rank on its own node gets the contract's hosts, rendezvous and allreduce cross the namespaces" {
	TRIAL_YAML="  nodes: 2
  gpuNum: 1
  ncclCommId: true
  command: >-
    echo \"rank \$RANK_ID of \$RANK_SIZE on \$(hostname): MASTER_ADDR=\$MASTER_ADDR VC_WORKER_HOSTS=\$VC_WORKER_HOSTS NCCL_COMM_ID=\$NCCL_COMM_ID CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES\";
    exec $FMNIST" nodes_config c.yml
	run timeout 300 aah-runner create -c c.yml --seed 5
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	d=$AAH_WORKDIR/experiments/$id/trials/000001
	grep -E '^(aah: slurm job|rank|aah-trial: rank .*ring)' "$d/trial.log" | sed 's/^/# /' >&3
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	grep -q '^#SBATCH --nodes=2$' "$d/slurm.sh"
	grep -q '^#SBATCH --ntasks-per-node=1$' "$d/slurm.sh"
	grep -q '^#SBATCH --gres=gpu:1$' "$d/slurm.sh"
	h0=$(sed -n 's/^rank 0 of 2 on \([a-z0-9]*\):.*/\1/p' "$d/trial.log")
	h1=$(sed -n 's/^rank 1 of 2 on \([a-z0-9]*\):.*/\1/p' "$d/trial.log")
	[ -n "$h0" ] && [ -n "$h1" ] && [ "$h0" != "$h1" ]
	# each rank has the real hosts, rank 0's first, and a GPU Slurm gave it
	for r in 0 1; do
		h=$h0; [ "$r" = 0 ] || h=$h1
		grep -q "^rank $r of 2 on $h: MASTER_ADDR=$h0 VC_WORKER_HOSTS=$h0,$h1 NCCL_COMM_ID=$h0:[0-9]* CUDA_VISIBLE_DEVICES=[01]$" "$d/trial.log"
	done
	grep -q "\"server_id\":[[:space:]]*\"$h1\"" "$d/rank_table.json"
	# the allreduce ring runs between the two nodes' addresses
	[ "$(ring_peer "$d/trial.log" 0)" = "$(addr_of "$h1")" ]
	[ "$(ring_peer "$d/trial.log" 1)" = "$(addr_of "$h0")" ]
	[ "$(jq -r .world_size "$d/result.json")" -eq 2 ]
	[ "$(jq -r .status "$d/result.json")" = succeeded ]
}

@test "slurm nodes: trial.launcher mpi across 2 nodes: mpirun in the batch step starts the other rank through Slurm, the ranks train together" {
	command -v mpirun >/dev/null || skip "no mpirun here (apt-get install openmpi-bin)"
	mpi_config slurm
	printf 'slurm:\n  pollInterval: 0.5s\n' >> c.yml
	run timeout 300 aah-runner create -c c.yml --seed 5
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	d=$AAH_WORKDIR/experiments/$id/trials/000001
	sed 's/^/# hostfile: /' "$d/hostfile" >&3
	grep -E '^(mpi rank [01] on|aah-trial: rank .*ring)' "$d/trial.log" | sed 's/^/# /' >&3
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	grep -q '^#SBATCH --nodes=2$' "$d/slurm.sh"
	[ "$(wc -l < "$d/hostfile")" -eq 2 ]
	h0=$(sed -n 1p "$d/hostfile" | cut -d' ' -f1)
	h1=$(sed -n 2p "$d/hostfile" | cut -d' ' -f1)
	[ "$h0" != "$h1" ]
	[ "$(tr '\n' ' ' < "$d/hostfile")" = "$h0 slots=1 $h1 slots=1 " ]
	grep -qx "mpi rank 0 on $h0" "$d/trial.log"
	grep -qx "mpi rank 1 on $h1" "$d/trial.log"
	[ "$(ring_peer "$d/trial.log" 0)" = "$(addr_of "$h1")" ]
	[ "$(jq -r .world_size "$d/result.json")" -eq 2 ]
}

@test "slurm nodes: a node lost under a 2-node trial: NODE_FAIL, relaunched uncharged from its checkpoint on the nodes left; nothing lost or run twice" {
	TRIAL_YAML="  nodes: 2
  retries: 0
  command: $AAH_ROOT/tests/fixtures/trials/ckpt_trial.sh
  env:
    TRIAL_RUN_LOG: $WORK/runs.log
    TRIAL_STEPS: \"4\"
    TRIAL_STEP_S: \"0.2\"
    TRIAL_GATE: $WORK/go" nodes_config c.yml
	aah-runner create -c c.yml -q > runner.log 2>&1 &
	RUNNER_PID=$!
	wait_for has_experiment
	id=$(only_experiment)
	E=$AAH_WORKDIR/experiments/$id
	# both ranks wait before the last step: step 3 is in the checkpoint
	wait_for eval '[ "$(cat "$E/trials/000001/checkpoint/step" 2>/dev/null)" = 3 ]'
	job=$(jobs_of "$id")
	h1=$(awk '$1 == 1 && $3 == 1 && / start=0$/ { print $4 }' runs.log)
	[ -n "$h1" ]
	# rank 1's node is lost: its slurmd, the job's step and the rank, at once
	slurm_node_kill "$D" "$h1"
	# Slurm calls it down after SlurmdTimeout and ends the job NODE_FAIL;
	# the runner relaunches attempt 1 (no retry was left to charge)
	WAIT_S=120 wait_for grep -q '"event":"trial_retry","trial":"000001","trial_seq":1,"attempt":1,"reason":"relaunched from its checkpoint: slurm job '"$job"' NODE_FAIL' "$E/journal.jsonl"
	echo "# node $h1 lost: sinfo: $(sinfo -h -N -n "$h1" -o '%N %T %E'); job $job: $(squeue -h -t all -j "$job" -o '%T %r' 2>/dev/null)" >&3
	# the relaunch runs on the two nodes left, from step 3
	WAIT_S=60 wait_for eval '[ "$(grep -c "^1 1.1 [01] .* start=3$" runs.log)" -eq 2 ]'
	touch "$WORK/go"
	wait "$RUNNER_PID"
	RUNNER_PID=
	cat runs.log | sed 's/^/# runs.log: /' >&3
	journal "$id" | grep -E '"event":"trial_(submitted|retry|finished)"' | cut -c1-220 | sed 's/^/# journal: /' >&3
	# the relaunch's ranks on the nodes left, none on the lost one
	hosts=$(awk '$2 == "1.1" && / start=3$/ { print $4 }' runs.log | sort | tr '\n' ' ')
	[[ " $hosts" != *" $h1 "* ]]
	[ "$(wc -w <<< "$hosts")" -eq 2 ]
	# nothing run twice: steps 0..2 ran in the first launch only, step 3 in the
	# relaunch only, and the trial finished once, as attempt 1, succeeded
	[ "$(grep -c ' done=' runs.log)" -eq 2 ]
	[ "$(grep -c '^1 1 [01] .* done=' runs.log)" -eq 0 ]
	[ "$(grep -c '^1 1.1 [01] .* done=4$' runs.log)" -eq 2 ]
	[ "$(count_events "$id" trial_finished)" -eq 1 ]
	journal "$id" | grep '"event":"trial_finished"' | grep -q '"attempt":1,"state":"succeeded"'
	[ "$(count_events "$id" trial_submitted)" -eq 2 ]
	[ "$(jq -r .status "$E/trials/000001/attempt-1.1/result.json" 2>/dev/null || jq -r .status "$E/trials/000001/result.json")" = succeeded ]
}

@test "slurm nodes: stop waits until squeue shows none of the experiment's jobs, not even a COMPLETING one" {
	TRIAL_YAML="  nodes: 2
  command: $AAH_ROOT/tests/fixtures/trials/ckpt_trial.sh
  env:
    TRIAL_RUN_LOG: $WORK/runs.log
    TRIAL_STEPS: \"4\"
    TRIAL_STEP_S: \"0.2\"
    TRIAL_GATE: $WORK/go" nodes_config c.yml
	# the job's epilog holds it COMPLETING while this file exists
	touch "$D/epilog.hold"
	aah-runner create -c c.yml -q > runner.log 2>&1 &
	RUNNER_PID=$!
	wait_for has_experiment
	id=$(only_experiment)
	wait_for eval '[ "$(grep -c " start=0$" runs.log 2>/dev/null)" -eq 2 ]'
	job=$(jobs_of "$id")
	aah-runner stop "$id" > stop.log 2>&1 &
	stop=$!
	# the runner canceled the job and waits for it: squeue shows it
	# COMPLETING while the epilog runs, and stop has not returned
	wait_for grep -q "stopping: waiting for 1 canceled job to end: 000001 (job $job)" runner.log
	wait_for eval '[ "$(squeue -h -j "$job" -o %T)" = COMPLETING ]'
	kill -0 "$stop"
	kill -0 "$RUNNER_PID"
	sed 's/^/# runner: /' runner.log >&3
	echo "# squeue while stop waits: $(squeue -h -j "$job" -o '%i %T %r')" >&3
	rm "$D/epilog.hold"
	wait "$stop"
	# the moment stop returns, squeue shows nothing of the experiment
	[ -z "$(squeue -h -o %i)" ]
	echo "# after stop: squeue -t all: $(squeue -h -t all -j "$job" -o '%i %T')" >&3
	cat stop.log
	grep -qx "experiment $id stopped" stop.log
	wait "$RUNNER_PID"
	RUNNER_PID=
	journal "$id" | grep '"event":"trial_finished"' | grep -q '"state":"canceled".*"reason":"stopped"'
	journal "$id" | grep -q '"event":"runner_stopped"'
}

# elastic_yaml FILE EPOCHS: a training of the device pool (4 GPUs: two
# nodes' GRES), aah-trial on CPU ranks (a tiny net, Fashion-MNIST, the
# same global batch at every world size), up to 2 ranks a node.
elastic_yaml() {
	cat > "$1" <<-EOF
	experimentName: elastic-nodes
	maxTrialNum: 1
	trainingServicePlatform: slurm
	searchSpacePath: $WORK/space.json
	tuner:
	  builtinTunerName: NetworkMorphism
	  initialArch: $AAH_ROOT/tests/fixtures/arch/cnn_nobn.json
	trial:
	  command: aah-trial --threads 1 --global_batch 120 --warmup_1 $2 --train_samples 9600 --val_samples 200 --seed 3 --initial_lr 0.05 --monitor_interval 0 --patience 100
	  gpuNum: 1
	pool:
	  devices: 4
	slurm:
	  pollInterval: 0.5s
	  tasksPerNode: 2
	EOF
}

# a_applied4 N: the ledger has N `applied` lines of A's training at 4 devices
a_applied4() {
	[ "$(grep -c "\"event\":\"applied\",\"training\":\"$a/000001\",\"devices\":4[,}]" "$AAH_WORKDIR/pool/ledger.jsonl")" -eq "$1" ]
}

@test "slurm nodes: elastic across nodes: a pool over two nodes' GPUs; a training on two nodes shrinks to one when another joins and grows back to two when it ends, at step boundaries" {
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || skip "no Fashion-MNIST in /usr/share/datasets (make deps)"
	echo '{"learning_rate": {"_type": "choice", "_value": [0.05]}}' > space.json
	elastic_yaml a.yml 40
	elastic_yaml b.yml 3
	aah-runner create -c a.yml -q > a.log 2>&1 &
	ra=$!
	RUNNER_PID=$ra
	wait_for one_experiment
	a=$(only_experiment)
	WAIT_S=120 wait_for applied "$a" 4
	aah-runner create -c b.yml -q > b.log 2>&1 &
	rb=$!
	RUNNER_PID="$ra $rb"
	wait_for two_experiments
	b=$(ls "$AAH_WORKDIR/experiments" | grep -v "^$a\$")
	WAIT_S=120 wait_for applied "$a" 2
	WAIT_S=120 wait_for applied "$b" 2
	wait "$rb"
	# B ended: A takes the 4 again, on two nodes
	WAIT_S=120 wait_for a_applied4 2
	wait "$ra"
	RUNNER_PID=
	A=$AAH_WORKDIR/experiments/$a/trials/000001
	grep -o '"shares":{[^}]*}' "$AAH_WORKDIR/pool/ledger.jsonl" | sed "s#$a#A#g; s#$b#B#g" > allocs
	sed 's/^/# ledger: /' allocs >&3
	[ "$(tr '\n' ' ' < allocs)" = '"shares":{"A/000001":4} "shares":{"A/000001":2,"B/000001":2} "shares":{"A/000001":4} ' ]
	held_within_pool "$AAH_WORKDIR/pool/ledger.jsonl"
	# A's jobs, as Slurm placed them: two nodes, then one, then two again
	grep -E '^aah: slurm job [0-9]+ on ' "$A/trial.log" | sed 's/^/# A: /' >&3
	grep -E '^aah: slurm job [0-9]+ on ' "$A/trial.log" | sed -E 's/^aah: slurm job [0-9]+ on //' > placed
	[ "$(wc -l < placed)" -eq 3 ]
	grep -Eq '^node\[[0-9]+[-,][0-9]+\] \(4 tasks\)$' <(sed -n 1p placed)
	grep -Eq '^node[0-9]+ \(2 tasks\)$' <(sed -n 2p placed)
	grep -Eq '^node\[[0-9]+[-,][0-9]+\] \(4 tasks\)$' <(sed -n 3p placed)
	# the ranks saw each change at a step boundary; the 4-rank ring crossed nodes
	grep -E 'world size [0-9]+ -> [0-9]+ at step' "$A/trial.log" | sed 's/^/# A: /' >&3
	grep -q "world size 4 -> 2 at step [0-9]* (epoch [0-9]*, batch [0-9]*)" "$A/trial.log"
	grep -q "world size 2 -> 4 at step [0-9]* (epoch [0-9]*, batch [0-9]*)" "$A/trial.log"
	grep -E '^aah-trial: rank [0-9] of 4: allreduce ring' "$A/trial.log" | tail -n 4 > ring
	sed 's/^/# A: /' ring >&3
	[ "$(grep -oE 'at 10\.77\.0\.[0-9]+:' ring | sort -u | wc -l)" -eq 2 ]
	# both succeeded; every relaunch a resize, none a retry; A's epochs each once
	grep -q '"state":"succeeded"' "$AAH_WORKDIR/experiments/$a/journal.jsonl"
	grep -q '"state":"succeeded"' "$AAH_WORKDIR/experiments/$b/journal.jsonl"
	[ "$(cat "$AAH_WORKDIR"/experiments/*/journal.jsonl | grep '"event":"trial_retry"' | grep -vc '"reason":"resized at a step boundary')" -eq 0 ]
	/usr/bin/python3 - "$A" <<'PY'
import json, sys
el = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl")]
assert [l["epoch"] for l in el] == list(range(1, 41)), [l["epoch"] for l in el]
r = json.load(open(sys.argv[1] + "/result.json"))
assert r["status"] == "succeeded" and r["epochs_run"] == 40, r
PY
}
