# The fence by attempt (docs/formats.md "Attempts and their places"), as
# every backend's fence test checks it (docker_hosts.bats, slurm_fence.bats,
# k8s_fence.bats): trial 1 of an experiment ran a first launch that was cut
# off from the runner and went on writing (its accuracy OLD), while the
# launch that replaced it ran elsewhere and ended well (accuracy NEW). The
# trials are tests/fixtures/trials/ckpt_trial.sh (TRIAL_ACC "OLD NEW").

# fence_trial_yaml [LINE...]: the trial section of a fence test's config:
# ckpt_trial.sh, one retry, the first launch at 0.91 and holding on after
# its result, the one that replaces it (FENCE_NEXT: attempt 2, or "1.1",
# attempt 1 relaunched) at 0.62, the last of 4 steps behind $WORK/go (or
# $WORK/go.<launch>); LINEs are more trial keys ("  timeout: 30s").
fence_trial_yaml() {
	local line
	echo "trial:"
	echo "  command: $AAH_ROOT/tests/fixtures/trials/ckpt_trial.sh"
	echo "  retries: 1"
	for line in "$@"; do echo "$line"; done
	echo "  env:"
	echo "    TRIAL_RUN_LOG: $WORK/runs.log"
	echo "    TRIAL_STEPS: \"4\""
	echo "    TRIAL_STEP_S: \"${STEP_S:-0.2}\""
	echo "    TRIAL_GATE: $WORK/go"
	echo "    TRIAL_ACC: \"1=0.91 ${FENCE_NEXT:-2}=0.62\""
	echo "    TRIAL_HOLD_ATTEMPT: \"1\""
}

# fence_end ID: the cut-off first launch stopped, its successor's
# (FENCE_NEXT) last step goes ahead ($RUNNER_PID, the runner, then ends);
# the trial succeeded once, as that launch, in its own place, and
# fence_check holds.
fence_end() {
	local next=${FENCE_NEXT:-2}
	touch "$WORK/go"
	wait "$RUNNER_PID"
	RUNNER_PID=
	cat "$WORK/runs.log"
	[ "$(count_events "$1" trial_finished succeeded)" -eq 1 ] || return 1
	grep -q "^1 $next 0 .* done=4\$" "$WORK/runs.log" || return 1
	fence_check "$1" 0.91 0.62 || return 1
	[ "$(fence_places "$1" | tr '\n' ' ')" = "1 . ${next%%.*} attempt-$next " ]
}

# fence_places ID: each launch of trial 1, in order, as "<attempt> <place>":
# the place its trial_submitted names ("." for the trial directory itself).
fence_places() {
	/usr/bin/python3 - "$AAH_WORKDIR/experiments/$1/journal.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["event"] == "trial_submitted" and e.get("trial_seq") == 1:
        print(e["attempt"], e.get("place") or ".")
PY
}

# fence_accs FILE...: the accuracies the files hold, one a line (result.json's
# best_val_acc, each metrics.jsonl line's val_acc), "none" for a file not there.
fence_accs() {
	/usr/bin/python3 - "$@" <<'PY'
import json, os, sys
for p in sys.argv[1:]:
    if not os.path.exists(p):
        print("none")
    elif p.endswith(".jsonl"):
        for line in open(p):
            print(json.loads(line)["val_acc"])
    else:
        print(json.load(open(p))["best_val_acc"])
PY
}

# fence_check ID OLD NEW: the score is NEW's alone, every launch wrote into
# its own place (the cut-off one's result there, holding OLD), and the
# archive is the successor's.
fence_check() {
	local id=$1 old=$2 new=$3 E T first cur
	E=$AAH_WORKDIR/experiments/$id
	T=$E/trials/000001
	echo "launches (attempt, place):"
	fence_places "$id"
	# The score is the successor's: what the runner journaled, the report's
	# figures and the metrics are its epochs' alone.
	[ "$(journal_figures "$E/journal.jsonl" | tail -n 1)" = "000001 $new 1100000000" ] ||
		{ echo "journaled: $(journal_figures "$E/journal.jsonl" | tail -n 1), not $new's" >&2; return 1; }
	aah-runner report "$id" -q -o "$WORK/fence-report" || return 1
	/usr/bin/python3 - "$WORK/fence-report/results.json" "$new" <<-'PY' || return 1
	import json, sys
	d = json.load(open(sys.argv[1]))
	t = d["trials"][0]
	assert abs(t["best_acc"] - float(sys.argv[2])) < 1e-9 and abs(t["flops"] - 1.1e9) < 1, t
	PY
	aah-runner metrics "$id" | grep -qx "aah_trial_best_accuracy{experiment=\"$id\",trial=\"000001\"} $new" ||
		{ echo "metrics: $(aah-runner metrics "$id" | grep trial_best)" >&2; return 1; }
	# Each launch wrote into its own place: the cut-off one's result is in
	# its place, the successor's in its own, and neither holds the other's.
	first=$(fence_places "$id" | head -n 1 | cut -d' ' -f2)
	cur=$(fence_places "$id" | tail -n 1 | cut -d' ' -f2)
	[ "$first" != "$cur" ] || { echo "both launches wrote into $T/$cur" >&2; return 1; }
	[ "$(fence_accs "$T/$first/result.json")" = "$old" ] ||
		{ echo "$T/$first/result.json: $(fence_accs "$T/$first/result.json"), not $old" >&2; return 1; }
	[ "$(fence_accs "$T/$cur/result.json" "$T/$cur/metrics.jsonl" | sort -u)" = "$new" ] ||
		{ echo "$T/$cur: $(fence_accs "$T/$cur/result.json" "$T/$cur/metrics.jsonl" | tr '\n' ' ')" >&2; return 1; }
	# The archive is the successor's: verified, its place in, the cut-off
	# launch's result and metrics out.
	aah-runner collect "$id" -o "$WORK/fence.tar.gz" || return 1
	aah-runner verify "$WORK/fence.tar.gz" || return 1
	rm -rf "$WORK/fence-x" && mkdir "$WORK/fence-x" && tar -xzf "$WORK/fence.tar.gz" -C "$WORK/fence-x" || return 1
	[ "$(fence_accs "$WORK/fence-x/$id/trials/000001/$cur/result.json")" = "$new" ] ||
		{ echo "the archive has no result of $new in trials/000001/$cur" >&2; return 1; }
	[ "$(fence_accs $(find "$WORK/fence-x" -name result.json -o -name metrics.jsonl) | sort -u)" = "$new" ] ||
		{ echo "the archive holds the cut-off launch's figures:" >&2; find "$WORK/fence-x" -name 'result.json' >&2; return 1; }
}
