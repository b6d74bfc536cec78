#!/usr/bin/env bats
# Trials written for NNI in containers of a real Docker engine
# (tests/docker/engine.bash): the CPU trial image (`make images`) carries
# python3 and aah's nni module; a stdlib trial reports through /userhome
# (.nni/metrics) and, with another NNI_PLATFORM, through its container's
# log, copied into trial.log when the job ends and read before the trial is
# judged. Then examples/nni-pytorch in its own image (its Dockerfile, on
# the trial image, with Debian's PyTorch): the example's Docker run.

load ../docker/common
load nni

setup_file() { docker_file_setup; }
teardown_file() { docker_file_teardown; }

setup() { docker_test_setup; }
teardown() { docker_test_teardown; }

exp_dir() { echo "$AAH_WORKDIR/experiments/$1"; }

# nni_docker_config FILE IMAGE COMMAND TRIALS [trial: lines...]: NNI's v2 form, platform docker.
nni_docker_config() {
	local f=$1 image=$2 command=$3 trials=$4; shift 4
	cat > "$f" <<-EOF
	experimentName: docker-nni
	searchSpaceFile: ${SPACE:-$AAH_ROOT/tests/fixtures/nni/search_space.json}
	trialCommand: $command
	trialConcurrency: 1
	maxTrialNumber: $trials
	experimentWorkingDirectory: $WORK/aah-work
	tuner:
	  name: TPE
	  classArgs: {optimize_mode: maximize}
	trainingService:
	  platform: docker
	  binary: $AAH_DOCKER
	  image: $image
	  user: "0:0"
	  mounts: ["$WORK:$WORK", "$AAH_ROOT:$AAH_ROOT:ro"]
	  pollInterval: 0.2s
	EOF
	for line in "$@"; do echo "$line" >> "$f"; done
}

@test "docker engine: a trial written for NNI in the trial image, through /userhome, then through the container's log" {
	docker_images
	for route in file log; do
		if [ $route = log ]; then extra=("trial:" "  env: {NNI_PLATFORM: remote}"); else extra=(); fi
		nni_docker_config c.yml aah-trial:cpu "python3 $AAH_ROOT/tests/fixtures/trials/nni_trial.py" 1 "${extra[@]}"
		run aah-runner create -c c.yml
		echo "$output"
		[ "$status" -eq 0 ]
		id=${lines[0]}
		T=$(exp_dir "$id")/trials/000001
		[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
		# the image's python3 imported aah's module (no NNI in the image)
		grep -q '"experiment": "'"$id"'"' "$T/received.json"
		nni_check_trial "$T" 3
		if [ $route = log ]; then
			[ "$(grep -c "^NNISDK_MEb'" "$T/trial.log")" -eq 4 ]
			[ ! -s "$T/.nni/metrics" ]
		fi
		[ "$(containers_of "$id")" -eq 0 ]
	done
}

@test "docker engine: examples/nni-pytorch in its image (Debian's PyTorch), TPE, on real Fashion-MNIST" {
	docker_images
	t0=$SECONDS
	"$AAH_DOCKER" build --network host -t aah-nni-pytorch:cpu "$AAH_ROOT/examples/nni-pytorch" \
		> "$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log"; false; }
	echo "# docker build examples/nni-pytorch: $((SECONDS - t0)) s" >&3
	# a space that learns in 2 epochs (tests/fixtures/nni/SOURCE.md)
	SPACE=$AAH_ROOT/tests/fixtures/nni/pytorch_space.json nni_docker_config c.yml aah-nni-pytorch:cpu \
		"python3 fashion_mnist.py --epochs 2 --train_samples 2000 --test_samples 500" 2 \
		"  workdir: /opt/nni-pytorch"
	t0=$SECONDS
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	echo "# 2 trials in containers: $((SECONDS - t0)) s" >&3
	id=${lines[0]}
	[ "$(count_events "$id" trial_finished succeeded)" -eq 2 ]
	for t in 000001 000002; do
		T=$(exp_dir "$id")/trials/$t
		grep -q '^== rank 0 (container [0-9a-f]*) ==' "$T/trial.log"
		nni_check_trial "$T" 2
	done
	run aah-runner report "$id"
	[[ $output == *"Final Score:           none: the trials counted no FLOPs"* ]]
	# real training on real data in the container: the better trial well above guessing
	/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert 0.5 < r["final"]["best_acc"] <= 1, r["final"]' \
		"$(exp_dir "$id")/results.json"
	[ "$(containers_of "$id")" -eq 0 ]
}
