#!/usr/bin/env bats
# aah-trial's memory plan: --plan without a device, and the batch checked
# against the memory a CPU trial may use (--memory_limit) before training.

load helpers

setup() { setup_trial_tmp; }
teardown() { teardown_trial_tmp; }

@test "--plan prints bytes per image by kind and the fixed bytes, with no device" {
	run aah-trial --plan --arch "$ARCH/resnet_small.json" --batch_size 64 --precision fp32 \
		--backend cuda
	[ "$status" -eq 0 ]
	[[ $output == *"batch 64, precision fp32, backend cuda"* ]]
	for kind in "kept activations" "activation gradients" "backend workspace" parameters \
		gradients "optimizer state" "total at batch 64"; do
		[[ $output == *"$kind"* ]]
	done
	# sizing a device: 100 MiB hold fewer of these images than 1106
	run aah-trial --plan --arch "$ARCH/resnet_small.json" --batch_size 1106 --backend cuda \
		--memory_limit 100
	[ "$status" -eq 0 ]
	n=$(sed -n 's/^largest batch in --memory_limit 100 MiB: //p' <<<"$output")
	[ "$n" -gt 0 ] && [ "$n" -lt 1106 ]
	run aah-trial --plan --batch_size 64
	[ "$status" -eq 2 ]
	[[ $output == *"--plan needs --arch"* ]]
}

@test "--plan in bf16 on the cpu keeps activations and gradients in bf16: about half of fp32" {
	per_image() { # the first "total" line: the bytes per image
		aah-trial --plan --arch "$ARCH/resnet_small.json" --batch_size 64 --backend cpu \
			--precision "$1" | awk '$1 == "total" { print $2; exit }'
	}
	run aah-trial --plan --arch "$ARCH/resnet_small.json" --batch_size 64 --backend cpu \
		--precision bf16
	[ "$status" -eq 0 ]
	[[ $output == *"precision bf16, backend cpu"* ]]
	grep -Eq 'kept activations .*bf16: [0-9]+ of [0-9]+ outputs' <<<"$output"
	bf16=$(per_image bf16) fp32=$(per_image fp32)
	echo "per image: bf16 $bf16 MB, fp32 $fp32 MB"
	awk -v b="$bf16" -v f="$fp32" 'BEGIN { exit !(b > 0 && b < 0.6 * f) }'
}

@test "--batch_rule aiperf takes the largest batch that fits --memory_limit, and says so" {
	run aah-trial --trial_dir "$T/cap" --arch "$ARCH/cnn2.json" --warmup_1 1 --threads 1 \
		--train_samples 2000 --val_samples 200 --monitor_interval 0 \
		--batch_rule aiperf --batch_size 2000 --memory_limit 1024
	[ "$status" -eq 0 ]
	[ "$(grep -c "needs .* GiB by the memory plan" <<<"$output")" -eq 1 ]
	[[ $output == *"--batch_rule aiperf: batch 2000 needs"*"--memory_limit 1024 MiB less the"*"training with batch "*", the largest that fits"* ]]
	$PY - "$T/cap/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "succeeded", r
assert r["batch_asked"] == 2000 and 0 < r["batch"] < 2000, r
assert r["batch_rule"].endswith("batch 2000 capped to %d by the memory plan" % r["batch"]), r
PY
}

@test "a --batch_size that cannot fit fails before training, with the plan's figures" {
	run aah-trial --trial_dir "$T/big" --arch "$ARCH/cnn2.json" --warmup_1 1 --threads 1 \
		--train_samples 2000 --val_samples 200 --monitor_interval 0 \
		--batch_size 2000 --memory_limit 1024
	[ "$status" -ne 0 ]
	[[ $output == *"batch 2000 does not fit: its memory plan needs "*" GiB ("*" MB per image, "*"--memory_limit 1024 MiB"*", enough for batch "*"; lower --batch_size"* ]]
	[ ! -e "$T/big/metrics.jsonl" ]
	grep -Eq '"status":[[:space:]]*"failed"' "$T/big/result.json"
}
