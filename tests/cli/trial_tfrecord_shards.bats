#!/usr/bin/env bats
# Which rank reads what of a TFRecord set (tests/fixtures/tfrecord: 40
# training records in 2 files), seen through --data_trace: each training
# batch a rank is handed, one line per batch. Every epoch is a permutation
# of all the records (seeded by --seed and the epoch); global batch b is its
# samples [8b, 8b+8), and rank r of W takes its r-th eighth/W (the loader,
# trialimg/data/loader.c). An elastic resize saves the position (batches of
# the epoch done, the global batch kept) and the relaunch with --resume goes
# on from the next batch on its new world size (trialimg/train.c).

load helpers

setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/aah-tfrecord-shards.XXXXXX")
	PY=/usr/bin/python3
	cp -r "$AAH_ROOT/tests/fixtures/tfrecord" "$T/data"
	common=(--arch "$AAH_ROOT/tests/fixtures/arch/cnn2.json" --train_data_dir "$T/data"
		--warmup_1 2 --threads 1 --seed 5 --monitor_interval 0 --global_batch 8)
}

teardown() {
	[ -n "${KEEP_T:-}" ] || rm -rf "$T"
}

free_port() {
	$PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# ranks N DIR [args...]: N ranks of one trial in $T/DIR, tracing to
# $T/DIR.trace.rank<r>; each rank's status goes to $T/DIR.status.
ranks() {
	local n=$1 dir=$2 port pids=() r
	shift 2
	port=$(free_port)
	for ((r = n - 1; r >= 0; r--)); do
		aah-trial --trial_dir "$T/$dir" "${common[@]}" --data_trace "$T/$dir.trace" \
			--rank $r --world_size "$n" --init_method "tcp://127.0.0.1:$port" "$@" \
			>"$T/$dir.log.$n.$r" 2>&1 &
		pids+=($!)
	done
	: > "$T/$dir.status"
	for pid in "${pids[@]}"; do
		wait "$pid" && echo 0 >> "$T/$dir.status" || echo $? >> "$T/$dir.status"
	done
}

# one_pass DIR [FULL]: in DIR's trace every epoch reads each of the 40
# records once, each global batch once, its ranks disjoint; with FULL, each
# global batch holds the same records as FULL's. Prints what it checked.
one_pass() {
	$PY - "$T" "$@" <<'PY'
import collections, glob, re, sys
t, d = sys.argv[1], sys.argv[2]
def read(d):
    batches = collections.defaultdict(list)  # (epoch, batch) -> [(world, rank, samples)]
    for f in glob.glob(f"{t}/{d}.trace.rank*"):
        for line in open(f):
            m = re.match(r"epoch (\d+) batch (\d+) world (\d+) rank (\d+):((?: \d+)*)$", line)
            assert m, (f, line)
            e, b, w, r = map(int, m.group(1, 2, 3, 4))
            batches[(e, b)].append((w, r, [int(x) for x in m.group(5).split()]))
    return batches
got = read(d)
epochs = sorted({e for e, _ in got})
assert epochs == [0, 1], epochs
for e in epochs:
    seen = []
    for b in range(5):
        parts = got.get((e, b))
        assert parts, f"epoch {e}: batch {b} was not read"
        worlds = {w for w, _, _ in parts}
        assert len(worlds) == 1, f"epoch {e} batch {b} read at world sizes {worlds}"
        w = worlds.pop()
        assert sorted(r for _, r, _ in parts) == list(range(w)), (e, b, parts)
        for _, _, s in parts:
            assert len(s) == 8 // w, (e, b, w, s)
        batch = [x for _, _, s in parts for x in s]
        assert len(set(batch)) == 8, f"epoch {e} batch {b}: ranks overlap {parts}"
        seen += batch
    assert sorted(seen) == list(range(40)), f"epoch {e} is not one pass: {sorted(seen)}"
    print(f"epoch {e}: 40 records once, worlds", [got[(e, b)][0][0] for b in range(5)])
if len(sys.argv) > 3:
    full = read(sys.argv[3])
    for k in sorted(got):
        a = sorted(x for _, _, s in got[k] for x in s)
        b = sorted(x for _, _, s in full[k] for x in s)
        assert a == b, f"epoch {k[0]} batch {k[1]}: {a} but uninterrupted {b}"
    print("every global batch as in", sys.argv[3])
PY
}

@test "a 2-rank trial's ranks read disjoint shards; together each epoch once" {
	ranks 2 full
	[ "$(sort -u "$T/full.status")" = 0 ]
	run one_pass full
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"epoch 1: 40 records once, worlds [2, 2, 2, 2, 2]"* ]]
	# each rank: 20 records an epoch, none of the other's
	for e in 0 1; do
		a=$(grep "^epoch $e " "$T/full.trace.rank0" | cut -d: -f2 | tr ' ' '\n' | sed '/^$/d' | sort)
		b=$(grep "^epoch $e " "$T/full.trace.rank1" | cut -d: -f2 | tr ' ' '\n' | sed '/^$/d' | sort)
		[ "$(echo "$a" | wc -l)" -eq 20 ]
		[ "$(echo "$b" | wc -l)" -eq 20 ]
		[ -z "$(comm -12 <(echo "$a") <(echo "$b"))" ]
	done
	# the two epochs are different permutations
	[ "$(grep '^epoch 0 batch 0 ' "$T/full.trace.rank0" | cut -d: -f2)" != \
	  "$(grep '^epoch 1 batch 0 ' "$T/full.trace.rank0" | cut -d: -f2)" ]
}

@test "resized 2 -> 1 -> 4 ranks mid-epoch and resumed, each epoch is still one pass" {
	ranks 2 full
	[ "$(sort -u "$T/full.status")" = 0 ]
	mkdir -p "$T/el"
	echo 1 > "$T/el/world_size"   # after the first step of epoch 1
	ranks 2 el --elastic
	[ "$(sort -u "$T/el.status")" = 85 ]
	echo 4 > "$T/el/world_size"   # one step on 1 rank, then 4
	ranks 1 el --elastic --resume
	[ "$(cat "$T/el.status")" = 85 ]
	grep -q "resumed from .* in epoch 1 after batch 1, 1 rank(s)" "$T/el.log.1.0"
	ranks 4 el --elastic --resume
	[ "$(sort -u "$T/el.status")" = 0 ]
	grep -q "in epoch 1 after batch 2, 4 rank(s)" "$T/el.log.4.0"
	run one_pass el full
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"epoch 0: 40 records once, worlds [2, 1, 4, 4, 4]"* ]]
	[[ $output == *"epoch 1: 40 records once, worlds [4, 4, 4, 4, 4]"* ]]
	[[ $output == *"every global batch as in full"* ]]
	[ "$(wc -l <"$T/el/metrics.jsonl")" -eq 2 ]
}
