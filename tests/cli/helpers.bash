# Shared setup for the command-level tests: a fresh work directory per test
# and a config writer. The binaries come from $AAH_ROOT/$AAH_BUILD on PATH.
AAH_ROOT=${AAH_ROOT:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
AAH_BUILD=${AAH_BUILD:-build}
PATH="$AAH_ROOT/$AAH_BUILD:$AAH_ROOT/tests/fixtures/trials:$PATH"
export AAH_ROOT AAH_BUILD PATH

setup_workdir() {
	WORK=$(mktemp -d "${BATS_TMPDIR:-/tmp}/aah-cli.XXXXXX")
	export AAH_WORKDIR="$WORK/aah-work"
	cd "$WORK" || return 1
}

teardown_workdir() {
	# On failure, show what the journals say went wrong, and what the
	# trials said about it (their error lines: a rank's own words).
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -d "$AAH_WORKDIR/experiments" ]; then
		grep -h -E '"state":"(failed|canceled)"' "$AAH_WORKDIR"/experiments/*/journal.jsonl 2>/dev/null |
			head -20 | sed 's/^/# journal: /' >&3
		grep -H -i -E 'error|killed|signal' "$AAH_WORKDIR"/experiments/*/trials/*/trial.log 2>/dev/null |
			sed "s#^$AAH_WORKDIR/experiments/##" | head -12 | sed 's/^/# trial log: /' >&3
	fi
	# Leave no trial process behind, whatever the test did.
	pkill -f "$WORK" 2>/dev/null || true
	rm -rf "$WORK"
}

# setup_trial_tmp / teardown_trial_tmp: aah-trial's own tests: a fresh
# temporary folder T, the arch fixtures ARCH and the system's python PY.
setup_trial_tmp() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/aah-trial-bats.XXXXXX")
	ARCH=$AAH_ROOT/tests/fixtures/arch
	PY=/usr/bin/python3
}

teardown_trial_tmp() {
	rm -rf "$T"
}

# dump_experiments N: the last lines of every journal and N of every
# trial log of the work directory (a failed test's teardown).
dump_experiments() {
	local f
	for f in "$AAH_WORKDIR"/experiments/*/journal.jsonl; do [ -f "$f" ] && tail -n 20 "$f"; done
	for f in "$AAH_WORKDIR"/experiments/*/trials/*/trial.log; do
		[ -f "$f" ] && { echo "--- $f"; tail -n "$1" "$f"; }
	done
	return 0
}

# write_config FILE [extra top-level YAML lines...] (trial section via TRIAL_YAML)
write_config() {
	local f=$1; shift
	{
		echo "experimentName: cli-test"
		echo "trainingServicePlatform: local"
		echo "searchSpacePath: $AAH_ROOT/tests/fixtures/upstream-configs/aah-imagenet-search_space.json"
		for line in "$@"; do echo "$line"; done
		echo "tuner:"
		echo "  builtinTunerName: ${TUNER:-Random}"
		echo "trial:"
		echo "  command: ${TRIAL_COMMAND:-contract_trial.sh}"
		if [ -n "${TRIAL_YAML:-}" ]; then printf "%s\n" "$TRIAL_YAML"; fi
	} > "$f"
}

# The only experiment id in the work directory.
only_experiment() {
	ls "$AAH_WORKDIR/experiments"
}

# has_experiment: an experiment's own directory exists (the experiments
# directory is made first, so waiting for that one alone races its id;
# and an experiment is built as a hidden .<id>.creating first, which only
# ls -A shows, so waiting for any entry races it too)
has_experiment() {
	[ -n "$(ls "$AAH_WORKDIR/experiments" 2>/dev/null)" ]
}

journal() {
	cat "$AAH_WORKDIR/experiments/$1/journal.jsonl"
}

# journal_figures JOURNAL: every trial_finished's best_val_acc and flops,
# one "<trial> <acc> <flops>" line each: the figures themselves, never a
# grep for digits over lines that also hold clocks.
journal_figures() {
	/usr/bin/python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["event"] == "trial_finished":
        print(e["trial"], repr(e.get("best_val_acc")), repr(e.get("flops")))
PY
}

# place_dir ID [SEQ]: the directory trial SEQ's (default 1) last launch
# wrote into: its place (docs/formats.md, "Attempts and their places"), as
# the journal's last trial_submitted names it; the trial directory when none.
place_dir() {
	/usr/bin/python3 - "$AAH_WORKDIR/experiments/$1" "${2:-1}" <<'PY'
import json, os, sys
e, seq = sys.argv[1], int(sys.argv[2])
place = ""
for line in open(os.path.join(e, "journal.jsonl")):
    d = json.loads(line)
    if d["event"] == "trial_submitted" and d.get("trial_seq") == seq:
        place = d.get("place", "")
print(os.path.join(e, "trials", "%06d" % seq, place).rstrip("/"))
PY
}

# Count journal events of a kind (optionally with a given state).
count_events() {
	local id=$1 event=$2 state=${3:-}
	if [ -n "$state" ]; then
		grep -c "\"event\":\"$event\".*\"state\":\"$state\"" "$AAH_WORKDIR/experiments/$id/journal.jsonl" || true
	else
		grep -c "\"event\":\"$event\"" "$AAH_WORKDIR/experiments/$id/journal.jsonl" || true
	fi
}

# wait_for COMMAND...: run COMMAND until it succeeds: the event a test waits
# for (a file, a journal line, a process gone), never a fixed sleep. Fails
# loudly after ${WAIT_S:-60} s, a bound generous enough for a loaded machine.
wait_for() {
	local limit=$((SECONDS + ${WAIT_S:-60}))
	until "$@"; do
		if [ "$SECONDS" -ge "$limit" ]; then
			echo "waited ${WAIT_S:-60} s in vain for: $*" >&2
			return 1
		fi
		sleep 0.1
	done
}
