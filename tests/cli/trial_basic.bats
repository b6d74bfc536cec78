#!/usr/bin/env bats
# aah-trial as the launcher runs it: arguments, files, errors, signals, resume.

load helpers

setup() { setup_trial_tmp; }
teardown() { teardown_trial_tmp; }

# json FILE EXPR: print a Python expression over the parsed document `d`
json() {
	$PY -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

@test "--help prints the argument table" {
	run aah-trial --help
	[ "$status" -eq 0 ]
	[[ $output == *"--batch_size"* ]]
	[[ $output == *"VC_TASK_INDEX"* ]]
	[[ $output == *"SLURM_PROCID"* ]]
	[[ $output == *"ref (kernels/ref"* ]]
}

@test "a short run writes metrics.jsonl and result.json in the documented formats" {
	run aah-trial --trial_dir "$T" --arch "$ARCH/cnn2.json" --warmup_1 2 --threads 2 \
		--train_samples 2560 --val_samples 1000 --launcher_extra=1 --other x
	[ "$status" -eq 0 ]
	[ "$(grep -c "ignoring unknown argument '--launcher_extra'" <<<"$output")" -eq 1 ]
	[[ $output == *"epoch 2/2"* ]]
	[ "$(wc -l <"$T/metrics.jsonl")" -eq 2 ]
	$PY - "$T" <<'PY'
import json, sys
t = sys.argv[1]
lines = [json.loads(l) for l in open(t + "/metrics.jsonl")]
need = ["format", "epoch", "train_loss", "train_acc", "val_loss", "val_acc", "lr",
        "images_per_sec", "epoch_seconds", "train_flops", "eval_flops", "timestamp", "rank"]
for i, l in enumerate(lines):
    assert l["format"] == "aah-metrics/1" and l["epoch"] == i + 1, l
    assert all(k in l for k in need), l
    assert l["precision"] == "fp32", l     # --precision auto on the CPU backend
assert lines[1]["train_flops"] > lines[0]["train_flops"] > 0
r = json.load(open(t + "/result.json"))
assert r["format"] == "aah-result/1" and r["status"] == "succeeded", r
assert r["stop_reason"] == "budget" and r["epochs_run"] == 2, r
assert r["best_val_acc"] == max(l["val_acc"] for l in lines), r
assert abs(r["total_flops"] - r["train_flops"] - r["eval_flops"]) < 1, r
assert r["devices"] == ["cpu:2"] and r["world_size"] == 1 and r["precision"] == "fp32", r
# cnn2 by hand (AIPerf rules): fwd 8078465 + bwd 15127964 per image, 2560 images
assert abs(lines[0]["train_flops"] / 2560 - 23206429) < 1, lines[0]["train_flops"] / 2560
PY
}

@test "a malformed arch fails with the layer named in result.json" {
	cat >"$T/arch.json" <<'J'
{"format":"aah-arch/1","input":{"height":28,"width":28,"channels":1},"num_classes":10,
 "output":"d","layers":[{"id":"f","type":"flatten","inputs":["input"]},
 {"id":"d","type":"dense","inputs":["nowhere"],"units":10}]}
J
	run aah-trial --trial_dir "$T"
	[ "$status" -ne 0 ]
	[[ $output == *"layer 'd'"* ]]
	[ "$(json "$T/result.json" 'd["status"]')" = failed ]
	[[ "$(json "$T/result.json" 'd["stop_reason"]')" == "error: "*"layer 'd'"* ]]
}

@test "missing data names the directory" {
	run aah-trial --trial_dir "$T" --train_data_dir /nonexistent/fmnist
	[ "$status" -ne 0 ]
	[[ "$(json "$T/result.json" 'd["stop_reason"]')" == *"/nonexistent/fmnist"* ]]
}

@test "SIGTERM writes a canceled result and exits non-zero promptly" {
	aah-trial --trial_dir "$T" --arch "$ARCH/cnn2.json" --warmup_1 50 --threads 1 >"$T/log" 2>&1 &
	pid=$!
	# Training has begun (the handler is set before the budget line).
	wait_for grep -q "budget 50 epochs" "$T/log"
	kill -TERM $pid
	# Promptly: 50 epochs take far longer than the bound; stopping at the
	# next step does not.
	gone() { ! kill -0 "$pid" 2>/dev/null; }
	wait_for gone
	rc=0
	wait $pid || rc=$?
	[ "$rc" -ne 0 ]
	[ "$(json "$T/result.json" 'd["stop_reason"]')" = canceled ]
	[ "$(json "$T/result.json" 'd["status"]')" = failed ]
}

@test "--resume continues from the checkpoint and reproduces the loss curve" {
	common=(--arch "$ARCH/cnn2.json" --warmup_1 3 --threads 2 --train_samples 1536
		--val_samples 500 --seed 5)
	run aah-trial --trial_dir "$T/full" "${common[@]}"
	[ "$status" -eq 0 ]
	run aah-trial --trial_dir "$T/cut" "${common[@]}" --max_epochs 1
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$T/cut/metrics.jsonl")" -eq 1 ]
	[ -f "$T/cut/checkpoint/state.bin" ]
	# A kill between epoch 2's metrics line and its checkpoint: the line is
	# there, the checkpoint is epoch 1's. Resume runs epoch 2 again and
	# keeps one line for it.
	sed 's/"epoch":1,/"epoch":2,/' "$T/cut/metrics.jsonl" >> "$T/cut/metrics.jsonl"
	[ "$(grep -c '"epoch":2,' "$T/cut/metrics.jsonl")" -eq 1 ]
	run aah-trial --trial_dir "$T/cut" "${common[@]}" --resume
	[ "$status" -eq 0 ]
	[[ $output == *"resumed"* ]]
	$PY - "$T" <<'PY'
import json, sys
t = sys.argv[1]
full = [json.loads(l) for l in open(t + "/full/metrics.jsonl")]
cut = [json.loads(l) for l in open(t + "/cut/metrics.jsonl")]
assert [l["epoch"] for l in cut] == [1, 2, 3], cut
for a, b in zip(full, cut):
    for k in ("train_loss", "val_loss", "val_acc", "lr", "train_flops"):
        assert abs(a[k] - b[k]) <= 1e-4 * max(1, abs(a[k])), (k, a[k], b[k])
r = json.load(open(t + "/cut/result.json"))
assert r["epochs_run"] == 3 and r["status"] == "succeeded", r
PY
}

@test "--stop_diverged ends a trial that collapsed to chance after one epoch" {
	# lr 0.1 on 2,560 images blows cnn2 up (train loss ~13, val_acc below 10%)
	common=(--arch "$ARCH/cnn2.json" --warmup_1 3 --threads 2 --train_samples 2560
		--val_samples 1000 --initial_lr 0.1 --monitor_interval 0)
	run aah-trial --trial_dir "$T/on" "${common[@]}" --stop_diverged
	[ "$status" -eq 0 ]
	[[ $output == *"training diverged"* ]]
	[ "$(json "$T/on/result.json" 'd["status"]')" = early_stopped ]
	[ "$(json "$T/on/result.json" 'd["stop_reason"]')" = diverged ]
	[ "$(json "$T/on/result.json" 'd["epochs_run"]')" = 1 ]
	# off by default: the same trial runs its budget
	run aah-trial --trial_dir "$T/off" "${common[@]}"
	[ "$status" -eq 0 ]
	[ "$(json "$T/off/result.json" 'd["epochs_run"]')" = 3 ]
	# and a healthy trial is not stopped by it
	run aah-trial --trial_dir "$T/ok" "${common[@]}" --initial_lr 0.005 --batch_size 32 --stop_diverged
	[ "$status" -eq 0 ]
	[ "$(json "$T/ok/result.json" 'd["stop_reason"]')" = budget ]
}

@test "a bad argument value exits non-zero with a failed result.json" {
	run aah-trial --trial_dir "$T" --epochs=many
	[ "$status" -ne 0 ]
	[ "$(json "$T/result.json" 'd["status"]')" = failed ]
	[[ "$(json "$T/result.json" 'd["stop_reason"]')" == *"--epochs"* ]]
}

@test "no better validation accuracy for --patience epochs stops early" {
	# a learning rate of 0 never improves on epoch 1
	run aah-trial --trial_dir "$T" --arch "$ARCH/cnn_nobn.json" --warmup_1 6 --patience 2 \
		--initial_lr 0 --final_lr 0 --threads 2 --train_samples 640 --val_samples 300
	[ "$status" -eq 0 ]
	[[ $output == *"early stop"* ]]
	[ "$(json "$T/result.json" 'd["status"]')" = early_stopped ]
	[ "$(json "$T/result.json" 'd["stop_reason"]')" = early_stop ]
	[ "$(json "$T/result.json" 'd["epochs_run"]')" = 3 ]
	[ "$(json "$T/result.json" 'd["best_epoch"]')" = 1 ]
}

@test "a precision the backend lacks fails the trial with a clear reason" {
	run aah-trial --trial_dir "$T" --precision fp16 --train_samples 256 --val_samples 100
	[ "$status" -ne 0 ]
	[[ "$(json "$T/result.json" 'd["stop_reason"]')" == *"precision 'fp16' is not available on the CPU backend"* ]]
}

@test "--backend ref trains with the reference ops, and learns what the cpu backend learns" {
	# a net small enough for the reference backend's plain loops
	common=(--arch "$AAH_ROOT/tests/fixtures/arch/ref_small.json" --warmup_1 1 --threads 1
		--train_samples 640 --val_samples 300
		--batch_size 32 --initial_lr 0.05 --seed 3 --monitor_interval 0)
	run aah-trial --trial_dir "$T/ref" --backend ref "${common[@]}"
	[ "$status" -eq 0 ]
	[[ $output == *"epoch 1/1"* ]]
	run aah-trial --trial_dir "$T/cpu" --backend cpu "${common[@]}"
	[ "$status" -eq 0 ]
	$PY - "$T" <<'PY'
import json, sys
t = sys.argv[1]
r = json.load(open(t + "/ref/result.json"))
assert r["format"] == "aah-result/1" and r["status"] == "succeeded", r
assert r["stop_reason"] == "budget" and r["epochs_run"] == 1, r
assert r["best_val_acc"] >= 0.3, r          # chance is 0.1
ref = [json.loads(l) for l in open(t + "/ref/metrics.jsonl")]
cpu = [json.loads(l) for l in open(t + "/cpu/metrics.jsonl")]
assert len(ref) == len(cpu) == 1, (ref, cpu)
for k in ("train_loss", "val_loss"):
    assert abs(ref[0][k] - cpu[0][k]) <= 1e-3 * abs(cpu[0][k]), (k, ref[0][k], cpu[0][k])
assert abs(ref[0]["val_acc"] - cpu[0]["val_acc"]) <= 0.01, (ref[0], cpu[0])
PY
}

@test "an unknown backend or precision fails naming what there is" {
	run aah-trial --trial_dir "$T/a" --backend nope --train_samples 256 --val_samples 100
	[ "$status" -ne 0 ]
	# the list ends with cuda in a build that has the cuda backend
	[[ "$(json "$T/a/result.json" 'd["stop_reason"]')" =~ "unknown compute backend 'nope' (cpu, ref, refdev, cudahost"(", cuda")?")" ]]
	# ref emulates every precision (tests/cli/trial_fp16.bats); a name
	# that is none of them is refused before any backend starts
	run aah-trial --trial_dir "$T/b" --backend ref --precision fp8 --train_samples 256 \
		--val_samples 100
	[ "$status" -ne 0 ]
	[[ $output == *"--precision fp8: must be one of auto, fast, fp32, bf16, fp16"* ]]
}

@test "bf16 trains where a bf16 kernel runs, and trains fp32 saying why once where none does" {
	# the trainer's own probe says which to expect (oneDNN capped at AVX2:
	# no bf16 convolution)
	probe=$(aah-trial --probe)
	run aah-trial --trial_dir "$T/bf16" --arch "$ARCH/cnn2.json" --precision bf16 --warmup_1 1 \
		--threads 2 --train_samples 6000 --val_samples 1000 --batch_size 32 --initial_lr 0.005 \
		--monitor_interval 0
	[ "$status" -eq 0 ]
	if [[ $probe == *"bf16: yes"* ]]; then
		echo "# bf16 ran on this machine" >&3
		[ "$(json "$T/bf16/result.json" 'd["precision"]')" = bf16 ]
		[ "$(grep -c '"precision":"bf16"' "$T/bf16/metrics.jsonl")" -ge 1 ]
		[[ $output != *"training in fp32"* ]]
		# emulated (no bf16 instructions): said once, with what trains faster
		if [[ $probe == *"bf16_native: no"* ]]; then
			[ "$(grep -c -- '--precision bf16: this CPU has no bf16 instructions' \
				<<<"$output")" -eq 1 ]
			[[ $output == *"--precision fast trains fp32 here"* ]]
		else
			[[ $output != *"no bf16 instructions"* ]]
		fi
	else
		echo "# bf16 is not available here: $(grep '^bf16:' <<<"$probe")" >&3
		[ "$(json "$T/bf16/result.json" 'd["precision"]')" = fp32 ]
		[ "$(grep -c '"precision":"fp32"' "$T/bf16/metrics.jsonl")" -ge 1 ]
		# once, naming what is missing and the machine
		[ "$(grep -c -- '--precision bf16: .*; training in fp32' <<<"$output")" -eq 1 ]
		[[ $output == *"oneDNN"*"ISA"* ]]
	fi
	$PY -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["best_val_acc"] >= 0.75, r' \
		"$T/bf16/result.json"
}

@test "--precision fast trains bf16 where the CPU has bf16 instructions, fp32 where it would emulate them" {
	# below AVX512-BF16 (an AVX-512 core without it, as Cascade Lake; AVX2)
	# oneDNN emulates bf16 slower than fp32: fast trains fp32, with nothing
	# to excuse
	for isa in AVX512_CORE_VNNI AVX2; do
		ONEDNN_MAX_CPU_ISA=$isa DNNL_MAX_CPU_ISA=$isa run aah-trial --trial_dir "$T/$isa" \
			--arch "$ARCH/cnn2.json" --precision fast --warmup_1 1 --threads 1 \
			--train_samples 1024 --val_samples 256 --batch_size 32 --monitor_interval 0
		[ "$status" -eq 0 ]
		[ "$(json "$T/$isa/result.json" 'd["precision"]')" = fp32 ]
		[[ $output != *"training in fp32"* ]]
		[[ $output != *"no bf16 instructions"* ]]
		ONEDNN_MAX_CPU_ISA=$isa DNNL_MAX_CPU_ISA=$isa run aah-trial --probe
		[[ $output == *"bf16_native: no (oneDNN dispatches to "*", without bf16 instructions)"* ]]
	done
	# bf16 asked for where oneDNN would emulate it: it trains, and says once
	# that fp32 is faster (where the capped oneDNN has no bf16 kernel at all,
	# as on an AVX2 machine, it trains fp32 saying that instead)
	isa=AVX512_CORE_VNNI
	capped=$(ONEDNN_MAX_CPU_ISA=$isa DNNL_MAX_CPU_ISA=$isa aah-trial --probe)
	ONEDNN_MAX_CPU_ISA=$isa DNNL_MAX_CPU_ISA=$isa run aah-trial --trial_dir "$T/emulated" \
		--arch "$ARCH/cnn2.json" --precision bf16 --warmup_1 1 --threads 1 \
		--train_samples 1024 --val_samples 256 --batch_size 32 --monitor_interval 0
	[ "$status" -eq 0 ]
	if [[ $capped == *"bf16: yes"* ]]; then
		echo "# bf16 emulated under $isa here: warned" >&3
		[ "$(json "$T/emulated/result.json" 'd["precision"]')" = bf16 ]
		[ "$(grep -c -- '--precision bf16: this CPU has no bf16 instructions' \
			<<<"$output")" -eq 1 ]
	else
		echo "# no bf16 kernel under $isa here: trained fp32" >&3
		[ "$(json "$T/emulated/result.json" 'd["precision"]')" = fp32 ]
		[[ $output == *"training in fp32"* ]]
		[[ $output != *"no bf16 instructions"* ]]
	fi
	# uncapped, what the probe says of this machine
	probe=$(aah-trial --probe)
	run aah-trial --trial_dir "$T/fast" --arch "$ARCH/cnn2.json" --precision fast --warmup_1 1 \
		--threads 1 --train_samples 1024 --val_samples 256 --batch_size 32 --monitor_interval 0
	[ "$status" -eq 0 ]
	if [[ $probe == *"bf16_native: yes"* && $probe == *"bf16: yes"* ]]; then
		echo "# bf16 instructions here: fast trained bf16" >&3
		[ "$(json "$T/fast/result.json" 'd["precision"]')" = bf16 ]
	else
		echo "# fast trained fp32 here: $(grep '^bf16' <<<"$probe" | tr '\n' ' ')" >&3
		[ "$(json "$T/fast/result.json" 'd["precision"]')" = fp32 ]
	fi
}

@test "--probe names the CPU, oneDNN's ISA, the layout and bf16" {
	run aah-trial --probe
	[ "$status" -eq 0 ]
	[[ $output == *"cpu: "* ]]
	[[ $output =~ onednn_isa:\ (sse41|avx|avx2|avx2_vnni|avx512_core[a-z0-9_]*) ]]
	[[ $output =~ layout:\ (nChw16c|nChw8c|nhwc) ]]
	[[ $output =~ bf16:\ (yes|no\ \(.+\)) ]]
	# capped at AVX2, oneDNN dispatches to AVX2 and its 8-wide layout
	ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 run aah-trial --probe
	[[ $output == *"onednn_isa: avx2"* ]]
	[[ $output == *"layout: nChw8c"* ]]
}

@test "the host's first rank samples resources into device_info; --monitor_interval 0 turns it off" {
	run aah-trial --trial_dir "$T/on" --arch "$ARCH/cnn2.json" --warmup_1 1 --threads 2 \
		--train_samples 2560 --val_samples 500 --monitor_interval 0.2
	[ "$status" -eq 0 ]
	f=$(ls "$T"/on/device_info/monitor-*.jsonl)
	[ "$(wc -l <"$f")" -ge 1 ]
	# no NVML here: no GPU fields, and the log says why, once
	[ "$(grep -c '^aah-trial: monitor: no GPU readings on this host, NVML unavailable: ' <<<"$output")" -eq 1 ]
	$PY - "$f" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    assert d["format"] == "aah-monitor/1" and 0 <= d["cpu"]["busy_pct"] <= 100, d
    assert d["mem"]["total_bytes"] > 0 and "gpus" not in d, d
    assert d["nvml"].startswith("unavailable: "), d
PY
	run aah-trial --trial_dir "$T/off" --arch "$ARCH/cnn2.json" --warmup_1 1 --threads 2 \
		--train_samples 1280 --val_samples 200 --monitor_interval 0
	[ "$status" -eq 0 ]
	[ ! -e "$T/off/device_info" ]
}

# Issue 13 #7: each number the issue found is refused naming the argument
# and its range, before anything is trained.
@test "numbers out of range are refused naming the argument and range" {
	refused() {  # expected-message args...
		local want=$1; shift
		run aah-trial --trial_dir "$T/bad" "$@"
		[ "$status" -eq 2 ] || { echo "$*: status $status"; echo "$output"; return 1; }
		[[ $output == *"aah-trial: error: $want"* ]] || { echo "$*: $output"; return 1; }
		[ ! -e "$T/bad/metrics.jsonl" ]
	}
	refused "--threads must be between 0 and 1024, got 100000" --threads 100000
	refused "--batch_size must be between 1 and 65536, got 100000" --batch_size 100000
	refused "--epochs must be between 1 and 100000, got -1" --epochs -1
	refused "--train_samples must be between 0 and 1000000000, got -1" --train_samples -1
	refused "--world_size must be between 1 and 65536, got 0" --world_size 0
	run aah-trial --help
	[[ $output == *"--threads"*"range: 0 to 1024"* ]]
}

# Issue 13 #7: a batch larger than the training set is named before
# anything sized by it is allocated ("out of memory allocating 50487200000
# bytes" before).
@test "a batch larger than the data is refused before it is allocated" {
	run aah-trial --trial_dir "$T" --batch_size 65536 --train_samples 1000 --val_samples 100
	[ "$status" -eq 1 ]
	[[ $output == *"batch size 65536 x 1 ranks exceeds the 1000 training samples"* ]]
	[[ $output != *"out of memory"* ]]
	[[ "$(json "$T/result.json" 'd["stop_reason"]')" == *"exceeds the 1000 training samples"* ]]
}

# Issue 13 #7: --threads past the CPUs online is lowered to them, and a
# fractional batch size (a tuner's AIPerf multiplier) is truncated aloud.
@test "--threads past the CPUs and a fractional --batch_size are said, not silent" {
	run aah-trial --trial_dir "$T" --arch "$ARCH/cnn2.json" --threads 1000 --batch_size 16.5 \
		--max_epochs 1 --train_samples 64 --val_samples 32
	[ "$status" -eq 0 ]
	[[ $output == *"--threads 1000 is more than the "*" CPUs online: using "* ]]
	[[ $output == *"--batch_size 16.5 is not a whole number: training with 16 per rank"* ]]
	[[ $output == *"batch 16 x 1"* ]]
}

# Issue 13 #10: with no trial directory, arch or params, aah-trial prints
# its usage and exits 2 instead of training 15 epochs in the current one.
@test "aah-trial with nothing named prints usage, exits 2 and writes nothing" {
	mkdir "$T/cwd"
	cd "$T/cwd"
	run env -u AAH_TRIAL_DIR aah-trial
	[ "$status" -eq 2 ]
	[[ $output == *"nothing to train: give --trial_dir DIR"* ]]
	[[ $output == *"usage: aah-trial --trial_dir DIR"* ]]
	run env -u AAH_TRIAL_DIR aah-trial --epochs 3
	[ "$status" -eq 2 ]
	[ -z "$(ls -A "$T/cwd")" ]
}
