# The seed scenario of issue 16 (docs/pool.md), shared by the backends'
# tests: elastic_pool.bats (local), slurm_pool.bats (real Slurm daemons),
# docker_pool.bats (the real Docker engine). A pool of 8 devices, two
# experiments (two runner processes), the real aah-trial on CPU ranks (a
# tiny net, a slice of Fashion-MNIST). Training A gets 8; B arrives at the
# same priority: 4/4; B's priority goes from 5000 to 10000: 3/5; A
# finishes: B grows to 8. Each change reaches the ranks at a step boundary
# (their own log says at which step), nothing restarts from zero or counts
# twice (the LR and the FLOPs of every epoch equal an uninterrupted run's:
# the same steps), and each training's losses match an uninterrupted run of
# one rank with the same global batch (--global_batch 120 = 8x15 = 4x30 =
# 3x40 = 5x24) within 1e-2. Why not closer: what differs is the order
# floats are summed in (per-rank batch sizes, the ranks of the allreduce),
# which SGD at lr 0.05 carries forward; the differences seen are 2e-3 to
# 6e-3 after two epochs, and an uninterrupted 8-rank run differs from the
# 1-rank one by as much. A trainer that restarted an epoch or lost one fails
# the epoch and FLOPs checks whatever the tolerance.
#
#   SEED_PLATFORM        trainingServicePlatform (default local)
#   SEED_BACKEND_YAML    the backend's own section, lines of YAML
#   SEED_GPUS=1          a pretend 8-GPU host: trial.gpuNum 1, so the pool's
#                        devices are GPUs 0-7 and each rank is given the one
#                        the ledger granted it (CUDA_VISIBLE_DEVICES); every
#                        rank records its own environment (rank_env), and
#                        gpu_ranks_apart checks it. aah-trial's --backend auto
#                        trains on the CPU, seeing no CUDA device.
#   SEED_MASTER_PORT     trial.masterPort of A (B: one more), for a backend
#                        whose ranks share this machine's network but which
#                        takes the rendezvous port from the config
#                        (kubernetes: on a cluster each pod has its own IP)
#   SEED_B_EPOCHS        B's epochs (default 60): enough for B to outlive A
#                        on a backend whose relaunches take longer
#   seed_scenario        runs it all and asserts; prints the resize costs

ledger_has() {
	grep -q "$1" "$AAH_WORKDIR/pool/ledger.jsonl" 2>/dev/null
}

applied() {   # applied EXP DEVICES: the ledger says EXP's training runs on DEVICES
	ledger_has "\"event\":\"applied\",\"training\":\"$1/000001\",\"devices\":$2[,}]"
}

# held_within_pool LEDGER: replayed line by line, the devices held (each
# training's last `applied`, until it leaves) never add up to more than the
# pool, and no device id is held by two trainings at once. Prints, to fd 3,
# each grower's wait: from the allocation that raised its share to the line
# that freed the devices (the shrinker's `applied`, or a `leave`) and to its
# own `applied` at the larger size.
held_within_pool() {
	/usr/bin/python3 - "$1" <<'PY' >&3
import json, sys
pool, held, ids, share, pending, order, seq = 0, {}, {}, {}, {}, [], []
for n, text in enumerate(open(sys.argv[1]), 1):
    l = json.loads(text)
    ev, t, ts = l["event"], l.get("training"), l["ts"]
    if ev == "pool":
        pool = l["devices"]
    elif ev == "leave":
        held.pop(t, None); ids.pop(t, None); share.pop(t, None)
    elif ev == "alloc":
        share = dict(l["shares"])
        for k, v in share.items():
            if v > held.get(k, 0) and pending.get(k, (0, 0, 0, None))[1] != v:
                pending[k] = (ts, v, held.get(k, 0), None)
    elif ev == "applied":
        held[t], ids[t] = l["devices"], l.get("ids")
    order += [t] if ev == "join" else []
    now = "/".join(str(held.get(k, 0)) for k in order)
    if ev in ("applied", "leave") and (not seq or seq[-1] != now):
        seq.append(now)
    total = sum(held.values())
    assert total <= pool, "line %d: %d devices held of %d: %s" % (n, total, pool, held)
    assert all(ids[k] is not None and len(ids[k]) == held[k] for k in ids), (n, ids)
    seen = [d for k in ids for d in ids[k]]
    assert len(seen) == len(set(seen)), "line %d: a device held twice: %s" % (n, ids)
    assert all(0 <= d < pool for d in seen), (n, ids)
    for k, (t0, want, was, freed) in list(pending.items()):
        if freed is None and pool - (total - held.get(k, 0)) >= want:
            pending[k] = (t0, want, was, ts)
        if ev == "applied" and t == k and held[k] == want:
            print("# grow %s %d -> %d: devices free after %.2f s, running on them after %.2f s"
                  % (k.split("/")[0][:8], was, want, pending[k][3] - t0, ts - t0))
            del pending[k]
print("# held, in the order they joined:", " ".join(seq))
PY
}

# status_ids_apart EXP: the device ids status shows the trainings running
# on (RUNNING_ON "3 (0-2)") are within the pool and none is listed twice
status_ids_apart() {
	aah-runner status "$1" | /usr/bin/python3 -c '
import re, sys
held = []
for m in re.finditer(r"^\S+/\d+ +\d+ +\d+ +(\d+) \(([-0-9,]+)\)$", sys.stdin.read(), re.M):
    ids = []
    for part in m.group(2).split(","):
        if part != "-":
            lo, _, hi = part.partition("-")
            ids += range(int(lo), int(hi or lo) + 1)
    assert len(ids) == int(m.group(1)), m.group(0)
    held += ids
print("status: devices held", sorted(held))
assert held and len(held) == len(set(held)) and all(0 <= d < 8 for d in held), held
'
}

# reference DIR EPOCHS RANKS: an uninterrupted run of RANKS local ranks
reference() {
	local dir=$1 epochs=$2 n=$3 r pids=() port
	port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	for ((r = n - 1; r >= 0; r--)); do
		aah-trial --trial_dir "$dir" --arch "$AAH_ROOT/tests/fixtures/arch/cnn_nobn.json" \
			--threads 1 --global_batch 120 --warmup_1 "$epochs" --train_samples 9600 \
			--val_samples 200 --seed 3 --initial_lr 0.05 --monitor_interval 0 --patience 100 --trial_seq 1 \
			--rank $r --world_size "$n" --init_method "tcp://127.0.0.1:$port" > "$dir.$r.log" 2>&1 &
		pids+=($!)
	done
	for r in "${pids[@]}"; do wait "$r"; done
}

# rank_env: the trial command's wrapper on the pretend GPU host; each rank
# appends what its own environment says, before it starts and once it ended
rank_env() {
	cat > "$BATS_TEST_TMPDIR/rank-env" <<'SH'
#!/bin/sh
log=$(dirname "$0")/ranks.log
trap : TERM INT HUP   # a rank stopped with its process group: still say when it ended
echo "start $(date +%s.%N) $$ $AAH_EXPERIMENT_ID $RANK_ID $RANK_SIZE ${CUDA_VISIBLE_DEVICES-unset}" >> "$log"
"$@"
rc=$?
# the signal that stopped the rank's group can kill date too: ask again
t=$(date +%s.%N); [ -n "$t" ] || t=$(date +%s.%N)
echo "end $t $$ $AAH_EXPERIMENT_ID $RANK_ID $RANK_SIZE ${CUDA_VISIBLE_DEVICES-unset}" >> "$log"
exit $rc
SH
	chmod +x "$BATS_TEST_TMPDIR/rank-env"
}

# gpu_ranks_apart A B: from the ranks' own records (rank_env): every rank
# ran on one device of 0-7; no two ranks running at the same moment, of one
# training or of two, had the same device; each launch ran on exactly the
# ids the ledger's `applied` line before it granted, one rank each; and the
# devices changed with each resize (A 8 -> 4 -> 3, B 4 -> 5 -> 8).
gpu_ranks_apart() {
	/usr/bin/python3 - "$BATS_TEST_TMPDIR/ranks.log" "$AAH_WORKDIR/pool/ledger.jsonl" "$1" "$2" <<'PY'
import json, sys
runs, open_ = [], {}
for line in open(sys.argv[1]):
    fields = line.split()
    assert len(fields) == 7, ("a rank record with a field empty (a rank without a device?)", line)
    kind, ts, pid, exp, rank, size, dev = fields
    if kind == "start":
        open_[pid] = dict(t0=float(ts), exp=exp, rank=int(rank), size=int(size), dev=dev)
    else:
        r = open_.pop(pid); r["t1"] = float(ts); runs.append(r)
assert not open_, ("ranks that never ended", open_)
for r in runs:
    assert r["dev"].isdigit() and 0 <= int(r["dev"]) < 8, ("not one device of 0-7", r)
for i, a in enumerate(runs):
    for b in runs[i + 1:]:
        if a["t0"] < b["t1"] and b["t0"] < a["t1"]:
            assert a["dev"] != b["dev"], ("device %s of two running ranks" % a["dev"], a, b)
applied = {}
for l in map(json.loads, open(sys.argv[2])):
    if l["event"] == "applied":
        applied.setdefault(l["training"].split("/")[0], []).append((l["ts"], l["ids"]))
for name, exp, sizes in (("A", sys.argv[3], [8, 4, 3]), ("B", sys.argv[4], [4, 5, 8])):
    launches = {}
    for r in (r for r in runs if r["exp"] == exp):
        ts, ids = max(a for a in applied[exp] if a[0] <= r["t0"])
        launches.setdefault(ts, (ids, []))[1].append(r)
    seen = []
    for ts in sorted(launches):
        ids, ranks = launches[ts]
        assert sorted(int(r["dev"]) for r in ranks) == sorted(ids), (name, ids, ranks)
        assert sorted(r["rank"] for r in ranks) == list(range(len(ids))), (name, ranks)
        assert all(r["size"] == len(ids) for r in ranks), (name, ranks)
        if not seen or seen[-1] != ids:
            seen.append(ids)
    assert [len(s) for s in seen] == sizes, (name, seen)
    assert all(set(x) != set(y) for x, y in zip(seen, seen[1:])), (name, seen)
    print("# %s ran on devices %s" % (name, " -> ".join(",".join(map(str, s)) for s in seen)))
PY
}

one_experiment() {   # the experiment's own directory, not only experiments/
	[ "$(ls "$AAH_WORKDIR/experiments" 2>/dev/null | wc -l)" -eq 1 ]
}

two_experiments() {
	[ "$(ls "$AAH_WORKDIR/experiments" | wc -l)" -eq 2 ]
}

# config FILE EPOCHS (the tuner may only pick lr 0.05: the references use
# it). No early stop (--patience 100, here and in reference): it would end
# B before A, and the elastic run and its reference could stop at different
# epochs, their val_acc differing by the order floats are summed in.
config() {
	local port=${SEED_MASTER_PORT:-}
	if [ -n "$port" ] && [ "$1" = b.yml ]; then port=$((port + 1)); fi
	echo '{"learning_rate": {"_type": "choice", "_value": [0.05]}}' > "$BATS_TEST_TMPDIR/space.json"
	cat > "$1" <<EOF2
experimentName: seed
maxTrialNum: 1
trainingServicePlatform: ${SEED_PLATFORM:-local}
searchSpacePath: $BATS_TEST_TMPDIR/space.json
tuner:
  builtinTunerName: NetworkMorphism
  initialArch: $AAH_ROOT/tests/fixtures/arch/cnn_nobn.json
trial:
  command: ${SEED_GPUS:+$BATS_TEST_TMPDIR/rank-env }aah-trial --threads 1 --global_batch 120 --warmup_1 $2 --train_samples 9600 --val_samples 200 --seed 3 --initial_lr 0.05 --monitor_interval 0 --patience 100
${SEED_GPUS:+  gpuNum: 1}
${port:+  masterPort: $port}
pool:
  devices: 8
EOF2
	if [ -n "${SEED_BACKEND_YAML:-}" ]; then printf "%s\n" "$SEED_BACKEND_YAML" >> "$1"; fi
}

# What each resize cost, from the ledger and the journals: for an `alloc`
# that changed a running training's share, the wait for its ranks to stop
# at a step boundary (alloc to the runner's trial_retry "resized": the next
# step, the exit, the runner's poll) and the relaunch (trial_retry to the
# ledger's `applied` at the new share: the new ranks launched). One line on
# fd 3; the ranks' own start-up (loading the data) comes after it.
seed_resize_costs() {
	/usr/bin/python3 - "$AAH_WORKDIR" "$1" "$2" "${SEED_PLATFORM:-local}" >&3 <<'PY'
import json, sys
work, platform = sys.argv[1], sys.argv[4]
lines = [json.loads(l) for l in open(work + "/pool/ledger.jsonl")]
names, retries = {}, {}
for name, exp in (("A", sys.argv[2]), ("B", sys.argv[3])):
    names[exp + "/000001"] = name
    retries[exp + "/000001"] = [e["ts"] for e in map(json.loads, open("%s/experiments/%s/journal.jsonl" % (work, exp)))
                                if e["event"] == "trial_retry" and e["reason"].startswith("resized")]
on, costs = {}, []
for i, l in enumerate(lines):
    if l["event"] == "applied":
        on[l["training"]] = l["devices"]
    if l["event"] != "alloc":
        continue
    for t, n in l["shares"].items():
        if t in on and on[t] != n:
            done = next(m for m in lines[i + 1:] if m["event"] == "applied"
                        and m["training"] == t and m["devices"] == n)
            stop = next(ts for ts in retries[t] if ts >= l["ts"])
            costs.append("%s %d->%d %.1f s (boundary %.1f + relaunch %.1f)" % (
                names[t], on[t], n, done["ts"] - l["ts"], stop - l["ts"], done["ts"] - stop))
print("# resize cost on %s, ledger alloc to applied: %s" % (platform, ", ".join(costs)))
PY
}

# start_a: training A's runner (a.yml) in the background, $ra; its
# experiment $a, once its trial runs on the whole pool. The runner ledgers
# the share before it journals the launch: a runner killed between the two
# never launched the trial (its resume starts it afresh at the share of the
# day), so the launch's journal line is waited for too.
start_a() {
	aah-runner create -c a.yml -q > a.log 2>&1 &
	ra=$!
	wait_for one_experiment
	a=$(only_experiment)
	WAIT_S=120 wait_for applied "$a" 8
	WAIT_S=120 wait_for grep -q '"event":"trial_submitted"' \
		"$AAH_WORKDIR/experiments/$a/journal.jsonl"
}

# start_b: training B's runner (b.yml), $rb; its experiment $b.
start_b() {
	aah-runner create -c b.yml -q > b.log 2>&1 &
	rb=$!
	wait_for two_experiments
	b=$(ls "$AAH_WORKDIR/experiments" | grep -v "^$a\$")
}

seed_scenario() {
	local A B nb
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]
	if [ -n "${SEED_GPUS:-}" ]; then rank_env; fi
	config a.yml 6
	# B must still be training when A ends, or there is no step boundary left
	# to take the 8 at (docs/pool.md). Epochs here take 0.2 s, a relaunch
	# several seconds of start-up (every rank decodes the data set), and A
	# relaunches once more than B after the 3/5 change: with 14 epochs B
	# often ended first (and the wait for its 8 timed out). In ten runs with
	# 40, alone or two at a time, B took the 8 in its epoch 8 to 31 (a Zen
	# 4); on a Zen 5 the kubernetes test's B had trained 34 of 40 by the 3/5
	# change, while the simulated cluster relaunched A twice, and ended
	# before A. With 60 the losses came 0.0075 apart at most in those runs
	# (0.0044 with 40), once 0.0106 (the bounds below), printed by the
	# check. B grows to 5 only once A
	# runs on 3 (a share launches on devices given back), so after the 3/5
	# change B starts after A with 10 times A's epochs left, on any backend.
	# The simulated cluster's relaunches are the slowest: there B resumed
	# on 5 in its epoch 41 of 60 (a Zen 5, CI), and its 19 epochs ended
	# within 4.5 s of A's, before its runner's next poll told it the 8 (the
	# test's wait timed out); it takes SEED_B_EPOCHS=100 (losses 0.0057
	# apart at most, two runs; 52-54 s a run alone on a Zen 5).
	nb=${SEED_B_EPOCHS:-60}
	config b.yml "$nb"
	start_a
	start_b
	WAIT_S=120 wait_for applied "$b" 4
	WAIT_S=120 wait_for applied "$a" 4
	status_ids_apart "$b"
	aah-runner priority "$b" 10000
	WAIT_S=120 wait_for applied "$a" 3
	WAIT_S=120 wait_for applied "$b" 5
	wait "$ra"
	WAIT_S=120 wait_for applied "$b" 8 || {
		tail -n 4 "$AAH_WORKDIR/pool/ledger.jsonl" "$AAH_WORKDIR/experiments/$b/trials/000001/trial.log" \
			"$AAH_WORKDIR/experiments/$b/journal.jsonl"
		false
	}
	wait "$rb"
	cat a.log b.log
	A=$AAH_WORKDIR/experiments/$a/trials/000001
	B=$AAH_WORKDIR/experiments/$b/trials/000001
	# the allocations, in order
	grep -o '"shares":{[^}]*}' "$AAH_WORKDIR/pool/ledger.jsonl" | sed "s#$a#A#g; s#$b#B#g" > allocs
	cat allocs
	[ "$(tr '\n' ' ' < allocs)" = '"shares":{"A/000001":8} "shares":{"A/000001":4,"B/000001":4} "shares":{"A/000001":3,"B/000001":5} "shares":{"B/000001":8} ' ]
	# devices move at the shrinker's step boundary: replayed line by line,
	# never more held than the pool, no device of two trainings at once (a
	# training grows, or a newcomer starts, only on devices given back)
	held_within_pool "$AAH_WORKDIR/pool/ledger.jsonl"
	if [ -n "${SEED_GPUS:-}" ]; then gpu_ranks_apart "$a" "$b" >&3; fi
	# each change at a step boundary, seen by the ranks themselves
	grep -q "world size 8 -> 4 at step [0-9]* (epoch [0-9]*, batch [0-9]*)" "$A/trial.log"
	grep -q "world size 4 -> 3 at step [0-9]* (epoch [0-9]*, batch [0-9]*)" "$A/trial.log"
	grep -q "world size 4 -> 5 at step [0-9]* (epoch [0-9]*, batch [0-9]*)" "$B/trial.log"
	grep -q "world size 5 -> 8 at step [0-9]* (epoch [0-9]*, batch [0-9]*)" "$B/trial.log"
	grep -q '"state":"succeeded"' "$AAH_WORKDIR/experiments/$a/journal.jsonl"
	grep -q '"state":"succeeded"' "$AAH_WORKDIR/experiments/$b/journal.jsonl"
	# no attempt failed; every relaunch was a resize, none a retry (a plain
	# `! grep` would not fail a bats test here, inside a function)
	grep '"state":"failed"' "$AAH_WORKDIR/experiments/$a/journal.jsonl" \
		"$AAH_WORKDIR/experiments/$b/journal.jsonl" && false
	grep -h '"event":"trial_retry"' "$AAH_WORKDIR/experiments/$a/journal.jsonl" \
		"$AAH_WORKDIR/experiments/$b/journal.jsonl" | grep -v '"reason":"resized at a step boundary' && false
	# the uninterrupted references: one rank, the same global batch
	reference ref6 6 1
	reference "ref$nb" "$nb" 1
	# How far apart the losses may be: the ranks' gradients are summed in
	# another order on each world size, so even a run that never resizes
	# drifts from the one-rank reference. Uninterrupted 60-epoch runs on 4,
	# 5 and 8 ranks (a Zen 4) came within 0.0013 of its train_loss and
	# 0.0040-0.0075 of its val_loss (200 samples: each epoch's weights seen
	# through few images; with 1,000 still 0.0062), worst around epoch 20.
	# An elastic run of 4, 5 and 8 ranks, resized at steps that vary from
	# run to run, came 0.0106 apart in val_loss once (CI, 2026-12-03), so
	# val_loss is held to 3e-2 and train_loss to 1e-2: each about four to
	# eight times the drift of a run on a fixed world size, and each far
	# below what a lost or repeated epoch moves them in the first epochs.
	/usr/bin/python3 - "$A" ref6 "$B" "ref$nb" >&3 <<'PY'
import json, sys
bound = {"train_loss": 1e-2, "val_loss": 3e-2}
for run, ref in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):
    el = [json.loads(l) for l in open(run + "/metrics.jsonl")]
    full = [json.loads(l) for l in open(ref + "/metrics.jsonl")]
    assert [l["epoch"] for l in el] == list(range(1, len(full) + 1)), (run, el)
    worst = dict.fromkeys(bound, 0.0)
    for a, b in zip(full, el):
        for k in bound:
            worst[k] = max(worst[k], abs(a[k] - b[k]))
            assert abs(a[k] - b[k]) < bound[k], (run, a["epoch"], k, a[k], b[k])
        for k in ("lr", "train_flops"):
            assert abs(a[k] - b[k]) <= 1e-9 * max(1, abs(a[k])), (run, k, a[k], b[k])
    print("# losses against the uninterrupted run, %d epochs: train_loss at most %.4f apart, val_loss %.4f"
          % (len(full), worst["train_loss"], worst["val_loss"]))
    r = json.load(open(run + "/result.json"))
    assert r["status"] == "succeeded" and r["epochs_run"] == len(full), r
PY
	# the report of B (whose life saw every change) lists them: devices held
	# by A/B 8/0 when B was created, then 4/4, 3/5 and 0/8, by kind
	run aah-runner report "$b"
	echo "$output"
	[ "$status" -eq 0 ]
	held=" $(grep -o 'held [0-9/]*$' <<< "$output" | cut -d' ' -f2 | tr '\n' ' ')"
	echo "held:$held"
	[[ $held =~ ^\ 8/0\ .*\ 4/4\ .*\ 3/5\ .*\ 0/8\  ]]
	grep -Eq "start +\* $b/000001  0 -> 4  " <<< "$output"
	grep -Eq "shrink +$a/000001  8 -> 4  " <<< "$output"
	grep -Eq "shrink +$a/000001  4 -> 3  " <<< "$output"
	grep -Eq "grow +\* $b/000001  4 -> 5  " <<< "$output"
	grep -Eq "end +$a/000001  3 -> 0  " <<< "$output"
	grep -Eq "grow +\* $b/000001  5 -> 8  " <<< "$output"
	grep -Eq "(preempt|resume) " <<< "$output" && false
	# and draws them: a line per training, a marker per grow and shrink
	# (each kind once more in the legend)
	H=$AAH_WORKDIR/experiments/$b/report.html
	grep -q '<svg id="chart-pool"' "$H"
	[ "$(grep -o '<polyline class="pool-line' "$H" | wc -l)" -eq 2 ]
	[ "$(grep -o 'class="pool-ev grow"' "$H" | wc -l)" -eq 3 ]
	[ "$(grep -o 'class="pool-ev shrink"' "$H" | wc -l)" -eq 3 ]
	run aah-runner metrics "$b"
	[[ $output == *"aah_pool_events_total{experiment=\"$b\",trial=\"000001\",kind=\"grow\"} 2"* ]]
	[[ $output == *"aah_pool_events_total{experiment=\"$b\",trial=\"000001\",kind=\"preempt\"} 0"* ]]
	seed_resize_costs "$a" "$b"
}
