#!/usr/bin/env bats
# What ships for a cluster: k8s/ manifests, the Dockerfile and the docker/
# entrypoints. NO Kubernetes API server runs here: the manifests are checked
# against the strict schemas + VALIDATION.md rules, the RBAC Role against the
# kubectl calls the runner really makes (through the fake kubectl), the
# Dockerfile statically (sources, stages, Makefile targets, users), and the
# entrypoints by running them with stand-ins. The CPU images are built and
# run on a real engine in docker_engine.bats and docker_master.bats; the
# CUDA stages (NVIDIA's base images, no registry here) only statically.

load helpers

K8S=$AAH_ROOT/tests/fixtures/k8s
CHECK=$K8S/k8s_check.py

setup() { setup_workdir; }
teardown() { teardown_workdir; }

@test "no Docker engine, no API server: the checks here are static or use stand-ins" {
	echo "# NO Kubernetes API server ran: manifests checked offline; Dockerfile statically here (CPU images built for real in docker_engine.bats)" >&3
	[ -f "$AAH_ROOT/Dockerfile" ]
}

@test "every k8s/ manifest passes the strict schemas and the semantic rules" {
	# kustomization.yaml is kustomize's own kind, not an API object (next test).
	files=$(ls "$AAH_ROOT"/k8s/*.yaml | grep -v kustomization.yaml)
	run "$CHECK" $files
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c 'valid (strict schema + semantic rules' <<<"$output")" -eq 4 ]
	[ "$(cat $files | grep -c '^kind:')" -eq 7 ]
	run "$CHECK" "$AAH_ROOT/k8s/kustomization.yaml"
	[ "$status" -eq 1 ]
	[[ $output == *"no strict schema for Kustomization"* ]]
}

@test "kubectl kustomize k8s/ builds documents that pass the checks (ConfigMap from config.yml)" {
	command -v /usr/bin/kubectl >/dev/null || skip "no kubectl binary here to run kustomize"
	/usr/bin/kubectl kustomize "$AAH_ROOT/k8s" > all.yaml
	"$CHECK" all.yaml
	/usr/bin/python3 - all.yaml <<-'EOF'
	import sys, yaml
	docs = list(yaml.safe_load_all(open(sys.argv[1])))
	kinds = sorted(d["kind"] for d in docs)
	assert kinds == ["ConfigMap", "Job", "Namespace", "PersistentVolume", "PersistentVolumeClaim",
	                 "Role", "RoleBinding", "ServiceAccount"], kinds
	cm = next(d for d in docs if d["kind"] == "ConfigMap")
	assert cm["metadata"]["name"] == "aah-config" and "config.yml" in cm["data"]
	job = next(d for d in docs if d["kind"] == "Job")
	vols = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
	assert vols["config"]["configMap"]["name"] == "aah-config"
	assert job["spec"]["template"]["spec"]["serviceAccountName"] == "aah-runner"
	for d in docs:
	    if d["kind"] != "PersistentVolume":
	        assert d["metadata"].get("namespace", "aah") == "aah", d["kind"]
	EOF
}

@test "the shipped config loads, and the trial Jobs it renders pass the checks" {
	aah-runner check "$AAH_ROOT/k8s/config.yml"
	aah-runner render -c "$AAH_ROOT/k8s/config.yml" > r.yaml
	"$CHECK" --quiet r.yaml
	grep -q 'claimName: aah-userhome' r.yaml
	/usr/bin/python3 -c 'import sys, yaml; assert any(d["kind"] == "PersistentVolumeClaim" and d["metadata"]["name"] == "aah-userhome" for d in yaml.safe_load_all(open(sys.argv[1])))' "$AAH_ROOT/k8s/userhome.yaml"
}

@test "the Role grants exactly the verbs of the kubectl calls the runner makes" {
	export FAKE_KUBECTL_DIR=$WORK/fake PATH="$K8S/bin:$PATH" FAKE_POD_RESULT=succeeded
	mkdir -p "$FAKE_KUBECTL_DIR/script"
	for run in create:direct apply:direct create:mpi apply:mpi; do
		mode=${run%:*}
		cat > c.yml <<-EOF
		experimentName: k8s-test
		trainingServicePlatform: kubernetes
		workdir: $WORK/aah-work
		maxTrialNum: 1
		trial:
		  command: contract_trial.sh
		  nodes: 2
		  gpuNum: 1
		  timeout: 1s
		  launcher: ${run#*:}
		pool:
		  devices: quota
		  maxDevices: 2
		kubernetes:
		  mountPath: $WORK
		  claimName: aah-userhome
		  pollInterval: 0.05s
		  submit: $mode
		EOF
		# runs past its timeout: submit, poll, cancel, then copy the logs
		echo quota-gpus > "$FAKE_KUBECTL_DIR/script/get-resourcequota"
		echo jobs-running > "$FAKE_KUBECTL_DIR/script/get-job"
		echo pods-succeeded > "$FAKE_KUBECTL_DIR/script/get-pod"
		aah-runner create -c c.yml >/dev/null
	done
	# API verbs per kubectl call (kubectl apply reads, then creates or patches
	# each kind it was given: the Job, Service and, for mpi, the key Secret;
	# kubectl logs reads the pod, then its log).
	/usr/bin/python3 - "$FAKE_KUBECTL_DIR" <<-'EOF' | sort -u > used.txt
	import json, re, sys
	d = sys.argv[1]
	res = {"Job": "batch/jobs", "Service": "core/services", "Secret": "core/secrets"}
	simple = {"get jobs -l": ["batch/jobs list"], "get pods -l": ["core/pods list"],
	          "logs ": ["core/pods get", "core/pods/log get"], "delete job ": ["batch/jobs delete"],
	          "delete service ": ["core/services delete"], "delete secret ": ["core/secrets delete"],
	          "get resourcequota": ["core/resourcequotas list"]}
	for n, line in enumerate(open(f"{d}/calls.log").read().splitlines(), 1):
	    line = re.sub(r"^(--\S* )*", "", line)
	    verb = line.split(" ")[0]
	    if line.startswith(("create -f -", "apply -f -")):
	        doc = json.load(open(f"{d}/stdin.{n}"))
	        for i in doc["items"] if doc.get("kind") == "List" else [doc]:
	            for v in ["create"] if verb == "create" else ["get", "create", "patch"]:
	                print(res[i["kind"]], v)
	    for prefix, verbs in simple.items():
	        if line.startswith(prefix):
	            print("\n".join(verbs))
	EOF
	/usr/bin/python3 - "$AAH_ROOT/k8s/rbac.yaml" <<-'EOF' | sort -u > granted.txt
	import sys, yaml
	role = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d["kind"] == "Role")
	for r in role["rules"]:
	    for g in r["apiGroups"]:
	        for res in r["resources"]:
	            for v in r["verbs"]:
	                print(f"{g or 'core'}/{res} {v}")
	EOF
	cat used.txt
	diff -u granted.txt used.txt
	[ "$(wc -l < used.txt)" -eq 17 ]
}

@test "Dockerfile: NVIDIA's tag form, stages trial and master, non-root, entrypoints from docker/" {
	df=$AAH_ROOT/Dockerfile
	grep -q '^ARG CUDA_VERSION=13\.0\.[0-9]*$' "$df"
	# BASE=cuda (the default): NVIDIA's images; BASE=cpu: Debian bookworm.
	grep -q '^ARG BASE=cuda$' "$df"
	grep -q '^FROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu${UBUNTU_VERSION} AS builder-cuda$' "$df"
	grep -q '^FROM nvidia/cuda:${CUDA_VERSION}-cudnn-runtime-ubuntu${UBUNTU_VERSION} AS trial-base-cuda$' "$df"
	grep -q '^FROM ubuntu:${UBUNTU_VERSION} AS master-base-cuda$' "$df"
	grep -q '^FROM ${DEBIAN_IMAGE} AS builder-cpu$' "$df"
	grep -q '^FROM builder-${BASE} AS builder$' "$df"
	grep -q '^FROM trial-base-${BASE} AS trial$' "$df"
	grep -q '^FROM master-base-${BASE} AS master$' "$df"
	grep -q '^ARG UBUNTU_VERSION=24.04$' "$df"
	# Stages used by COPY --from exist; the final stages drop root.
	for s in $(grep -o -- '--from=[a-z-]*' "$df" | cut -d= -f2 | sort -u); do
		grep -q " AS $s\$" "$df"
	done
	[ "$(awk '/^FROM .* AS (trial|master)$/ { s = 1 } s && /^USER 1000:1000$/ { n++; s = 0 } END { print n }' "$df")" -eq 2 ]
	# Each entrypoint is a docker/ script copied to exactly that path.
	while read -r path; do
		grep -q "^COPY docker/[a-z-]*\.sh $path\$" "$df"
	done < <(sed -n 's/^ENTRYPOINT \["\([^"]*\)"\]$/\1/p' "$df")
	[ "$(grep -c '^ENTRYPOINT' "$df")" -eq 2 ]
}

@test "Dockerfile: every COPY source exists in the build context and the build runs real Makefile targets" {
	df=$AAH_ROOT/Dockerfile
	cd "$AAH_ROOT"
	n=0
	while read -r -a words; do
		srcs=("${words[@]:1:${#words[@]}-2}")
		for s in "${srcs[@]}"; do
			[ -e "$s" ] || { echo "COPY source '$s' is missing"; false; }
			! grep -qx "${s%/}" .dockerignore
			n=$((n + 1))
		done
	done < <(grep '^COPY ' "$df" | grep -v -- '--from=')
	[ "$n" -ge 3 ]
	# The make targets the builder runs exist (make -n fails on an unknown one).
	# (a `make` that starts a command: after RUN or &&, not a package name)
	targets=$(grep -v '^#' "$df" | grep -oE '(^RUN|&&) +make [^&\\]*' | sed -E 's/^(RUN|&&) +//' |
		tr ' ' '\n' | grep -vE '^(make|-j.*|[A-Z_]+=.*)$' | sort -u)
	echo "$targets"
	[[ $targets == *all* ]] && [[ $targets == *install* ]]
	for t in $targets; do make -n "$t" >/dev/null; done
	# `make images` builds both targets.
	make -n images | grep -q -- 'docker build --target master'
	make -n images | grep -q -- 'docker build --target trial'
	# The kubectl download is checked against its published sha256.
	grep -q 'sha256sum -c' "$df"
}

@test "docker/ scripts pass shellcheck; collect-libs copies what the binaries need, not glibc" {
	shellcheck "$AAH_ROOT"/docker/*.sh
	"$AAH_ROOT/docker/collect-libs.sh" libs "$AAH_ROOT/$AAH_BUILD/aah-runner"
	ls libs | grep -q '^libyaml'
	ls libs | grep -q '^libcjson'
	! ls libs | grep -qE '^(libc|libm|ld-linux)\.'
	run "$AAH_ROOT/docker/collect-libs.sh" libs /nonexistent
	[ "$status" -eq 1 ]
}

@test "master entrypoint: create on first start, resume the same experiment after a restart" {
	mkdir bin
	cat > bin/aah-runner <<-'EOF'
	#!/bin/sh
	echo "$*" >> "$STUB_LOG"
	case $1 in create) echo abcdefgh ;; esac
	EOF
	chmod +x bin/aah-runner
	export STUB_LOG=$WORK/stub.log AAH_WORKDIR=$WORK/w PATH="$WORK/bin:$PATH"
	echo "trial: {command: x}" > cfg.yml
	run "$AAH_ROOT/docker/master-entrypoint.sh" cfg.yml
	[ "$status" -eq 0 ]
	[[ $output == *"created experiment abcdefgh"* ]]
	run "$AAH_ROOT/docker/master-entrypoint.sh" cfg.yml
	[[ $output == *"resuming experiment abcdefgh"* ]]
	[ "$(cat stub.log)" = "check cfg.yml
create -c cfg.yml --no-run --quiet
resume abcdefgh
check cfg.yml
resume abcdefgh" ]
	run "$AAH_ROOT/docker/master-entrypoint.sh" status abcdefgh
	[ "$(tail -1 stub.log)" = "status abcdefgh" ]
	run "$AAH_ROOT/docker/master-entrypoint.sh" missing.yml
	[ "$status" -eq 2 ]
}

@test "trial entrypoint: prints the contract and execs; device mode fans out and passes failures on" {
	run env -i PATH="$PATH" VC_TASK_INDEX=1 RANK_ID=1 MASTER_ADDR=h0 "$AAH_ROOT/docker/trial-entrypoint.sh" \
		sh -c 'echo "ran $0 $*"' a --rank 1
	[ "$status" -eq 0 ]
	[[ $output == *"aah-entrypoint: MASTER_ADDR=h0"* ]]
	[[ $output == *"aah-entrypoint: argv: sh -c"* ]]
	[[ ${lines[-1]} == "ran a --rank 1" ]]
	run env -i PATH="$PATH" VC_TASK_INDEX=1 AAH_PROCS_PER_POD=3 "$AAH_ROOT/docker/trial-entrypoint.sh" \
		sh -c 'echo "rank $RANK_ID dev $DEVICE_ID cvd $CUDA_VISIBLE_DEVICES args $*"; [ "$RANK_ID" != 4 ] || exit 5' x --rank '$(RANK_ID)' --k v
	echo "$output"
	[ "$status" -eq 5 ]
	[ "$(grep -c '^rank ' <<<"$output")" -eq 3 ]
	grep -qx 'rank 3 dev 0 cvd 0 args --rank 3 --k v' <<<"$output"
	grep -qx 'rank 5 dev 2 cvd 2 args --rank 5 --k v' <<<"$output"
	run env -i PATH="$PATH" "$AAH_ROOT/docker/trial-entrypoint.sh"
	[ "$status" -eq 2 ]
	run env -i PATH="$PATH" AAH_PROCS_PER_POD=x "$AAH_ROOT/docker/trial-entrypoint.sh" true
	[ "$status" -eq 2 ]
}

# image_refs_built PATH...: every aah-trial:/aah-master: reference under
# PATH (any registry in front; the deploy steps' $BASE stands for any base)
# must be an image `make images IMAGE_BASE=<base>` tags, for a base the
# Dockerfile has. Prints the bad ones as file:line:reference; 1 if any.
image_refs_built() {
	local bases built refs bad=0 r ref image
	bases=$(sed -n 's/^FROM .* AS builder-\([a-z0-9]*\)$/\1/p' "$AAH_ROOT/Dockerfile")
	built=$(for b in $bases; do make -C "$AAH_ROOT" -n images IMAGE_BASE="$b" | grep -o -- '-t [^ ]*' | cut -c4-; done |
		grep -E '^aah-(trial|master):' | sort -u)   # not cudalocal's toolkit image
	refs=$(grep -rnoE '[A-Za-z0-9./-]*aah-(trial|master):[A-Za-z0-9_.$-]+' "$@")
	N_REFS=$(wc -l <<<"$refs")
	N_BUILT=$(wc -l <<<"$built")
	while IFS= read -r r; do
		ref=${r#*:*:}
		image=${ref##*/}
		image=${image%.}
		case $image in *:\$BASE) image=${image%:*}:${bases%%$'\n'*} ;; esac
		grep -qx -- "$image" <<<"$built" || { echo "not built by make images: $r"; bad=1; }
	done <<<"$refs"
	return "$bad"
}

@test "every image reference in k8s/, examples/ and docs/ names an image make images builds" {
	cd "$AAH_ROOT"
	image_refs_built k8s examples docs README.md
	[ "$N_BUILT" -eq 4 ]       # aah-{trial,master}:{cpu,cuda}
	[ "$N_REFS" -ge 10 ]
	# The kubernetes.image default too: a config without the key renders it.
	printf 'trainingServicePlatform: kubernetes\nworkdir: /userhome/w\ntrial: {command: x}\nkubernetes: {claimName: c}\n' > "$WORK/d.yml"
	aah-runner render -c "$WORK/d.yml" | grep -q '^        image: "aah-trial:cuda"$'
}

@test "the image reference check fails on an image nothing builds" {
	cp -r "$AAH_ROOT/k8s" k8s
	sed -i 's/aah-trial:cuda/aah-trial:0.1.0/' k8s/config.yml
	run image_refs_built k8s
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == "not built by make images: k8s/config.yml:"*":aah-trial:0.1.0" ]]
}
