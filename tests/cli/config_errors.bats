#!/usr/bin/env bats
# Bad configs as a user meets them (issue 13, defects 4, 8, 9): whatever
# `create` refuses, `check` refuses first, with the same exit status (2, a
# config error) and a message that names the config file:line:col and the
# key that led to the bad file; a refused `create` leaves no experiment.

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

# c.yml with line 2 `searchSpacePath: ss.json` (col 18 is the value) and,
# with a NetworkMorphism tuner, line 5 `  initialArch: ARCH` (col 16).
space_config() {
	cat > c.yml <<-EOF
	experimentName: config-errors
	searchSpacePath: ${SPACE:-ss.json}
	tuner:
	  builtinTunerName: ${TUNER:-Random}
	EOF
	if [ -n "${ARCH:-}" ]; then echo "  initialArch: $ARCH" >> c.yml; fi
	printf 'trial:\n  command: contract_trial.sh\n' >> c.yml
}

# The config in $1 is refused by check, by create and by create --no-run,
# each with status 2 and a message containing every further argument; the
# work directory holds no experiment afterwards.
refused() {
	local cfg=$1; shift
	local cmd
	for cmd in "check $cfg" "check -c $cfg" "create -c $cfg" "create -c $cfg --no-run"; do
		# shellcheck disable=SC2086 # split the command on purpose
		run aah-runner $cmd
		echo "aah-runner $cmd -> $status: $output"
		[ "$status" -eq 2 ]
		for want in "$@"; do
			[[ $output == *"$want"* ]]
		done
		[ -z "$(ls -A "$AAH_WORKDIR/experiments" 2>/dev/null)" ]
	done
}

@test "search space: unknown _type" {
	space_config
	echo '{"lr": {"_type": "bogus", "_value": [1, 2]}}' > ss.json
	refused c.yml "c.yml:2:18: 'searchSpacePath'" "ss.json" "'lr' has unknown _type 'bogus'"
}

@test "search space: low > high" {
	space_config
	echo '{"lr": {"_type": "uniform", "_value": [2, 1]}}' > ss.json
	refused c.yml "c.yml:2:18: 'searchSpacePath'" "uniform 'lr' needs low <= high"
}

@test "search space: empty choice" {
	space_config
	echo '{"opt": {"_type": "choice", "_value": []}}' > ss.json
	refused c.yml "c.yml:2:18: 'searchSpacePath'" "choice 'opt' needs at least one value"
}

@test "search space: malformed JSON says where and what was expected" {
	space_config
	printf '{"lr": {"_type": "choice", "_value": [1, 2]\n' > ss.json
	refused c.yml "c.yml:2:18: 'searchSpacePath'" "ss.json:2:1: invalid JSON: expected ',' or '}'"
	printf '{"lr": {"_type": "choice" "_value": [1]}}\n' > ss.json
	refused c.yml "c.yml:2:18: 'searchSpacePath'" "ss.json:1:27: invalid JSON: expected ',' or '}'"
}

@test "search space: not a JSON object" {
	space_config
	echo '[1, 2]' > ss.json
	refused c.yml "c.yml:2:18: 'searchSpacePath'" "ss.json" "must be a JSON object of parameters"
}

@test "search space: a key given twice inside a parameter names the whole path" {
	space_config
	echo '{"lr": {"_type": "choice", "_value": [1], "_type": "uniform"}}' > ss.json
	refused c.yml "c.yml:2:18: 'searchSpacePath'" "key 'lr._type' appears twice"
}

@test "search space: a missing file" {
	SPACE=nosuch.json space_config
	refused c.yml "c.yml:2:18: 'searchSpacePath'" "nosuch.json" "No such file or directory"
}

@test "search space: a directory given as the file" {
	SPACE=adir space_config
	mkdir adir
	refused c.yml "c.yml:2:18: 'searchSpacePath'" "adir' is a directory, not a file"
}

# tuner.initialArch $1 is refused with the further arguments in the message,
# also with a tuner that does not start from it (create would copy it).
initial_arch_refused() {
	local arch=$1 tuner; shift
	echo '{}' > ss.json
	for tuner in NetworkMorphism Random; do
		TUNER=$tuner ARCH=$arch space_config
		refused c.yml "c.yml:5:16: 'tuner.initialArch'" "$arch" "$@"
	done
}

@test "tuner.initialArch: a missing file" {
	initial_arch_refused nope.json "No such file or directory"
}

@test "tuner.initialArch: a cyclic graph" {
	cat > cyc.json <<-'EOF'
	{ "format": "aah-arch/1", "input": { "height": 8, "width": 8, "channels": 1 },
	  "num_classes": 10, "output": "d",
	  "layers": [
	    { "id": "a", "type": "relu", "inputs": ["b"] },
	    { "id": "b", "type": "relu", "inputs": ["a"] },
	    { "id": "f", "type": "flatten", "inputs": ["b"] },
	    { "id": "d", "type": "dense", "inputs": ["f"], "units": 10 } ] }
	EOF
	initial_arch_refused cyc.json "cycle"
}

@test "tuner.classArgs: a value the tuner refuses is shown at its key, also in NNI v2's form" {
	echo '{"lr": {"_type": "uniform", "_value": [0.1, 1]}}' > ss.json
	TUNER=TPE space_config
	sed -i 's/^trial:$/  classArgs:\n    optimize_mode: maximize\n    gamma: 7\ntrial:/' c.yml
	refused c.yml "c.yml:7:12: 'tuner.classArgs.gamma': tuner TPE: classArgs.gamma must be in (0, 1)"
	cat > v2.yml <<-'EOF'
	searchSpaceFile: ss.json
	trialCommand: contract_trial.sh
	tuner:
	  name: TPE
	  classArgs:
	    optimize_mode: sideways
	trainingService:
	  platform: local
	EOF
	refused v2.yml "v2.yml:6:20: 'tuner.classArgs.optimize_mode': tuner TPE: classArgs.optimize_mode must be maximize or minimize"
}

@test "a nested duplicate key names its whole key path" {
	printf 'trial:\n  command: contract_trial.sh\n  env:\n    A: "1"\n    A: "2"\n' > c.yml
	refused c.yml "c.yml:5:5: duplicate key 'trial.env.A' (first at line 4)"
}

@test "an unknown key: check and create agree on the status" {
	printf 'trialConcurrency: 1\nmaxTrailNum: 3\ntrial:\n  command: x\n' > c.yml
	refused c.yml "c.yml:2:1: 'maxTrailNum' is not a known key (did you mean 'maxTrialNum'?)"
}

@test "check, create and render take the config as an argument, -c FILE or --config FILE; --help gives the exit status" {
	printf 'trial:\n  command: contract_trial.sh\n' > good.yml
	for form in "good.yml" "-c good.yml" "--config good.yml" "--config=good.yml"; do
		# shellcheck disable=SC2086
		run aah-runner check $form
		echo "check $form -> $status: $output"
		[ "$status" -eq 0 ]
		[[ $output == "good.yml: ok ("* ]]
	done
	run aah-runner check -c good.yml good.yml
	[ "$status" -eq 0 ]
	[ "$(grep -c ': ok (' <<< "$output")" -eq 2 ]
	for form in "good.yml" "-c good.yml" "--config good.yml"; do
		# shellcheck disable=SC2086
		run aah-runner create $form --no-run
		echo "create $form -> $status: $output"
		[ "$status" -eq 0 ]
	done
	printf 'trainingServicePlatform: kubernetes\ntrial:\n  command: x\nkubernetes:\n  claimName: c\n' > k.yml
	run aah-runner render -c k.yml
	[ "$status" -eq 0 ]
	want=$output
	run aah-runner render k.yml
	echo "render k.yml -> $status"
	[ "$status" -eq 0 ]
	[ "$output" = "$want" ]
	run aah-runner render -c k.yml k.yml
	[ "$status" -eq 2 ]
	run aah-runner check --help
	[ "$status" -eq 0 ]
	[[ $output == *"-c, --config FILE"* ]]
	[[ $output == *"2: a usage or config error"* ]]
	run aah-runner create --help
	[[ $output == *"2: a usage or config error"* ]]
}

@test "a good config still creates an experiment" {
	space_config
	echo '{"lr": {"_type": "uniform", "_value": [0.1, 0.2]}}' > ss.json
	run aah-runner check c.yml
	[ "$status" -eq 0 ]
	run aah-runner create -c c.yml --no-run
	[ "$status" -eq 0 ]
	[ "$(ls "$AAH_WORKDIR/experiments" | wc -l)" -eq 1 ]
	[ -f "$AAH_WORKDIR/experiments/$output/experiment.json" ]
	[ -f "$AAH_WORKDIR/experiments/$output/search_space.json" ]
}
