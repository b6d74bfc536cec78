#!/usr/bin/env bats
# ModelArts' MPI form, the trainer's side: mpirun (Debian's Open MPI) starts
# the ranks, each takes its rank and the world size from
# OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE, and they meet at
# MASTER_ADDR:MASTER_PORT. Skipped, saying so, where mpirun is missing.

load helpers

setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/aah-trial-mpi.XXXXXX")
	ARCH=$AAH_ROOT/tests/fixtures/arch/cnn_nobn.json
	PY=/usr/bin/python3
	PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
}

teardown() {
	rm -rf "$T"
}

@test "mpirun starts 2 ranks that train as one data-parallel trial" {
	if ! command -v mpirun >/dev/null; then
		skip "no mpirun here (apt-get install openmpi-bin; scripts/deps.sh installs it)"
	fi
	# --allow-run-as-root: containers run as root; --oversubscribe: 2 CPUs
	# shared with the rest of the suite. The bound fails the test loudly.
	run timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 \
		-x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$PORT" \
		aah-trial --trial_dir "$T/t" --arch "$ARCH" --warmup_1 1 --threads 1 \
		--train_samples 1600 --val_samples 500 --seed 3 --batch_size 32
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"batch 32 x 2 rank(s)"* ]]
	$PY - "$T/t" <<'PY'
import json, sys
t = sys.argv[1]
lines = [json.loads(l) for l in open(t + "/metrics.jsonl")]
assert len(lines) == 1 and lines[0]["rank"] == 0, lines
r = json.load(open(t + "/result.json"))
assert r["world_size"] == 2 and r["status"] == "succeeded", r
PY
}
