#!/usr/bin/env bats
# The seed scenario of issue 16 (tests/cli/pool_seed.bash, the same
# assertions as on the local, Slurm and Docker backends) on the kubernetes
# backend: each training's share is one Indexed Job of that many pods, and
# a resize ends the Job at a step boundary (every pod exits 85, which
# fails only its own index; the Job fails once all have exited) and the
# runner relaunches the same attempt as a new Job on the new share with
# --resume, replacing the finished one.
#
# NO Kubernetes API server runs here (none can): the cluster is simulated
# (tests/cli/cluster_sim.bash). It checks every submitted document (strict
# schemas + API server rules) and runs each pod as the real trial entrypoint
# and the real aah-trial, in its own process group. The ranks of both
# trainings share the loopback, so each experiment has its own rendezvous
# port (SEED_MASTER_PORT); on a cluster each pod has its own IP.

load helpers
load pool_seed
load cluster_sim

setup() { cluster_setup; }
teardown() { cluster_teardown; }

@test "kubernetes (cluster simulated, no API server): seed scenario 8 -> 4/4 -> 3/5 -> 0/8, a Job per share, each resize at a step boundary" {
	cluster_note
	SEED_PLATFORM=kubernetes
	SEED_B_EPOCHS=100   # the slowest relaunches: B must outlive A (pool_seed.bash)
	SEED_MASTER_PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	SEED_BACKEND_YAML="kubernetes:
  kubectl: $SIM
  image: aah-trial:cpu
  mountPath: $WORK
  claimName: aah-userhome
  pollInterval: 0.2s
  cpu: 1"
	seed_scenario
	# every share ran as one Job of that many pods; each resize a new Job
	for e in "$AAH_WORKDIR"/experiments/*; do
		awk -v e="$(basename "$e")" '$1 == e { printf "%s%s", n++ ? " " : "", $3 } END { print "" }' \
			"$CLUSTER_SIM_DIR/created.log" >> sizes
	done
	cat sizes
	grep -qx '8 4 3' sizes
	grep -qx '4 5 8' sizes
	# each resize ended its Job with every pod exiting by itself (FailIndex
	# on 85: none was terminated by the Job controller, every log reaped)
	/usr/bin/python3 - "$CLUSTER_SIM_DIR" <<-'PY'
	import json, os, sys
	recs = [json.load(open(os.path.join(sys.argv[1], d, f)))
	        for d in ("jobs", "deleted") for f in os.listdir(os.path.join(sys.argv[1], d))]
	reasons = sorted((r["failed"] or {}).get("reason", "Complete" if r["complete"] else "-") for r in recs)
	print("# Jobs ended:", " ".join(reasons))
	assert reasons == ["Complete"] * 2 + ["FailedIndexes"] * 4, reasons
	assert all(not r["hidden"] for r in recs), [r["hidden"] for r in recs]
	PY
	grep -c "world size" "$AAH_WORKDIR"/experiments/*/trials/000001/trial.log
	# a relaunch of the same attempt replaced its finished Job (AlreadyExists, deleted, created)
	grep -q "delete job .* --cascade=foreground --ignore-not-found --wait=true" "$CLUSTER_SIM_DIR/calls.log"
	# what the simulated API server answered is in the real format
	/usr/bin/python3 "$AAH_ROOT/tests/fixtures/k8s/k8s_check.py" --schema-only --quiet "$CLUSTER_SIM_DIR"/answers/*.json
	# every pod has ended
	! pgrep -f "kubelet_sim.py $CLUSTER_SIM_DIR" > /dev/null
}
