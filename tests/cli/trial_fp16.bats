#!/usr/bin/env bats
# --precision fp16 under the dynamic loss scale, on the ref backend's fp16
# emulation (conv2d rounds its operands and results to fp16 as cuDNN's fp16
# convolutions do, inf past 65504 included). The same trainer code drives
# the cuda backend's fp16, which needs a GPU (tests/gpu/lease.sh).

load helpers

setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/aah-trial-fp16.XXXXXX")
	PY=/usr/bin/python3
	# a net small enough for ref's plain loops; 20 steps of 32 an epoch
	common=(--arch "$AAH_ROOT/tests/fixtures/arch/ref_small.json" --backend ref --threads 1
		--train_samples 640 --val_samples 300 --batch_size 32 --initial_lr 0.05 --seed 3
		--monitor_interval 0)
}

teardown() {
	rm -rf "$T"
}

@test "fp16 on ref follows the fp32 loss curve and records its loss scale" {
	run aah-trial --trial_dir "$T/fp32" "${common[@]}" --warmup_1 2 --precision fp32
	[ "$status" -eq 0 ]
	run aah-trial --trial_dir "$T/fp16" "${common[@]}" --warmup_1 2 --precision fp16
	[ "$status" -eq 0 ]
	$PY - "$T" <<'PY'
import json, sys
t = sys.argv[1]
a = [json.loads(l) for l in open(t + "/fp32/metrics.jsonl")]
b = [json.loads(l) for l in open(t + "/fp16/metrics.jsonl")]
assert len(a) == len(b) == 2, (a, b)
for x, y in zip(a, b):
    assert y["precision"] == "fp16" and x["precision"] == "fp32", (x, y)
    assert "loss_scale" not in x and "skipped_steps" not in x, x
    # the default start (65536) overflows nothing in this net: every step applied
    assert y["loss_scale"] == 65536 and y["skipped_steps"] == 0, y
    # fp16 rounds convolutions' operands and results: close, not equal
    assert y["train_loss"] != x["train_loss"], (x, y)
    for k in ("train_loss", "val_loss"):
        assert abs(x[k] - y[k]) <= 0.02 * x[k], (k, x[k], y[k])
r = json.load(open(t + "/fp16/result.json"))
assert r["precision"] == "fp16" and r["skipped_steps"] == 0, r
assert "skipped_steps" not in json.load(open(t + "/fp32/result.json"))
PY
}

@test "a loss scale that overflows fp16 skips those steps and halves until it fits" {
	# 2^24 times the gradient of the mean loss overflows fp16 in the
	# convolution's backward pass, from the second step on; no growth in
	# these 40 steps (the growth is tests/unit/test_loss_scale.c's)
	run aah-trial --trial_dir "$T/hi" "${common[@]}" --warmup_1 2 --precision fp16 \
		--loss_scale 16777216 --loss_scale_interval 1000
	[ "$status" -eq 0 ]
	run aah-trial --trial_dir "$T/lo" "${common[@]}" --warmup_1 2 --precision fp16
	[ "$status" -eq 0 ]
	$PY - "$T" <<'PY'
import json, math, sys
t = sys.argv[1]
hi = [json.loads(l) for l in open(t + "/hi/metrics.jsonl")]
lo = [json.loads(l) for l in open(t + "/lo/metrics.jsonl")]
first, last = hi[0], hi[-1]
print("# skipped steps (cumulative) and loss scale per epoch:",
      [(m["skipped_steps"], m["loss_scale"]) for m in hi])
assert first["skipped_steps"] >= 1, first
# halvings only, from 2^24: one per step skipped
assert last["loss_scale"] == 16777216 / 2 ** last["skipped_steps"], last
# once it fits, no step is skipped: the applied gradients were unscaled
# (scaled ones would have blown the weights up, and overflowed again)
assert last["skipped_steps"] == first["skipped_steps"] < 20, (first, last)
for m in hi:
    assert math.isfinite(m["train_loss"]) and math.isfinite(m["val_loss"]), m
assert last["val_acc"] > 0.3, last       # chance is 0.1
assert abs(last["val_loss"] - lo[-1]["val_loss"]) < 0.5, (last, lo[-1])
PY
}

@test "fp16's loss scale survives a resume, from a checkpoint of this or the earlier format" {
	# no growth in 30 steps: after the first epoch's backoffs, none skipped
	args=("${common[@]}" --warmup_1 3 --precision fp16 --loss_scale 16777216
		--loss_scale_interval 1000)
	run aah-trial --trial_dir "$T/full" "${args[@]}"
	[ "$status" -eq 0 ]
	run aah-trial --trial_dir "$T/cut" "${args[@]}" --max_epochs 1
	[ "$status" -eq 0 ]
	cp -r "$T/cut" "$T/old"
	run aah-trial --trial_dir "$T/cut" "${args[@]}" --resume
	[ "$status" -eq 0 ]
	[[ $output == *"resumed"* ]]
	# The same checkpoint as AAHCKPT2 wrote it (no loss scale, no budget's
	# part: 152-byte header cut to 120): it resumes, the scale starting over.
	$PY - "$T/old/checkpoint/state.bin" <<'PY'
import sys
p = sys.argv[1]
d = open(p, "rb").read()
assert d[:8] == b"AAHCKPT4", d[:8]
open(p, "wb").write(b"AAHCKPT2" + d[8:120] + d[152:])
PY
	run aah-trial --trial_dir "$T/old" "${args[@]}" --resume
	[ "$status" -eq 0 ]
	[[ $output == *"resumed"* ]]
	$PY - "$T" <<'PY'
import json, sys
t = sys.argv[1]
load = lambda d: [json.loads(l) for l in open(t + "/" + d + "/metrics.jsonl")]
full, cut, old = load("full"), load("cut"), load("old")
assert [m["epoch"] for m in cut] == [1, 2, 3] == [m["epoch"] for m in old], (cut, old)
assert full[0]["skipped_steps"] >= 1, full[0]
for a, b in zip(full, cut):
    assert a["loss_scale"] == b["loss_scale"] and a["skipped_steps"] == b["skipped_steps"], (a, b)
    for k in ("train_loss", "val_loss"):
        assert abs(a[k] - b[k]) <= 1e-4 * abs(a[k]), (k, a[k], b[k])
# restored, the scale skipped no more steps after the first epoch; from the
# old format it started again at 2^24 and skipped steps again
assert full[2]["skipped_steps"] == full[0]["skipped_steps"], full
assert old[1]["skipped_steps"] >= 1 and old[1]["loss_scale"] < 16777216, old[1]
PY
}
