#!/usr/bin/env bats
# Fault injection: the runner is SIGKILLed at every journaled step of a
# 2-trial experiment (the AAH_FAULT_KILL_AFTER test hook, docs/design-notes.md
# "Test hooks"), then resumed; also killed during stop, collect and report,
# and run with the work directory on a full filesystem. The same kill-point
# loop runs on the local backend and on a real Slurm cluster (tests/slurm/).
# After each: every finished result kept (its checksum as the trial wrote
# it), no finished trial run again, no orphan process, and `status` agrees
# with a replay of the journal.

load helpers
source "$AAH_ROOT/tests/slurm/cluster.bash"

setup_file() {
	export FI_TALLY
	FI_TALLY=$(mktemp "${BATS_TMPDIR:-/tmp}/aah-fi-tally.XXXXXX")
}

teardown_file() {
	rm -f "$FI_TALLY"
}

setup() {
	setup_workdir
	SLURM_DIR=
	RUNNER_PID=
}

teardown() {
	if [ -n "${RUNNER_PID:-}" ]; then kill -9 "$RUNNER_PID" 2>/dev/null || true; fi
	if [ -n "${SLURM_DIR:-}" ]; then
		[ -n "${BATS_TEST_COMPLETED:-}" ] || slurm_cluster_logs "$SLURM_DIR"
		slurm_cluster_down "$SLURM_DIR"
		rm -rf "$SLURM_DIR"
	fi
	if mountpoint -q "$WORK/small" 2>/dev/null; then umount "$WORK/small"; fi
	teardown_workdir
}

# The trial: notes each start and end in $FI_RUNS, waits for $FI_GO (a file
# the test creates), writes result.json whole (temp + rename) and records
# the result's checksum in $FI_SUMS before it is in place.
write_trial() {
	cat > "$WORK/fi_trial.sh" <<'SH'
#!/bin/sh
set -eu
t=$AAH_TRIAL_ID
echo "start $t ${AAH_ATTEMPT:-1}" >> "$FI_RUNS"
while [ ! -e "$FI_GO" ]; do sleep 0.05; done
tmp=$AAH_TRIAL_DIR/result.json.tmp.$$
printf '{"format":"aah-result/1","status":"succeeded","best_val_acc":0.%s,"total_flops":1e9,"precision":"fp32","devices":["cpu"]}\n' \
	"$(echo "$t" | sed 's/^0*//')" > "$tmp"
echo "$t $(sha256sum < "$tmp" | cut -d' ' -f1)" >> "$FI_SUMS"
mv "$tmp" "$AAH_TRIAL_DIR/result.json"
echo "done $t" >> "$FI_RUNS"
# FI_FILL: fill the disk that holds it once this trial's result is written.
if [ -n "${FI_FILL:-}" ]; then head -c 8M /dev/zero > "$FI_FILL" 2>/dev/null || true; fi
SH
	chmod +x "$WORK/fi_trial.sh"
}

# fi_config FILE BACKEND [concurrency]: 2 trials of the trial above.
fi_config() {
	{
		echo "experimentName: fault-injection"
		echo "trainingServicePlatform: $2"
		echo "searchSpacePath: $AAH_ROOT/tests/fixtures/upstream-configs/aah-imagenet-search_space.json"
		echo "maxTrialNum: 2"
		echo "trialConcurrency: ${3:-1}"
		echo "tuner:"
		echo "  builtinTunerName: Random"
		echo "trial:"
		echo "  command: $WORK/fi_trial.sh"
		echo "  retries: 0"
		if [ "$2" = slurm ]; then
			echo "slurm:"
			echo "  pollInterval: 0.2s"
		fi
	} > "$1"
}

# fi_case NAME: a fresh work directory, runs file and checksums for one case.
fi_case() {
	export AAH_WORKDIR=$WORK/$1/aah-work FI_RUNS=$WORK/$1/runs FI_SUMS=$WORK/$1/sums
	export FI_GO=$WORK/$1/go
	mkdir -p "$WORK/$1"
}

expdir() { echo "$AAH_WORKDIR/experiments/$1"; }

# Processes (other than zombies) whose environment or command line names
# the experiment.
experiment_procs() {
	/usr/bin/python3 - "$1" <<'PY'
import os, sys
tag = sys.argv[1].encode()
me = str(os.getpid())
for pid in filter(str.isdigit, os.listdir("/proc")):
    if pid == me:
        continue
    try:
        if open("/proc/%s/stat" % pid, "rb").read().rsplit(b") ", 1)[1][:1] == b"Z":
            continue
        env = open("/proc/%s/environ" % pid, "rb").read()
        cmd = open("/proc/%s/cmdline" % pid, "rb").read()
    except OSError:
        continue
    if b"AAH_EXPERIMENT_ID=" + tag in env or tag in cmd:
        print(pid, cmd.replace(b"\0", b" ").decode(errors="replace"))
PY
	if [ -n "${SLURM_DIR:-}" ]; then
		squeue -h -o '%i %j' 2>/dev/null | grep "aah-$1-" || true
	fi
}
trials_started() { [ "$(grep -c '^start' "$FI_RUNS" 2>/dev/null)" = "$1" ]; }
no_orphans() { [ -z "$(experiment_procs "$1")" ]; }

# status_agrees ID: `status` shows each trial in the state a replay of the
# journal gives, and the same counts.
status_agrees() {
	local id=$1 want got
	want=$(/usr/bin/python3 - "$(expdir "$id")/journal.jsonl" <<'PY'
import json, sys
st = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    k = e["event"]
    if k in ("trial_created", "trial_retry"):
        st[e["trial"]] = "queued"
    elif k == "trial_submitted":
        st[e["trial"]] = "running"
    elif k == "trial_finished":
        st[e["trial"]] = e["state"]
for t in sorted(st):
    print(t, st[t])
v = list(st.values())
ok = v.count("succeeded") + v.count("early_stopped")
done = ok + v.count("failed") + v.count("canceled")
print("trials: %d done (%d succeeded, %d failed), %d running, %d queued, 2 max"
      % (done, ok, v.count("failed"), v.count("running"), v.count("queued")))
PY
)
	got=$(aah-runner status "$id" | awk 'NR == 2 { t = $0 } $1 ~ /^[0-9][0-9][0-9][0-9][0-9][0-9]$/ { print $1, $2 } END { print t }')
	if [ "$want" != "$got" ]; then
		printf 'status disagrees with the journal of %s\njournal replay:\n%s\nstatus:\n%s\n' \
			"$id" "$want" "$got" >&2
		return 1
	fi
}

# results_kept: every result.json is the one its trial wrote.
results_kept() {
	local t sum
	while read -r t sum; do
		# in the place of the trial's last launch (docs/formats.md)
		[ "$(sha256sum < "$(place_dir "$1" "$((10#$t))")/result.json" | cut -d' ' -f1)" = "$sum" ] || {
			echo "trial $t: result.json is not the one the trial wrote" >&2
			return 1
		}
	done < "$FI_SUMS"
}

# fi_invariants ID [strict]: the experiment finished with both trials
# succeeded once; no trial started again after it finished (strict: no
# trial started twice at all); results kept; no orphans; status agrees.
fi_invariants() {
	local id=$1 strict=${2:-}
	grep -q '"event":"experiment_done"' "$(expdir "$id")/journal.jsonl" || {
		echo "experiment $id is not done" >&2
		return 1
	}
	[ "$(count_events "$id" trial_finished succeeded)" -eq 2 ] || {
		echo "experiment $id: $(count_events "$id" trial_finished succeeded) succeeded finishes, not 2" >&2
		return 1
	}
	/usr/bin/python3 - "$FI_RUNS" "$strict" <<'PY' || return 1
import sys
starts, done = {}, {}
for n, line in enumerate(open(sys.argv[1])):
    what, t = line.split()[:2]
    if what == "start":
        assert t not in done, "trial %s started again after it finished" % t
        starts[t] = starts.get(t, 0) + 1
    else:
        assert t not in done, "trial %s finished twice" % t
        done[t] = n
assert sorted(done) == ["000001", "000002"], "finished trials: %s" % sorted(done)
if sys.argv[2]:
    assert all(v == 1 for v in starts.values()), "a trial started twice: %s" % starts
PY
	[ "$(wc -l < "$FI_SUMS")" -eq 2 ] || { echo "results written: $(cat "$FI_SUMS")" >&2; return 1; }
	results_kept "$id" || return 1
	WAIT_S=30 wait_for no_orphans "$id" || { experiment_procs "$id" >&2; return 1; }
	status_agrees "$id"
}

# kill_points BACKEND [CONCURRENCY]: a run without faults counts the
# journal events; then for each N the runner is killed right after its Nth
# line and resumed.
kill_points() {
	local backend=$1 total n id rc
	write_trial
	fi_config "$WORK/c.yml" "$backend" "${2:-1}"
	fi_case base
	touch "$FI_GO"
	run aah-runner create -c "$WORK/c.yml" -q
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	id=$(only_experiment)
	fi_invariants "$id" strict
	total=$(wc -l < "$(expdir "$id")/journal.jsonl")
	[ "$total" -ge 9 ]
	for ((n = 1; n <= total; n++)); do
		fi_case "$backend.$n"
		touch "$FI_GO"
		rc=0
		AAH_FAULT_KILL_AFTER=$n aah-runner create -c "$WORK/c.yml" -q > "$WORK/create.$n.log" 2>&1 || rc=$?
		[ "$rc" -eq 137 ] || { echo "kill point $n: create exited $rc, not killed" >&2; return 1; }
		if [ "$n" -eq 1 ]; then
			# Killed before the experiment was whole: none is left, and
			# nothing ran.
			[ -z "$(ls "$AAH_WORKDIR/experiments")" ] || { echo "kill point 1 left an experiment" >&2; return 1; }
			[ ! -e "$FI_RUNS" ] || { echo "kill point 1 ran a trial" >&2; return 1; }
			echo "kill $backend" >> "$FI_TALLY"
			continue
		fi
		id=$(only_experiment)
		[ "$(wc -l < "$(expdir "$id")/journal.jsonl")" -eq "$n" ] || {
			echo "kill point $n: the journal has $(wc -l < "$(expdir "$id")/journal.jsonl") lines" >&2
			return 1
		}
		status_agrees "$id" || { echo "kill point $n, before resume" >&2; return 1; }
		rc=0
		aah-runner resume "$id" -q > "$WORK/resume.$n.log" 2>&1 || rc=$?
		[ "$rc" -eq 0 ] || { echo "kill point $n: resume exited $rc" >&2; cat "$WORK/resume.$n.log" >&2; return 1; }
		fi_invariants "$id" strict || { echo "kill point $n ($(sed -n "${n}p" "$(expdir "$id")/journal.jsonl"))" >&2; return 1; }
		echo "kill $backend" >> "$FI_TALLY"
	done
	echo "# $backend${2:+ at concurrency $2}: $total kill points, all invariants held" >&3
}

# killed_at CASE CONCURRENCY EVENT N: the 2-trial experiment created on the
# local backend and SIGKILLed right after its Nth EVENT line; its id in $id.
killed_at() {
	write_trial
	fi_config c.yml local "$2"
	fi_case "$1"
	touch "$FI_GO"
	rc=0
	AAH_FAULT_KILL_EVENT=$3 AAH_FAULT_KILL_AFTER=$4 aah-runner create -c c.yml -q || rc=$?
	[ "$rc" -eq 137 ]
	id=$(only_experiment)
}

@test "fault hook: AAH_FAULT_KILL_EVENT narrows the count to one event" {
	killed_at narrow 2 trial_submitted 2
	# The last line is the second trial_submitted, and nothing came after.
	tail -n 1 "$(expdir "$id")/journal.jsonl" | grep -q '"event":"trial_submitted","trial":"000002"'
	[ "$(count_events "$id" trial_submitted)" -eq 2 ]
	run aah-runner resume "$id" -q
	[ "$status" -eq 0 ]
	fi_invariants "$id" strict
}

# A fill round writes its trials' proposals unsynced and syncs them once,
# before it journals any as submitted (docs/design-notes.md): a power cut
# before that sync may leave a proposal torn (an empty params.json, as
# ext4's delayed allocation leaves one). The runner is killed at trial 2's
# trial_created and its proposal torn by hand: resume proposes it again.
@test "power cut: a torn proposal of a trial never launched is proposed again at resume" {
	killed_at torn 1 trial_created 2
	[ "$(count_events "$id" trial_submitted)" -eq 1 ]
	dir=$(expdir "$id")/trials/000002
	mkdir -p "$dir"
	: > "$dir/params.json"
	printf '{"format": "aah-arch/1", "lay' > "$dir/arch.json"
	run aah-runner resume "$id" -q
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"trial 000002: its proposal, never launched, does not read; it is proposed again"* ]]
	/usr/bin/python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))' "$dir/params.json"
	[ ! -e "$dir/arch.json" ]   # Random proposes no architecture
	fi_invariants "$id" strict
}

# One trial at a time, each rank forked and waiting in the runner's copy
# (AAH_SPAWN=fork, the path where aah-hold is not installed).
@test "kill points, local backend: SIGKILL after each journal line, then resume" {
	AAH_SPAWN=fork kill_points local
}

# At 8 slots both trials are one fill batch: their ranks wait in aah-hold
# while both launches are journaled unsynced, and are let go after one
# fdatasync (a kill between leaves each journaled rank to run from the
# journal alone, through `aah-runner held-orphan`).
@test "kill points, local backend, one batch of two launches: SIGKILL after each journal line, then resume" {
	kill_points local 8
}

@test "kill points, slurm backend: SIGKILL after each journal line, then resume" {
	SLURM_DIR=$(mktemp -d "${BATS_TMPDIR:-/tmp}/aah-fi-slurm.XXXXXX")
	if ! slurm_cluster_up "$SLURM_DIR" 2> "$WORK/slurm-up.log"; then
		reason=$(tail -n 1 "$WORK/slurm-up.log")
		skip "no Slurm test cluster: $reason"
	fi
	export SLURM_CONF
	kill_points slurm
}

@test "kill during stop: the runner dies between two cancels; resume finishes both" {
	write_trial
	fi_config c.yml local 2
	fi_case stop
	run aah-runner create -c c.yml --no-run
	[ "$status" -eq 0 ]
	id=${lines[0]}
	# Both trials wait on $FI_GO; the hook kills the runner right after
	# the first cancel of the stop is journaled.
	AAH_FAULT_KILL_EVENT=trial_finished AAH_FAULT_KILL_AFTER=1 aah-runner resume "$id" -q \
		> runner1.log 2>&1 &
	RUNNER_PID=$!
	wait_for trials_started 2
	run aah-runner stop "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	rc=0
	wait "$RUNNER_PID" || rc=$?
	RUNNER_PID=
	[ "$rc" -eq 137 ]
	# Killed in the middle of the stop: one trial canceled, one still running.
	[ "$(count_events "$id" trial_finished canceled)" -eq 1 ]
	! grep -q '"event":"runner_stopped"' "$(expdir "$id")/journal.jsonl"
	status_agrees "$id"
	touch "$FI_GO"
	run aah-runner resume "$id" -q
	echo "$output"
	[ "$status" -eq 0 ]
	fi_invariants "$id"
	echo "scenario stop" >> "$FI_TALLY"
}

# A finished experiment of two trials, for the kills during collect and
# report (collect's test adds a big file, to archive long enough).
finished_experiment() {
	write_trial
	fi_config c.yml local 2
	fi_case "$1"
	touch "$FI_GO"
	run aah-runner create -c c.yml -q
	[ "$status" -eq 0 ]
	id=$(only_experiment)
}

# at_work_or_gone COMMAND...: COMMAND succeeds, or $RUNNER_PID has ended
at_work_or_gone() {
	"$@" || ! kill -0 "$RUNNER_PID" 2>/dev/null
}

# kill_when COMMAND...: SIGKILL $RUNNER_PID once COMMAND succeeds (the
# event); it must still have been at work (status 137).
# A runner that ends first is not waited for in vain: the test fails at
# once, saying how it exited.
kill_when() {
	local rc=0
	wait_for at_work_or_gone "$@" || return 1
	kill -9 "$RUNNER_PID" 2>/dev/null || true
	wait "$RUNNER_PID" || rc=$?
	RUNNER_PID=
	[ "$rc" -eq 137 ] || { echo "it exited $rc before it was killed" >&2; return 1; }
}

@test "kill during collect: no archive appears, the experiment is intact, collect again verifies" {
	finished_experiment collect
	head -c 48M /dev/urandom > "$(expdir "$id")/trials/000001/blob.bin"
	aah-runner collect "$id" -o "$WORK/logs.tar.gz" > collect1.log 2>&1 &
	RUNNER_PID=$!
	# The event: the archive is being written (its temp file has data).
	kill_when sh -c "[ -s \"\$(ls $WORK/logs.tar.gz.tmp.* 2>/dev/null | head -n 1)\" ]"
	[ ! -e "$WORK/logs.tar.gz" ]
	fi_invariants "$id" strict
	run aah-runner collect "$id" -o "$WORK/logs.tar.gz"
	echo "$output"
	[ "$status" -eq 0 ]
	run aah-runner verify "$WORK/logs.tar.gz"
	echo "$output"
	[ "$status" -eq 0 ]
	tar -tzf "$WORK/logs.tar.gz" | grep -q 'trials/000002/result.json$'
	echo "scenario collect" >> "$FI_TALLY"
}

@test "kill during report: results.json and report.html are whole or absent; report again matches" {
	finished_experiment report
	local f other
	for f in results.json report.html; do
		rm -rf "$WORK/out"
		# The event: report says it stopped halfway through the temp file
		# of $f (the AAH_FAULT_STOP_WRITING test hook); it is killed there.
		AAH_FAULT_STOP_WRITING=$f aah-runner report "$id" -q -o "$WORK/out" > report1.log 2>&1 &
		RUNNER_PID=$!
		kill_when grep -q "stopped while writing '$WORK/out/$f.tmp.$RUNNER_PID'" report1.log
		# Killed mid-write: half a temp file, no $f; what was written before it is whole.
		[ -s "$WORK/out/$f.tmp.$(sed -n "s|.*'$WORK/out/$f.tmp.\([0-9]*\)'.*|\1|p" report1.log)" ]
		[ ! -e "$WORK/out/$f" ]
		if [ -e "$WORK/out/results.json" ]; then /usr/bin/python3 -m json.tool "$WORK/out/results.json" > /dev/null; fi
		if [ -e "$WORK/out/report.html" ]; then tail -c 20 "$WORK/out/report.html" | grep -q '</html>'; fi
		[ "$f" = results.json ] || [ -e "$WORK/out/results.json" ]
		fi_invariants "$id" strict
		run aah-runner report "$id" -q -o "$WORK/out"
		[ "$status" -eq 0 ]
		run aah-runner report "$id" -q -o "$WORK/out2"
		[ "$status" -eq 0 ]
		cmp "$WORK/out/results.json" "$WORK/out2/results.json"
		tail -c 20 "$WORK/out/report.html" | grep -q '</html>'
	done
	echo "scenario report" >> "$FI_TALLY"
}

# disk_full_said WHEN: the runner (its `run` status and output) ended on
# a clear error, and nothing it had is lost.
disk_full_said() {
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"No space left on device"* ]]
	echo "# full disk $1: $output" | head -n 3 >&3
	status_agrees "$id"
	results_kept "$id"
}

@test "full disk: the runner fails with a clear error; resume with space back loses nothing" {
	mkdir -p "$WORK/small"
	if ! mount -t tmpfs -o size=600k tmpfs "$WORK/small" 2> mount.err; then
		skip "cannot mount a small tmpfs here: $(cat mount.err)"
	fi
	write_trial
	fi_config c.yml local 1
	fi_case disk
	export AAH_WORKDIR=$WORK/small/aah-work
	run aah-runner create -c c.yml --no-run
	[ "$status" -eq 0 ]
	id=${lines[0]}
	touch "$FI_GO"
	# Trial 1 runs while there is room, then the disk is filled: the
	# runner must say that it cannot write, and stop.
	AAH_FAULT_KILL_EVENT=trial_finished AAH_FAULT_KILL_AFTER=1 aah-runner resume "$id" -q \
		> /dev/null 2> resume1.err || true
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	head -c 2M /dev/zero > "$WORK/small/fill" 2>/dev/null || true
	run aah-runner resume "$id" -q
	disk_full_said "at resume"
	# Space is back, and trial 2 fills the disk again right after its
	# result is written: the runner ends on a clear error, or finishes if
	# its last lines still fit in pages the filesystem had given it.
	rm -f "$WORK/small/fill"
	FI_FILL=$WORK/small/fill run aah-runner resume "$id" -q
	if [ "$status" -ne 0 ]; then disk_full_said "after trial 2's result"; fi
	# Space is back: resume finishes without losing or repeating anything.
	rm -f "$WORK/small/fill"
	run aah-runner resume "$id" -q
	echo "$output"
	[ "$status" -eq 0 ]
	fi_invariants "$id" strict
	echo "scenario full-disk" >> "$FI_TALLY"
}

@test "fault injection: the tally of kill points x backends" {
	local n_local n_slurm scen backends=1
	n_local=$(grep -c '^kill local$' "$FI_TALLY" || true)
	n_slurm=$(grep -c '^kill slurm$' "$FI_TALLY" || true)
	scen=$(sed -n 's/^scenario //p' "$FI_TALLY" | paste -sd, -)
	[ "$n_slurm" -gt 0 ] && backends=2
	echo "# fault injection: $((n_local + n_slurm)) kill points passed ($n_local local, $n_slurm slurm: $backends backend(s)), plus kills during: ${scen:-none}; all invariants held" >&3
	[ "$n_local" -ge 9 ]
}
