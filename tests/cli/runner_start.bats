#!/usr/bin/env bats
# A trial that cannot even start says why (issue 13, item 3): the program
# or the directory it names, the system's words, and the config key to fix,
# in the journal, in `status` and in the trial's trial.log; never "killed
# by signal 13" with an empty log.

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

# run_failing_start WANT: create the experiment of c.yml, whose one trial
# cannot start; its reason must hold WANT in the journal, in `status` and in
# its trial.log, and no word of a signal.
run_failing_start() {
	local want=$1
	run timeout 120 aah-runner create -c c.yml -q
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	finished=$(grep '"event":"trial_finished"' "$AAH_WORKDIR/experiments/$id/journal.jsonl")
	echo "$finished"
	[[ $finished == *'"state":"failed"'* ]]
	[[ $finished == *"$want"* ]]
	[[ $finished != *signal* ]]
	run aah-runner status "$id"
	echo "$output"
	[[ $output == *"$want"* ]]
	cat "$AAH_WORKDIR/experiments/$id/trials/000001/trial.log"
	grep -qF "$want" "$AAH_WORKDIR/experiments/$id/trials/000001/trial.log"
}

@test "a missing trial command: 'cannot run' with the file, the reason and trial.command" {
	TRIAL_COMMAND=/nonexistent/bin/trainer write_config c.yml "maxTrialNum: 1"
	run_failing_start "cannot run '/nonexistent/bin/trainer': No such file or directory (check trial.command)"
}

@test "a missing trial codeDir: 'cannot enter directory' with the path and trial.codeDir" {
	TRIAL_YAML="  codeDir: /nonexistent/code" write_config c.yml "maxTrialNum: 1"
	run_failing_start "cannot enter directory '/nonexistent/code': No such file or directory (check trial.codeDir)"
}
