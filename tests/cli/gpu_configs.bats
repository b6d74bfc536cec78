#!/usr/bin/env bats
# The shipped GPU configs train on all of a node's GPUs (issue 28): one
# trial = one node's 8 GPUs, one process per GPU each on its own device,
# --backend cuda, bf16. Rendered offline: the Kubernetes Job through the
# pod entrypoint with the kubelet simulated (tests/fixtures/k8s/kubelet_sim.py;
# no API server and no GPU here). The Slurm side is
# tests/unit/test_slurm_script.c (shipped_imagenet_config_runs_one_process_per_gpu).

load helpers

K8S=$AAH_ROOT/tests/fixtures/k8s

setup() { setup_workdir; }
teardown() { teardown_workdir; }

# rendered_job CONFIG: the Job of trial 3 as JSON in r.json, its 8 GPU
# request, its 8 processes per pod, each with its own device, cuda and bf16
rendered_job() {
	aah-runner check "$1"
	aah-runner render -c "$1" --trial 3 -o json > r.json
	/usr/bin/python3 - r.json "$(basename "$1")" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
job = next(i for i in (d["items"] if d.get("kind") == "List" else [d]) if i["kind"] == "Job")
s = job["spec"]
c = s["template"]["spec"]["containers"][0]
assert s["completions"] == s["parallelism"] == 1, s            # nodes: 1
assert c["resources"]["limits"]["nvidia.com/gpu"] == 8, c["resources"]
env = {e["name"]: e.get("value") for e in c["env"]}
assert env["AAH_PROCS_PER_POD"] == "8", env                  # one process per GPU
a = c["args"]
assert a[a.index("--backend") + 1] in ("cuda", "auto"), a
assert a[a.index("--precision") + 1] == "bf16", a
assert a[a.index("--batch_rule") + 1] == "aiperf" and "--batch_size" not in a, a   # AIPerf's batch rule
print("# %s: 1 pod x 8 GPUs, 8 processes, --backend %s, bf16" % (sys.argv[2], a[a.index("--backend") + 1]))
PY
	# what each of the 8 processes gets from the entrypoint: its own device
	run /usr/bin/python3 "$K8S/kubelet_sim.py" r.json
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *": 8 ranks match the launch contract"* ]]
}

@test "examples/imagenet-kubernetes.yml: 8 processes on a node's 8 GPUs, each its own, cuda, bf16" {
	rendered_job "$AAH_ROOT/examples/imagenet-kubernetes.yml" >&3
}

@test "k8s/config.yml: 8 processes on a node's 8 GPUs, each its own, cuda, bf16" {
	rendered_job "$AAH_ROOT/k8s/config.yml" >&3
}

@test "a mode that would leave GPUs idle: refused unless asked for, then warned about by check" {
	sed 's/^  gpuNum: 8 .*/  gpuNum: 8\n  launcher: mpi/' "$AAH_ROOT/examples/imagenet-slurm.yml" > mpi.yml
	cp "$AAH_ROOT/examples/imagenet-search-space.json" .
	grep -q 'launcher: mpi' mpi.yml
	run aah-runner check mpi.yml
	echo "$output"
	[ "$status" -eq 2 ]
	[[ $output == *"mpi.yml:"*"'trial.launcher' 'mpi' starts one process per node (7 GPUs of each node's 8 would stay unused)"* ]]
	sed -i 's/^  launcher: mpi/  launcher: mpi\n  processMode: node/' mpi.yml
	run aah-runner check mpi.yml
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"warning: "*"mpi.yml:"*"'trial.processMode' node with trial.gpuNum 8: aah-trial trains on one GPU per process, so 7 of each node's GPUs stay unused"* ]]
	# render and status do not repeat it
	run aah-runner render -c "$AAH_ROOT/tests/fixtures/k8s/configs/2nodes-8gpus.yml"
	[ "$status" -eq 0 ]
	[[ $output != *"warning"* ]]
}

@test "trial entrypoint, device mode with one GPU per pod: the process still gets its rank and device" {
	# the pod template leaves RANK_ID, DEVICE_ID and --rank to the entrypoint
	# in device mode (kubernetes_spec.c); with G = 1 it used to exec as is
	run env -i PATH="$PATH" VC_TASK_INDEX=2 AAH_PROCS_PER_POD=1 "$AAH_ROOT/docker/trial-entrypoint.sh" \
		sh -c 'echo "rank $RANK_ID dev $DEVICE_ID cvd $CUDA_VISIBLE_DEVICES args $*"' x --rank '$(RANK_ID)'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx 'rank 2 dev 0 cvd 0 args --rank 2' <<<"$output"
}

@test "AIPerf's GPU command form: check warns with the one-line fix, gpuNum: 8 silences it" {
	U=$AAH_ROOT/tests/fixtures/upstream-configs   # AIPerf's and AAH's own configs, unchanged
	for f in aah-imagenet aiperf-pcl-imagenet aah-cifar10 aiperf-pcl-cifar10; do
		run aah-runner check "$U/$f-config.yml"
		echo "$output"
		[ "$status" -eq 0 ]
		[[ $output == *"warning: $U/$f-config.yml:"*":12: 'trial.command' sets CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 (8 GPUs) with trial.gpuNum 0"* ]]
		[[ $output == *"trains on the first GPU alone and leaves 7 idle. The fix, one line: gpuNum: 8"* ]]
	done
	# one GPU named: nothing idles, nothing to say
	for f in aiperf-thu-imagenet aiperf-thu-imagenetTorch; do
		run aah-runner check "$U/$f-config.yml"
		[ "$status" -eq 0 ]
		[[ $output != *"warning"* ]]
	done
	# the fix, applied: no warning
	cp "$U/aah-imagenet-search_space.json" .
	sed 's/^  gpuNum: 0$/  gpuNum: 8/' "$U/aah-imagenet-config.yml" > fixed.yml
	grep -q '^  gpuNum: 8$' fixed.yml
	run aah-runner check fixed.yml
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output != *"warning"* ]]
}

@test "AIPerf's --slave follows trialConcurrency: every rank gets AAH_SLAVE" {
	sed 's/^trialConcurrency: .*/trialConcurrency: 5/' "$AAH_ROOT/k8s/config.yml" > c.yml
	grep -q '^trialConcurrency: 5$' c.yml
	cp "$AAH_ROOT"/k8s/*.json . 2>/dev/null || true
	aah-runner render -c c.yml --trial 3 -o json > r.json
	/usr/bin/python3 - r.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
job = next(i for i in (d["items"] if d.get("kind") == "List" else [d]) if i["kind"] == "Job")
env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
assert env["AAH_SLAVE"] == "5", env       # aah-trial's --slave, unless the command gives one
PY
}
