#!/usr/bin/env bats
# The images as users run them, on a real Docker engine
# (tests/docker/engine.bash): the master image with a config, the work dir
# bind-mounted as /userhome and the engine's socket mounted, runs a short
# Fashion-MNIST search whose trials are sibling containers of the trial image
# (tuner.placement: trial: proposals computed inside them); then collect and
# verify from the master image. The CPU images come from `make images`
# (built once, cached in the engine's data root under the build tree).

load ../docker/common

setup_file() {
	docker_file_setup
	if [ ! -f "$DOCKER_SKIP_FILE" ] && ! docker_images >&3; then
		echo "make images failed (see above)" > "$DOCKER_SKIP_FILE"
		return 1
	fi
}
teardown_file() { docker_file_teardown; }

setup() {
	docker_skip_if_down
	setup_workdir
	SOCK=${DOCKER_HOST#unix://}
	# /userhome on the host side: the trial images' user 1000 owns it.
	U=$WORK/userhome
	mkdir -p "$U"
	cp "$AAH_ROOT/examples/quickstart-search-space.json" "$AAH_ROOT/examples/fashion-mnist-cnn.json" "$U/"
}

teardown() {
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -n "${WORK:-}" ]; then
		echo "--- docker ps -a:"; "$AAH_DOCKER" ps -a 2>&1
		for f in "$U"/aah-work/experiments/*/journal.jsonl; do [ -f "$f" ] && tail -n 20 "$f"; done
		for f in "$U"/aah-work/experiments/*/trials/*/trial.log; do
			[ -f "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }
		done
	fi
	ids=$("$AAH_DOCKER" ps -aq 2>/dev/null)
	[ -z "$ids" ] || "$AAH_DOCKER" rm -f $ids >/dev/null 2>&1
	[ -z "${WORK:-}" ] || { cd / && rm -rf "$WORK"; }
}

# master ARGS...: the master image as the README's container quick start runs
# it (user 1000, the socket's group added so it may talk to the engine).
master() {
	"$AAH_DOCKER" run --rm --network host -v "$U:/userhome" -v "$SOCK:/var/run/docker.sock" \
		--group-add "$(stat -c %g "$SOCK")" aah-master:cpu "$@"
}

@test "master image: a Fashion-MNIST search in sibling trial containers (placement: trial), collected and verified" {
	cat > "$U/config.yml" <<-EOF
	experimentName: container-quickstart
	trainingServicePlatform: docker
	trialConcurrency: 2
	maxTrialNum: 2
	searchSpacePath: quickstart-search-space.json
	tuner:
	  builtinTunerName: NetworkMorphism
	  placement: trial
	  initialArch: fashion-mnist-cnn.json
	trial:
	  command: aah-trial --threads 1 --batch_size 64 --warmup_1 1 --epochs 1 --train_samples 2048 --val_samples 512
	docker:
	  image: aah-trial:cpu
	  mounts: ["$U:/userhome"]
	EOF
	chown -R 1000:1000 "$U"
	run master /userhome/config.yml
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"aah-master: created experiment"* ]]
	id=$(cat "$U/aah-work/aah-master.id")
	E=$U/aah-work/experiments/$id
	# Written by user 1000 (the images' user), not root.
	[ "$(stat -c %u "$E/journal.jsonl")" = 1000 ]
	[ "$(grep -c '"event":"trial_finished".*"state":"succeeded"' "$E/journal.jsonl")" -eq 2 ]
	for t in 000001 000002; do
		# The proposal was computed inside the trial's container.
		grep -q '^aah-entrypoint: argv: /usr/local/bin/aah-runner propose .* --exec -- aah-trial ' "$E/trials/$t/trial.log"
		[ -s "$E/trials/$t/arch.json" ]
		[ -s "$E/trials/$t/result.json" ]
	done
	# The trials were sibling containers of the trial image, now removed.
	[ "$(containers_of "$id")" -eq 0 ]
	best=$(grep -o '"best_val_acc":[0-9.]*' "$E/journal.jsonl" | cut -d: -f2 | sort -g | tail -1)
	awk -v b="$best" 'BEGIN { exit !(b > 0.1 && b <= 1) }'
	run master collect "$id" -o "/userhome/$id-logs.tar.zst" -q
	echo "$output"
	[ "$status" -eq 0 ]
	run master verify "/userhome/$id-logs.tar.zst"
	echo "$output"
	[ "$status" -eq 0 ]
	# The host's runner agrees.
	aah-runner verify "$U/$id-logs.tar.zst"
	echo "# master image experiment $id: 2 trials succeeded in sibling containers, best val_acc $best, archive verified" >&3
}

@test "kubernetes: the master Job's and a trial Job's containers, as rendered, run on the engine (NO API server here)" {
	echo "# NO Kubernetes API server here: the Jobs' containers run on the Docker engine with their rendered command, env and user; the Job controller and kubelet are stood in for by tests/docker/run_pods.py" >&3
	mkdir -p "$U/cfg"
	mv "$U"/*.json "$U/cfg/"
	cat > "$U/cfg/config.yml" <<-EOF
	experimentName: k8s-on-engine
	trainingServicePlatform: kubernetes
	workdir: /userhome/aah-work
	maxTrialNum: 1
	searchSpacePath: quickstart-search-space.json
	tuner:
	  builtinTunerName: NetworkMorphism
	  initialArch: fashion-mnist-cnn.json
	trial:
	  command: aah-trial --threads 1 --batch_size 32 --warmup_1 1 --epochs 1 --train_samples 512 --val_samples 256
	  nodes: 2
	  retries: 0
	kubernetes:
	  namespace: aah
	  image: aah-trial:cpu
	  claimName: aah-userhome
	  kubectlRetries: 0
	  kubectlTimeout: 10s
	EOF
	chown -R 1000:1000 "$U"
	# The master Job of k8s/master-job.yaml: its container's args, env, user
	# and mounts (the ConfigMap at /etc/aah, the claim at /userhome).
	mapfile -t margv < <(/usr/bin/python3 - "$AAH_ROOT/k8s/master-job.yaml" "$U" <<-'PY'
	import sys, yaml
	job = yaml.safe_load(open(sys.argv[1]))
	pod = job["spec"]["template"]["spec"]
	c = pod["containers"][0]
	sec = pod["securityContext"]
	src = {"config": sys.argv[2] + "/cfg", "userhome": sys.argv[2]}
	out = ["--user", f"{sec['runAsUser']}:{sec['runAsGroup']}"]
	for m in c["volumeMounts"]:
	    out += ["-v", f"{src[m['name']]}:{m['mountPath']}" + (":ro" if m.get("readOnly") else "")]
	for e in c["env"]:
	    out += ["-e", f"{e['name']}={e['value']}"]
	out += ["aah-master:cpu"] + c["args"]
	print("\n".join(out))
	PY
	)
	echo "master: ${margv[*]}"
	run timeout 300 "$AAH_DOCKER" run --rm --network host "${margv[@]}"
	echo "$output"
	# It creates the experiment, then cannot reach an API server: there is none.
	[[ $output == *"aah-master: created experiment"* ]]
	[[ $output == *"kubectl"*"connection refused"* ]]
	id=$(cat "$U/aah-work/aah-master.id")
	E=$U/aah-work/experiments/$id
	grep '"event":"trial_finished"' "$E/journal.jsonl" | grep -q '"state":"failed".*kubectl'
	# The trial's Job as the master renders it: the image the tests built.
	"$AAH_DOCKER" run --rm --network host --user 1000:1000 -v "$U:/userhome" aah-master:cpu \
		render --experiment "$id" --trial 1 -o json > "$WORK/job.json"
	/usr/bin/python3 - "$WORK/job.json" <<-'PY'
	import json, sys
	d = json.load(open(sys.argv[1]))
	job = next(i for i in d["items"] if i["kind"] == "Job")
	assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "aah-trial:cpu", job
	assert job["spec"]["completions"] == 2
	vols = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
	assert vols["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "8Gi"}, vols
	PY
	# Its two pods as containers; rank 1 finds rank 0 by its pod DNS name.
	run /usr/bin/python3 "$AAH_ROOT/tests/docker/run_pods.py" "$AAH_DOCKER" "$WORK/job.json" "$U"
	echo "$output"
	cat "$WORK"/job.json.pod*.log
	[ "$status" -eq 0 ]
	acc=$(/usr/bin/python3 - "$E/trials/000001/result.json" <<-'PY'
	import json, sys
	r = json.load(open(sys.argv[1]))
	assert r["status"] == "succeeded" and r["world_size"] == 2, r
	print("%.2f%%" % (100 * r["best_val_acc"]))
	PY
	)
	# The runner reads the pods' result back from the shared tree: the
	# report's best trial is theirs (its FLOPs and accuracy).
	run "$AAH_DOCKER" run --rm --network host --user 1000:1000 -v "$U:/userhome" aah-master:cpu report "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"Best trial:            000001 (accuracy $acc; cpu, fp32)"* ]]
	[[ $output =~ Final\ Score:\ +[1-9][0-9.]*\ [MG]FLOPS ]]
	echo "# kubernetes on the engine: master Job stopped at kubectl (no API server); trial Job's 2 pods ran, report reads accuracy $acc" >&3
	[ "$(containers_of "$id")" -eq 0 ]
}
