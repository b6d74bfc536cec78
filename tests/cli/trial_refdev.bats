#!/usr/bin/env bats
# --backend refdev: ref's ops on a pretend device (kernels/ref/ref_device.c)
# whose host copies read NaN whenever the trainer has not synced them. A
# trial there must match the same trial on ref bit for bit: that holds only
# if the trainer syncs a device-resident model everywhere the host reads or
# writes it (checkpoints, the CPU ring's allreduces, the logits' gradient),
# which on a GPU only the cuda backend's runs would otherwise show.

load helpers

setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/aah-trial-refdev.XXXXXX")
	PY=/usr/bin/python3
	common=(--arch "$AAH_ROOT/tests/fixtures/arch/ref_small.json" --threads 1
		--train_samples 640 --val_samples 300 --batch_size 32 --initial_lr 0.05 --seed 3
		--monitor_interval 0)
}

teardown() {
	rm -rf "$T"
}

# same DIR_A DIR_B...: every metrics line of the others equals DIR_A's in
# every training figure, and the checkpoints' tensors are the same bytes
same() {
	$PY - "$@" <<'PY'
import json, sys
dirs = sys.argv[1:]
load = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl")]
base = load(dirs[0])
assert base, dirs[0]
for d in dirs[1:]:
    other = load(d)
    assert len(other) == len(base), (d, len(other), len(base))
    for a, b in zip(base, other):
        for k in ("train_loss", "train_acc", "val_loss", "val_acc", "lr", "loss_scale",
                  "skipped_steps"):
            assert a.get(k) == b.get(k), (d, a["epoch"], k, a.get(k), b.get(k))
# the tensors after the 144-byte header (its wall time differs)
tensors = lambda d: open(d + "/checkpoint/state.bin", "rb").read()[144:]
for d in dirs[1:]:
    assert tensors(d) == tensors(dirs[0]), d + ": the checkpoint's tensors differ"
print("# identical:", ", ".join(dirs))
PY
}

@test "a trial on refdev matches ref bit for bit, through a checkpoint and a resume" {
	run aah-trial --trial_dir "$T/ref" --backend ref "${common[@]}" --warmup_1 2
	[ "$status" -eq 0 ]
	run aah-trial --trial_dir "$T/dev" --backend refdev "${common[@]}" --warmup_1 2
	[ "$status" -eq 0 ]
	run aah-trial --trial_dir "$T/cut" --backend refdev "${common[@]}" --warmup_1 2 \
		--max_epochs 1
	[ "$status" -eq 0 ]
	run aah-trial --trial_dir "$T/cut" --backend refdev "${common[@]}" --warmup_1 2 --resume
	[ "$status" -eq 0 ]
	[[ $output == *"resumed"* ]]
	same "$T/ref" "$T/dev" "$T/cut"
}

@test "fp16 on refdev, steps skipped by its loss scale, matches ref" {
	fp16=(--precision fp16 --loss_scale 16777216 --loss_scale_interval 1000 --warmup_1 2)
	run aah-trial --trial_dir "$T/ref" --backend ref "${common[@]}" "${fp16[@]}"
	[ "$status" -eq 0 ]
	run aah-trial --trial_dir "$T/dev" --backend refdev "${common[@]}" "${fp16[@]}"
	[ "$status" -eq 0 ]
	[ "$($PY -c "import json; print(json.load(open('$T/dev/result.json'))['skipped_steps'])")" -ge 1 ]
	same "$T/ref" "$T/dev"
}

@test "two ranks on refdev match two ranks on ref: gradients and statistics over the ring" {
	port() {
		$PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
	}
	for b in ref refdev; do
		p=$(port)
		aah-trial --trial_dir "$T/$b" --backend $b "${common[@]}" --warmup_1 2 --rank 1 \
			--world_size 2 --init_method "tcp://127.0.0.1:$p" >"$T/$b-r1.log" 2>&1 &
		r1=$!
		aah-trial --trial_dir "$T/$b" --backend $b "${common[@]}" --warmup_1 2 --rank 0 \
			--world_size 2 --init_method "tcp://127.0.0.1:$p" >"$T/$b-r0.log" 2>&1
		wait $r1
	done
	same "$T/ref" "$T/refdev"
}
