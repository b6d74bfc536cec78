#!/usr/bin/env bats
# aah-trial data parallel on CPU: ranks meet through --init_method and
# average gradients over a TCP ring.

load helpers

setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/aah-trial-dist.XXXXXX")
	ARCH=$AAH_ROOT/tests/fixtures/arch/cnn_nobn.json
	PY=/usr/bin/python3
	PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
}

teardown() {
	rm -rf "$T"
}

@test "2 local ranks match 1 rank with the doubled batch" {
	common=(--arch "$ARCH" --warmup_1 2 --threads 1 --train_samples 3200 --val_samples 1000
		--seed 3 --initial_lr 0.05)
	aah-trial --trial_dir "$T/one" "${common[@]}" --batch_size 64 >"$T/one.log" 2>&1
	aah-trial --trial_dir "$T/two" "${common[@]}" --batch_size 32 --rank 1 --world_size 2 \
		--init_method "tcp://127.0.0.1:$PORT" >"$T/r1.log" 2>&1 &
	r1=$!
	RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
		aah-trial --trial_dir "$T/two" "${common[@]}" --batch_size 32 >"$T/r0.log" 2>&1
	wait $r1
	$PY - "$T" <<'PY'
import json, sys
t = sys.argv[1]
one = [json.loads(l) for l in open(t + "/one/metrics.jsonl")]
two = [json.loads(l) for l in open(t + "/two/metrics.jsonl")]
assert len(one) == len(two) == 2, (one, two)
for a, b in zip(one, two):
    assert abs(a["train_loss"] - b["train_loss"]) < 2e-3, (a["train_loss"], b["train_loss"])
    assert abs(a["val_loss"] - b["val_loss"]) < 2e-3, (a["val_loss"], b["val_loss"])
    assert abs(a["val_acc"] - b["val_acc"]) <= 0.005, (a["val_acc"], b["val_acc"])
    assert abs(a["train_flops"] - b["train_flops"]) < 1, (a["train_flops"], b["train_flops"])
r = json.load(open(t + "/two/result.json"))
assert r["world_size"] == 2 and r["status"] == "succeeded", r
# both ranks started the monitor; the host's first sampled it: one file
import glob
mon = glob.glob(t + "/two/device_info/monitor-*.jsonl")
assert len(mon) == 1 and all(json.loads(l)["format"] == "aah-monitor/1" for l in open(mon[0])), mon
PY
}

@test "a rank whose peers never arrive fails within the timeout" {
	# Its own --dist_timeout ends it; `timeout` fails the test loudly if not.
	run timeout 300 aah-trial --trial_dir "$T" --arch "$ARCH" --rank 0 --world_size 2 \
		--init_method "tcp://127.0.0.1:$PORT" --dist_timeout 2 --train_samples 640
	[ "$status" -eq 1 ]    # not 86: no group had formed, no peer was lost
	[[ $output == *"1 of 2 ranks"* ]]
	grep -q '"stop_reason".*rendezvous' "$T/result.json"
}

@test "a rank waiting for its peers stops at SIGTERM (a pod deleted), canceled, not at its timeout" {
	aah-trial --trial_dir "$T" --arch "$ARCH" --rank 0 --world_size 2 \
		--init_method "tcp://127.0.0.1:$PORT" --dist_timeout 600 --train_samples 640 > "$T/r0.log" 2>&1 &
	r0=$!
	# rank 0 listens on the rendezvous port (state 0A in /proc/net/tcp)
	listening() { grep -qi ":$(printf '%04X' "$PORT") 00000000:0000 0A" /proc/net/tcp; }
	wait_for listening
	kill -TERM "$r0"
	# far sooner than the 600 s of --dist_timeout: wait_for's own bound
	gone() { ! kill -0 "$r0" 2>/dev/null; }
	wait_for gone || { kill -KILL "$r0"; false; }
	rc=0
	wait "$r0" || rc=$?
	cat "$T/r0.log"
	[ "$rc" -eq 1 ]
	grep -q "stopped by a signal while waiting for the other ranks" "$T/r0.log"
	grep -q '"stop_reason":[[:space:]]*"canceled"' "$T/result.json"
	! grep -q "arrived within the timeout" "$T/r0.log"
}

@test "a rank that dies mid-run makes the other exit 86 (a peer was lost, not its own failure)" {
	common=(--arch "$ARCH" --warmup_1 30 --threads 1 --batch_size 32 --world_size 2
		--init_method "tcp://127.0.0.1:$PORT" --dist_timeout 20)
	aah-trial --trial_dir "$T" "${common[@]}" --rank 1 >"$T/r1.log" 2>&1 &
	r1=$!
	aah-trial --trial_dir "$T" "${common[@]}" --rank 0 >"$T/r0.log" 2>&1 &
	r0=$!
	# Both ranks met and are training (each prints its budget line after
	# the rendezvous), then rank 1 dies.
	wait_for grep -q "budget 30 epochs" "$T/r0.log"
	wait_for grep -q "budget 30 epochs" "$T/r1.log"
	kill -KILL $r1
	# Rank 0 notices at once; 30 epochs would take far longer than the bound.
	gone() { ! kill -0 "$r0" 2>/dev/null; }
	wait_for gone || { kill -KILL $r0; false; }
	rc=0
	wait $r0 || rc=$?
	[ "$rc" -eq 86 ]
	grep -q "closed the connection\|failed" "$T/r0.log"
}
