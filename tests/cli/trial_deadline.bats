#!/usr/bin/env bats
# --deadline (trial.fitExecDuration) and --time_budget (trial.maxExecShare):
# a trial shrinks its epoch budget, and its cosine schedule with it, to the
# epochs that fit before a Unix time, or in its own seconds.
# Deterministic cases only: a deadline already passed (nothing more fits)
# and one a day away (everything fits); what fits in between depends on the
# machine's speed and is the subject of the unit test of
# train_deadline_budget and of the quickstart's measurements, not of a
# timing assert here.

load helpers

setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/aah-deadline-bats.XXXXXX")
	ARCH=$AAH_ROOT/tests/fixtures/arch
	TRAIN=(aah-trial --trial_dir "$T" --arch "$ARCH/cnn2.json" --threads 1 --batch_size 64
	       --train_samples 1024 --val_samples 256 --warmup_1 4 --initial_lr 0.05 --final_lr 0
	       --monitor_interval 0)
}

teardown() {
	rm -rf "$T"
	if [ -n "${WORK:-}" ]; then teardown_workdir; fi
}

# lrs: the LR of every epoch in metrics.jsonl, on one line
lrs() {
	python3 -c "import json,sys; print(' '.join(str(json.loads(l)['lr']) for l in open(sys.argv[1])))" \
		"$T/metrics.jsonl"
}

# after_epochs N: the Unix time a start-up ($S seconds) and N epochs ($E
# seconds each) from now
after_epochs() {
	python3 -c "import time,sys; e,s,n=map(float,sys.argv[1:]); print(time.time() + s + n * e)" \
		"$E" "$S" "$1"
}

# check EXPR: a Python assertion over result.json `r` and the metrics lines `m`
check() {
	python3 - "$T" "$1" <<'PY'
import json, sys
t, expr = sys.argv[1], sys.argv[2]
r = json.load(open(t + "/result.json"))
m = [json.loads(l) for l in open(t + "/metrics.jsonl")]
assert eval(expr), (expr, r, [(x["epoch"], x["lr"]) for x in m])
PY
}

# size_epochs SECONDS: an epoch of about SECONDS on this machine, whatever
# its speed (an AVX2 CPU trains at half an AVX-512 one's rate, a fixed count
# took 97 s an epoch there): TRAIN takes --train_samples from a measured
# epoch of the setup's 1024 images, in whole batches, 2048 to 16384, and E
# and S are one such epoch and the start-up before it, timed
size_epochs() {
	run "${TRAIN[@]}" --warmup_1 1
	[ "$status" -eq 0 ]
	read -r e samples < <(python3 -c "import json,sys; m=json.loads(open(sys.argv[1]).readline()); \
		e=m['epoch_seconds']; print(e, min(16384, max(2048, int(float(sys.argv[2]) * 1024 / e) // 64 * 64)))" \
		"$T/metrics.jsonl" "$1")
	echo "measured: 1024 images in $e s: $samples images an epoch"
	rm -rf "$T"/*
	TRAIN+=(--train_samples "$samples")
	t0=$(date +%s.%N)
	run "${TRAIN[@]}" --warmup_1 1
	[ "$status" -eq 0 ]
	read -r E S < <(python3 -c "import json,sys,time; m=json.loads(open(sys.argv[1]).readline()); \
		e=m['epoch_seconds']; print(e, time.time() - float(sys.argv[2]) - e)" "$T/metrics.jsonl" "$t0")
}

# median_epoch: the median epoch of metrics.jsonl, into E
median_epoch() {
	E=$(python3 -c "import json,sys; e=sorted(json.loads(l)['epoch_seconds'] for l in open(sys.argv[1])); \
		print(e[len(e) // 2])" "$T/metrics.jsonl")
}

# deadline_tries N FITS: TRAIN with a deadline N epochs after the start-up,
# up to three tries, until the function FITS accepts the output (a process
# here can run a third slower or faster than the one sized before it, which
# moves the deadline out of a case's window); a try after a miss takes the
# median epoch of the run that missed. deadline is the last try's.
deadline_tries() {
	local try
	for try in 1 2 3; do
		echo "try $try: epoch $E s, start-up $S s"
		rm -rf "$T"/*
		deadline=$(after_epochs "$1")
		run "${TRAIN[@]}" --deadline "$deadline"
		echo "$output"
		[ "$status" -eq 0 ] || return 1
		if "$2"; then return 0; fi
		median_epoch
	done
}

@test "a deadline already passed: one epoch along a one-epoch cosine, stop reason deadline" {
	run "${TRAIN[@]}" --deadline $(($(date +%s) - 1))
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"budget 4 -> 1 epochs"* ]]
	[[ $output == *"epoch 1/1:"* ]]
	# annealed: the epoch's last step ran at --final_lr
	check 'r["status"] == "succeeded" and r["stop_reason"] == "deadline" and r["epochs_run"] == 1'
	check 'len(m) == 1 and m[0]["lr"] == 0'
	# the least a launch of it takes to a result: here a whole epoch and
	# its evaluation (no --partial_epoch), no more than it took
	check '0 < r["result_floor_seconds"] <= r["wall_seconds"]'
	check 'r["result_floor_seconds"] > m[0]["epoch_seconds"] - 0.5'
}

@test "a deadline a day away changes nothing: the same schedule and stop reason as none" {
	run "${TRAIN[@]}" --warmup_1 2
	[ "$status" -eq 0 ]
	check '"result_floor_seconds" not in r'   # no deadline, no floor
	lrs > "$T/lr-none"
	AAH_DEADLINE=$(($(date +%s) + 86400)) run "${TRAIN[@]}" --warmup_1 2
	[ "$status" -eq 0 ]
	[[ $output != *"deadline in"* ]]
	check 'r["stop_reason"] == "budget" and r["epochs_run"] == 2'
	lrs > "$T/lr-day"
	cmp "$T/lr-none" "$T/lr-day"
}

@test "a resumed trial keeps the budget a deadline cut" {
	run "${TRAIN[@]}" --deadline $(($(date +%s) - 1))
	[ "$status" -eq 0 ]
	check 'r["epochs_run"] == 1 and r["stop_reason"] == "deadline"'
	# a retry with a later deadline: the schedule it followed ended at epoch 1
	run "${TRAIN[@]}" --resume --deadline $(($(date +%s) + 86400))
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"resumed from"* ]]
	check 'r["epochs_run"] == 1 and r["stop_reason"] == "deadline" and len(m) == 1'
}

@test "trial.fitExecDuration: the runner exports AAH_DEADLINE, maxExecDuration's end" {
	setup_workdir
	TRIAL_YAML="  fitExecDuration: true" write_config c.yml "maxTrialNum: 1" "maxExecDuration: 1h"
	t0=$(date +%s)
	TRIAL_SLEEP=0 run aah-runner create -c c.yml
	t1=$(date +%s)
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	d=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ranks'][0]['env']['AAH_DEADLINE'])" \
		"$AAH_WORKDIR/experiments/$id/trials/000001/launch.json")
	[ "$d" -ge $((t0 + 3600 - 1)) ] && [ "$d" -le $((t1 + 3600)) ]
	# off by default
	write_config c2.yml "maxTrialNum: 1" "maxExecDuration: 1h"
	TRIAL_SLEEP=0 run aah-runner create -c c2.yml
	[ "$status" -eq 0 ]
	[ "$(ls "$AAH_WORKDIR"/experiments/*/trials/000001/launch.json | wc -l)" -eq 2 ]
	[ "$(grep -l AAH_DEADLINE "$AAH_WORKDIR"/experiments/*/trials/*/launch.json | wc -l)" -eq 1 ]
}

# states DIR: the trial_finished states of the experiment in DIR, in order
states() {
	/usr/bin/python3 -c "import json,sys; print(' '.join(e['state'] for e in map(json.loads, open(sys.argv[1])) \
		if e['event'] == 'trial_finished'))" "$1/journal.jsonl"
}

@test "trial.fitExecDuration: no trial starts with less time left than a trial said it needs to a result" {
	setup_workdir
	# 5 s a trial, one at a time, 13 s: the third starts at about 10 s
	TRIAL_YAML="  fitExecDuration: true" write_config c.yml "maxTrialNum: 10" "maxExecDuration: 13s"
	TRIAL_SLEEP=5 run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	echo "without result_floor_seconds: $(states "$AAH_WORKDIR/experiments/$id")"
	[ "$(states "$AAH_WORKDIR/experiments/$id")" = "succeeded succeeded canceled" ]
	rm -rf "$AAH_WORKDIR/experiments"
	# the first trial says a launch needs 5 s to a result, the second 1 s:
	# the second starts with about 8 s left, and with about 3 left the
	# third does not (the largest floor counts: networks grow in a search)
	TRIAL_FLOOR="5 1" TRIAL_SLEEP=5 run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	echo "with result_floor_seconds 5 then 1: $(states "$AAH_WORKDIR/experiments/$id")"
	[ "$(states "$AAH_WORKDIR/experiments/$id")" = "succeeded succeeded" ]
	[[ $output == *"less than the 5.0 s"*"no further trial starts"* ]]
	# the experiment still ends at maxExecDuration, its clock unchanged
	grep -q '"reason":"max_duration"' "$AAH_WORKDIR/experiments/$id/journal.jsonl"
}

@test "a time budget already spent: one epoch along a one-epoch cosine, stop reason deadline" {
	run "${TRAIN[@]}" --time_budget 0.001
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"time budget 0 s, "*"budget 4 -> 1 epochs"* ]]
	[[ $output == *"epoch 1/1:"* ]]
	check 'r["status"] == "succeeded" and r["stop_reason"] == "deadline" and r["epochs_run"] == 1'
	check 'len(m) == 1 and m[0]["lr"] == 0'
}

@test "a time budget a day long changes nothing, and never grows a budget" {
	run "${TRAIN[@]}" --warmup_1 2
	[ "$status" -eq 0 ]
	lrs > "$T/lr-none"
	AAH_TIME_BUDGET=86400 run "${TRAIN[@]}" --warmup_1 2
	[ "$status" -eq 0 ]
	[[ $output != *"budget 2 ->"* ]]
	check 'r["stop_reason"] == "budget" and r["epochs_run"] == 2'
	lrs > "$T/lr-day"
	cmp "$T/lr-none" "$T/lr-day"
}

@test "with a deadline, the sooner end counts: a spent time budget cuts a budget the deadline would not" {
	run "${TRAIN[@]}" --deadline $(($(date +%s) + 86400)) --time_budget 0.001
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"budget 4 -> 1 epochs"* ]]
	check 'r["stop_reason"] == "deadline" and r["epochs_run"] == 1'
	# and a resumed run keeps the cut budget
	run "${TRAIN[@]}" --resume --time_budget 86400
	[ "$status" -eq 0 ]
	check 'r["epochs_run"] == 1 and r["stop_reason"] == "deadline" and len(m) == 1'
}

@test "trial.maxExecShare: the runner exports AAH_TIME_BUDGET, that share of maxExecDuration" {
	setup_workdir
	TRIAL_YAML="  maxExecShare: 0.25" write_config c.yml "maxTrialNum: 1" "maxExecDuration: 1h"
	TRIAL_SLEEP=0 run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	b=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ranks'][0]['env']['AAH_TIME_BUDGET'])" \
		"$AAH_WORKDIR/experiments/$id/trials/000001/launch.json")
	[ "$b" = 900 ]
	# a share of no duration, and one above the whole, are refused by line and key
	TRIAL_YAML="  maxExecShare: 0.25" write_config c2.yml "maxTrialNum: 1"
	run aah-runner create -c c2.yml
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"c2.yml:9:"*"trial.maxExecShare"*"needs a maxExecDuration"* ]]
	TRIAL_YAML="  maxExecShare: 1.5" write_config c3.yml "maxTrialNum: 1" "maxExecDuration: 1h"
	run aah-runner create -c c3.yml
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"c3.yml:10:"*"trial.maxExecShare"* ]]
	[ "$(ls "$AAH_WORKDIR/experiments" | wc -l)" -eq 1 ]
}

@test "a resumed trial follows the budget in its checkpoint, also one above its own" {
	# the first run's schedule spans 6 epochs (as a budget of 4 grown to 6)
	run "${TRAIN[@]}" --warmup_1 6 --max_epochs 1 --deadline $(($(date +%s) + 86400))
	[ "$status" -eq 0 ]
	run "${TRAIN[@]}" --resume --deadline $(($(date +%s) + 86400))
	echo "$output"
	[ "$status" -eq 0 ]
	check 'r["epochs_run"] == 6 and r["stop_reason"] == "budget" and m[-1]["lr"] == 0'
}

# The one case with a deadline between near and far. It is set from an
# epoch timed on this machine just before: about 5 epochs after the
# first's first eighth, so a budget of 4 would leave 1 to 3 epochs
# unused, and grows into them (a wide window: 4 to 7 epochs' worth). One
# process here can run a third slower or faster than the one before it,
# which moves the deadline out of the window; then the epochs of the run
# that missed time the next try (three at most). A trainer that never
# grows fails all three.
@test "a budget whose end would leave less than another budget grows into it, only from its start" {
	size_epochs 3
	grown() { [[ $output =~ budget\ 4\ -\>\ ([5-7])\ epochs ]]; }
	deadline_tries 6.3 grown
	grown
	check 'r["status"] == "succeeded" and m[-1]["lr"] == 0'
	# A run resumed after its first epoch keeps the schedule it started: 3
	# epochs left and time for 6.5 would grow a run at its start (less than
	# a budget would be left), not this one. A machine over 2x slower than
	# the timed epochs cuts it instead, which is fine here.
	rm -rf "$T"/*
	run "${TRAIN[@]}" --max_epochs 1
	[ "$status" -eq 0 ]
	deadline=$(after_epochs 6.5)
	run "${TRAIN[@]}" --resume --deadline "$deadline"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ ! $output =~ budget\ 4\ -\>\ [5-9] ]]
	if [[ $output == *"budget 4 -> "* ]]; then
		echo "# the resumed run was slower than the timed epochs: cut, not grown" >&3
		check 'r["stop_reason"] == "deadline" and r["epochs_run"] < 4'
	else
		check 'r["epochs_run"] == 4 and r["stop_reason"] == "budget"'
	fi
}

# --partial_epoch, deterministic: a checkpoint whose budget ends in a part of
# an epoch (written here into an AAHCKPT4 header at its offset, as a run
# cut by a deadline would have) resumes into that part: the last epoch
# trains half the steps of the others, its metrics line says so, and the
# cosine ends at --final_lr on its last step. Without the flag the part is
# not followed, and the budget, back at the run's own, is not called cut;
# an AAHCKPT3 header (no part) resumes as before.
@test "--partial_epoch: a budget that ends in a part of an epoch trains that part, annealed" {
	far=$(($(date +%s) + 86400))
	run "${TRAIN[@]}" --warmup_1 3 --max_epochs 1 --deadline "$far" --partial_epoch
	[ "$status" -eq 0 ]
	cp -r "$T" "$T.whole"
	cp -r "$T" "$T.v3"
	python3 - "$T/checkpoint/state.bin" "$T.v3/checkpoint/state.bin" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"AAHCKPT4", d[:8]
assert struct.unpack_from("<d", d, 144)[0] == 0, "a whole budget has no part"
open(sys.argv[1], "wb").write(d[:144] + struct.pack("<d", 0.5) + d[152:])
open(sys.argv[2], "wb").write(b"AAHCKPT3" + d[8:144] + d[152:])
PY
	cp -r "$T" "$T.noflag"
	run "${TRAIN[@]}" --warmup_1 3 --resume --deadline "$far" --partial_epoch
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"epoch 3/3:"* ]]
	check 'r["epochs_run"] == 3 and r["stop_reason"] == "deadline" and m[-1]["lr"] == 0'
	check '"part" not in m[1] and m[2]["part"] == 0.5'
	# 1024 images an epoch, batch 64: 16 steps, the last epoch 8
	check 'abs((m[2]["train_flops"] - m[1]["train_flops"]) * 2 - (m[1]["train_flops"] - m[0]["train_flops"])) < 1'
	for d in "$T.whole" "$T.v3"; do
		T=$d run "${TRAIN[@]}" --trial_dir "$d" --warmup_1 3 --resume --deadline "$far"
		[ "$status" -eq 0 ]
		T=$d check 'r["epochs_run"] == 3 and "part" not in m[2] and m[2]["lr"] == 0'
		T=$d check 'abs(m[2]["train_flops"] - 1.5 * m[1]["train_flops"]) < 1'
	done
	T=$T.noflag run "${TRAIN[@]}" --trial_dir "$T.noflag" --warmup_1 3 --resume --deadline "$far"
	[ "$status" -eq 0 ]
	T=$T.noflag check 'r["epochs_run"] == 3 and "part" not in m[2] and r["stop_reason"] == "budget"'
	rm -rf "$T.whole" "$T.v3" "$T.noflag"
}

# --partial_epoch, timed as the growth case above: a deadline about 5.3
# epochs after the first eighth of the first grows a budget of 4 to the step
# that fits (4.1 to 8 epochs' worth is the window), and the run ends with
# the part it fitted last, annealed (an epoch slower than the first's eighth
# can shave the part, or drop it under a tenth). Three tries, as above.
@test "--partial_epoch: a budget grows into the end of the run to the step" {
	size_epochs 2
	TRAIN+=(--partial_epoch)
	grown() { [[ $output =~ budget\ 4\.00\ -\>\ ([4-7])\.([0-9][0-9])\ epochs ]] && [ "${BASH_REMATCH[2]}" != 00 ]; }
	deadline_tries 5.3 grown
	grown
	whole=${BASH_REMATCH[1]} part=${BASH_REMATCH[2]}
	# the last fit printed is the one followed (a later epoch can shave it)
	last=$(grep -o -- '-> [0-9.]* epochs' <<<"$output" | tail -1 | cut -d' ' -f2)
	echo "grown to $whole.$part, last fitted $last"
	check "r['status'] == 'succeeded' and m[-1]['lr'] == 0 and len(m) == -int(-$last // 1)"
	check "abs(m[-1].get('part', 1) - ($last - int($last) or 1)) < 0.006"
}

# --partial_epoch, the last trials of a run: a deadline half an epoch after
# the start-up leaves too little for the first epoch, which the first
# eighth's estimate cuts to the part that fits (about a half) with its
# evaluation, annealed, instead of training on past the deadline (where the
# runner would cancel it with nothing reported). A part outside 0.1-0.95
# (the start-up or the epoch timed far from the sizing run) tries again,
# three tries.
@test "--partial_epoch: a first epoch that cannot end before the deadline ends at the part that can" {
	size_epochs 6
	TRAIN+=(--partial_epoch)
	cut() { [[ $output =~ budget\ 4\.00\ -\>\ 0\.([0-9][0-9])\ epochs ]] &&
		[ "${BASH_REMATCH[1]}" -ge 10 ] && [ "${BASH_REMATCH[1]}" -le 95 ]; }
	deadline_tries 0.5 cut
	cut
	part=0.${BASH_REMATCH[1]}
	echo "cut to $part of an epoch; ended at the deadline $(python3 -c "import time,sys; print('%+.1f' % (time.time() - float(sys.argv[1])))" "$deadline") s"
	[[ $output == *"epoch 1/1:"* ]]
	check "r['status'] == 'succeeded' and r['stop_reason'] == 'deadline' and r['epochs_run'] == 1"
	# the part it fitted, unless the rest of the epoch then trained slower
	# and the guard (the case below) brought the end forward again (cut is
	# this case's own function here)
	last=$(grep -o -- '-> [0-9.]* epochs' <<<"$output" | tail -1 | awk '{ print $2 }')
	if [[ $output != *"(this epoch's pace)"* ]]; then
		check "len(m) == 1 and m[0]['lr'] == 0 and abs(m[0]['part'] - $part) < 0.006"
	fi
	check "len(m) == 1 and abs(m[0]['part'] - $last) < 0.006 and $last <= $part"
	check "0.1 <= m[0]['part'] <= 0.95"
	# a part of an epoch as short as the first estimate allows: less than
	# the epoch, no more than this trial took
	check "0 < r['result_floor_seconds'] <= r['wall_seconds']"
	check "r['result_floor_seconds'] < $S + $E"
}

# --partial_epoch, an epoch slower than the one its budget was fitted to (a
# host's other work; here the trial held by SIGSTOP for 0.4 of an epoch, as
# a preempted or shared host would hold it): every eighth of the epoch that
# ends the budget, the guard checks its rest and its evaluation against the
# time left at that epoch's pace, and ends it at the part that still fits
# (annealed where steps are left to run; at once where none fit), instead
# of training on past the deadline (where the runner would cancel it). A
# budget of 2 is cut to about 1.5 at a deadline 1.8 epochs after the
# start-up; the hold comes a tenth into the second epoch. A cut outside
# 1.30-1.95 (the start-up or the epoch timed far from the sizing run) tries
# again with the epoch it timed, three tries.
@test "--partial_epoch: a last epoch slower than its budget was fitted to ends at the part the deadline still leaves" {
	size_epochs 6
	TRAIN+=(--partial_epoch --warmup_1 2)
	local try fitted=''
	for try in 1 2 3; do
		rm -rf "$T"/*
		deadline=$(after_epochs 1.8)
		"${TRAIN[@]}" --deadline "$deadline" > "$T/stdout" 2>&1 &
		pid=$!
		while kill -0 "$pid" 2>/dev/null && ! [ -s "$T/metrics.jsonl" ]; do sleep 0.05; done
		sleep "$(python3 -c "import sys; print(float(sys.argv[1]) * 0.1)" "$E")"
		# (a trial cut to one epoch has ended by now)
		kill -STOP "$pid" 2>/dev/null || true
		sleep "$(python3 -c "import sys; print(float(sys.argv[1]) * 0.4)" "$E")"
		kill -CONT "$pid" 2>/dev/null || true
		rc=0
		wait "$pid" || rc=$?
		output=$(cat "$T/stdout")
		echo "try $try: epoch $E s, start-up $S s"
		echo "$output"
		[ "$rc" -eq 0 ]
		if [[ $output =~ budget\ 2\.00\ -\>\ 1\.([0-9][0-9])\ epochs ]] &&
		   [ "${BASH_REMATCH[1]}" -ge 30 ] && [ "${BASH_REMATCH[1]}" -le 95 ]; then
			fitted=1.${BASH_REMATCH[1]}
			break
		fi
		median_epoch
	done
	[ -n "$fitted" ]
	# the guard's fit, the last printed: no later than the first (to the
	# hundredth printed), and followed
	[[ $output == *"(this epoch's pace): budget "* ]]
	last=$(grep -o -- '-> [0-9.]* epochs' <<<"$output" | tail -1 | cut -d' ' -f2)
	echo "fitted to $fitted, ended at $last; $(python3 -c "import time,sys; print('%+.1f' % (time.time() - float(sys.argv[1])))" "$deadline") s from the deadline"
	python3 -c "import sys; assert 1 <= float(sys.argv[2]) <= float(sys.argv[1]), sys.argv[1:]" "$fitted" "$last"
	check "r['status'] == 'succeeded' and r['stop_reason'] == 'deadline' and r['epochs_run'] == 2"
	check "len(m) == 2 and abs(m[-1]['part'] - ($last - 1)) < 0.006"
}
