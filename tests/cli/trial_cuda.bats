#!/usr/bin/env bats
# aah-trial --backend cuda where it cannot run: a machine without an NVIDIA
# GPU (the development VM, CI), or a build without nvcc and cuDNN. The GPU
# runs themselves are tests/gpu/lease.sh (docs/cuda.md).

load helpers

setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/aah-trial-cuda.XXXXXX")
}

teardown() {
	rm -rf "$T"
}

# Is there a device here? nvidia-smi lists one where the driver sees it.
have_gpu() {
	command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '
}

@test "--backend cuda without a GPU fails with 'no CUDA device', naming the backend" {
	if have_gpu; then
		skip "this machine has a GPU: tests/gpu/lease.sh runs the cuda backend"
	fi
	run aah-trial --trial_dir "$T" --arch "$AAH_ROOT/tests/fixtures/arch/cnn2.json" \
		--backend cuda --warmup_1 1 --train_samples 256 --val_samples 100
	[ "$status" -ne 0 ]
	if [[ $output == *"not built in"* ]]; then
		# a build without nvcc/cuDNN says so instead
		[[ $output == *"compute backend 'cuda' is not built in"* ]]
		return
	fi
	[[ $output == *"no CUDA device"* ]]
	[[ $output == *"cuda backend"* ]]
	/usr/bin/python3 - "$T/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "failed", r
assert "no CUDA device" in r["stop_reason"], r
PY
}

@test "--backend auto, the default, trains on the CPU without a GPU and says why in trial.log and result.json" {
	if have_gpu; then
		skip "this machine has a GPU: tests/gpu/lease.sh checks that auto picks cuda"
	fi
	run aah-trial --trial_dir "$T" --arch "$AAH_ROOT/tests/fixtures/arch/cnn2.json" \
		--warmup_1 1 --train_samples 256 --val_samples 100 --threads 1 --monitor_interval 0
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"aah-trial: rank 0 of 1: backend cpu (auto: no CUDA device visible: "*"), precision fp32"* ]]
	/usr/bin/python3 - "$T/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "succeeded" and r["backend"] == "cpu" and r["devices"] == ["cpu:1"], r
assert r["precision"] == "fp32" and "device_names" not in r, r
PY
	# the same through AAH_BACKEND, as the images set it
	AAH_BACKEND=auto run aah-trial --trial_dir "$T/env" --arch "$AAH_ROOT/tests/fixtures/arch/cnn2.json" \
		--warmup_1 1 --train_samples 256 --val_samples 100 --threads 1 --monitor_interval 0
	[ "$status" -eq 0 ]
	[[ $output == *"backend cpu (auto: no CUDA device visible"* ]]
	# AIPerf's batch rule needs a GPU's memory: here the command's batch stays
	run aah-trial --trial_dir "$T/rule" --arch "$AAH_ROOT/tests/fixtures/arch/cnn2.json" \
		--warmup_1 1 --train_samples 256 --val_samples 100 --threads 1 --monitor_interval 0 \
		--batch_rule aiperf --batch_size 64
	[ "$status" -eq 0 ]
	[[ $output == *"aah-trial: --batch_rule aiperf: no GPU here, batch 64 (--batch_size) kept"* ]]
	[[ $output == *"batch 64 x 1 rank(s)"* ]]
	! grep -q batch_rule "$T/rule/result.json"
	# the help names auto as the default
	run aah-trial --help
	[[ $output == *"--backend"*"auto (cuda where"* ]]
}

@test "status and the report say what a trial ran on: backend, GPU, precision" {
	W=$T/w
	export AAH_WORKDIR=$W
	mkdir -p "$W/experiments"
	"$AAH_ROOT/tests/fixtures/report/make-experiment.sh" "$W/experiments" exp00001 3 2 1
	R=$W/experiments/exp00001/trials/000002/result.json
	sed -i 's/"precision":"fp32","devices":\["cpu:2"\]/"precision":"bf16","backend":"cuda","devices":["cuda:0"],"device_names":["NVIDIA H100 80GB HBM3"],"device_memory_gib":79.2/' "$R"
	grep -q '"backend":"cuda"' "$R"
	run aah-runner status exp00001
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"ran on cuda: NVIDIA H100 80GB HBM3, bf16"* ]]
	run aah-runner report exp00001 -q
	[ "$status" -eq 0 ]
	/usr/bin/python3 - "$W/experiments/exp00001/results.json" <<'PY'
import json, sys
t = {t["id"]: t for t in json.load(open(sys.argv[1]))["trials"]}
assert t["000002"]["backend"] == "cuda" and t["000002"]["device"] == "NVIDIA H100 80GB HBM3", t["000002"]
assert t["000002"]["precision"] == "bf16", t["000002"]
PY
}

@test "the cuda backend is in the build where make found nvcc and cuDNN" {
	cd "$AAH_ROOT"
	info=$(make --no-print-directory config-info)
	if [[ $info != *"cuda-build=1"* ]]; then
		skip "this build has no cuda backend: $info"
	fi
	# libaahcuda.a holds real objects: the kernels and the op table
	run nm -C "$AAH_ROOT/$AAH_BUILD/libaahcuda.a"
	[ "$status" -eq 0 ]
	[[ $output == *" D ops_cuda_backend"* ]]
	# the families' kernels are templates, one instance per type and width
	# (and a sum's rows ahead): batchnorm's statistics over bf16 in 16-byte
	# vectors, four rows a thread ahead
	[[ $output == *"cuk::stats_then_finish<__nv_bfloat16, 8, 4>"* ]]
	[[ $output == *"cudnnConvolutionForward"* ]]
	# cuBLASLt through the table loaded when the backend opens: no
	# program links it (its start-up cost each process 0.4 s; below)
	[[ $output == *" T cuda_blaslt_open"* ]]
	[[ $output != *"U cublasLt"* ]]
	# the casts of mixed precision and the bf16 convolution's descriptors
	[[ $output == *"cuk::cast_k<float, __nv_bfloat16, 8>"* ]]
	[[ $output == *" T cuda_cast"* ]]
	# NCCL's data parallelism where make found nccl.h, and aah-trial links it
	if [[ $info == *"nccl=none"* ]]; then
		echo "# no nccl.h: the CPU ring averages gradients on cuda too" >&3
	else
		[[ $output == *" T cuda_allreduce_mean"* ]]
		[[ $output == *"U ncclAllReduce"* ]]
		[[ $output == *"U ncclCommInitRank"* ]]
		ldd "$AAH_ROOT/$AAH_BUILD/aah-trial" | grep -q 'libnccl'
	fi
	run readelf -d "$AAH_ROOT/$AAH_BUILD/aah-trial"
	[ "$status" -eq 0 ]
	[[ $output == *"libcudnn.so"* && $output != *"libcublas"* ]]
	# and every op slot of the table is filled (the unit test
	# kernels::every_backend_has_every_op checks the table's contents)
	run aah-trial --help
	[[ $output == *"cuda"* ]]
}

@test "the GPU benchmark's ResNet-50 is AIPerf's start graph at 224x224, as aah-runner proposes it" {
	AAH_BUILD=$AAH_BUILD run "$AAH_ROOT/tests/gpu/resnet50-arch.sh" "$T/resnet50.json"
	[ "$status" -eq 0 ]
	/usr/bin/python3 - "$T/resnet50.json" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "aah-arch/1", d["format"]
assert d["input"] == {"height": 224, "width": 224, "channels": 3}, d["input"]
assert d["num_classes"] == 1000, d["num_classes"]
n = collections.Counter(l["type"] for l in d["layers"])
# 1 stem + 16 bottlenecks x 3 + 4 projection shortcuts; one add per block
assert n["conv2d"] == 53 and n["add"] == 16 and n["dense"] == 1, n
assert n["batchnorm"] == 53 and n["global_avg_pool"] == 1 and n["maxpool"] == 1, n
print("# resnet50.json:", dict(n))
PY
}
