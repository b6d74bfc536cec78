#!/usr/bin/env bats
# `aah-runner render`: golden renders, and every rendered and shipped
# Kubernetes document checked offline against the strict JSON Schemas of
# tests/k8s-schema/ (Draft7Validator, unknown fields rejected) plus the
# semantic rules of tests/k8s-schema/VALIDATION.md. No API server runs here.
# Regenerate the goldens with AAH_UPDATE_GOLDEN=1 after a deliberate change.

load helpers

K8S=$AAH_ROOT/tests/fixtures/k8s
CHECK=$K8S/k8s_check.py

setup() { setup_workdir; }
teardown() { teardown_workdir; }

# The YAML with each Secret's data values (fresh keys at every render)
# replaced by a placeholder: what a golden can hold.
mask_secrets() {
	awk '/^kind: /{secret=($2 == "Secret")} /^[a-z]/{data=0} secret && data && /^  [-._a-zA-Z0-9]+: /{sub(/: .*/, ": <base64, made anew at every render>")} secret && /^data:$/{data=1} {print}'
}

# k8s_config FILE [trial lines...] -- [kubernetes lines...]
k8s_config() {
	local f=$1; shift
	{
		echo "experimentName: ${EXP_NAME:-k8s-test}"
		echo "trainingServicePlatform: kubernetes"
		echo "workdir: /userhome/aah-work"
		echo "trial:"
		echo "  command: aah-trial --dataset fashion"
		while [ $# -gt 0 ] && [ "$1" != -- ]; do echo "  $1"; shift; done
		[ $# -gt 0 ] && shift
		echo "kubernetes:"
		if [ $# -eq 0 ]; then echo "  claimName: aah-userhome"; fi
		for line in "$@"; do echo "  $line"; done
	} > "$f"
}

@test "no API server: every check here is offline (schemas + semantic rules)" {
	echo "# no Kubernetes API server ran: documents are checked against the strict schemas and VALIDATION.md rules only" >&3
	[ -x "$CHECK" ]
}

@test "golden renders: 1x1 NFS, 2x8 NFS, 2x8 PVC, per-device, MPI" {
	for c in "$K8S"/configs/*.yml; do
		n=$(basename "$c" .yml)
		run aah-runner render -c "$c"
		[ "$status" -eq 0 ]
		output=$(printf '%s\n' "$output" | mask_secrets)
		if [ -n "${AAH_UPDATE_GOLDEN:-}" ]; then printf '%s\n' "$output" > "$K8S/golden/$n.yaml"; fi
		diff -u "$K8S/golden/$n.yaml" <(printf '%s\n' "$output")
	done
	[ "$(ls "$K8S"/golden/*.yaml | wc -l)" -eq 8 ]
	# MPI: the key Secret first, its data masked in the golden (k8s_mpi.bats
	# checks the real values); the Job's pods mount it and run mpirun
	[ "$(grep '^kind: ' "$K8S/golden/mpi.yaml" | tr '\n' ' ')" = "kind: Secret kind: Service kind: Job " ]
	[ "$(grep -c ': <base64, made anew at every render>$' "$K8S/golden/mpi.yaml")" -eq 7 ]
	grep -qx '          secretName: aah-mpi-rendered-000001-1-ssh' "$K8S/golden/mpi.yaml"
	grep -q 'nvidia.com/gpu: 1$' "$K8S/golden/1node-1gpu.yaml"
	grep -q 'nvidia.com/gpu: 8$' "$K8S/golden/2nodes-8gpus.yaml"
	grep -q 'server: "10.20.0.5"' "$K8S/golden/2nodes-8gpus.yaml"
	grep -q 'claimName: aah-userhome' "$K8S/golden/pvc.yaml"
	! grep -q 'nfs:' "$K8S/golden/pvc.yaml"
	grep -q 'name: AAH_PROCS_PER_POD' "$K8S/golden/per-device.yaml"
	# A one-node trial needs no Service; multi-node ones get one.
	[ "$(grep -c '^kind: Service' "$K8S/golden/1node-1gpu.yaml")" -eq 0 ]
	[ "$(grep -c '^kind: Service' "$K8S/golden/2nodes-8gpus.yaml")" -eq 1 ]
}

@test "goldens and fresh renders (YAML and JSON) pass the strict schemas and semantic rules" {
	run "$CHECK" $(ls "$K8S"/golden/*.yaml | grep -v /mpi.yaml)
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c 'valid (strict schema' <<<"$output")" -eq 7 ]
	# the MPI golden's Secret holds placeholders, not base64: K3 says so
	run "$CHECK" "$K8S/golden/mpi.yaml"
	[ "$status" -eq 1 ]
	[[ $output == *"Secret aah-mpi-rendered-000001-1-ssh: K3: data[id_ecdsa] is not standard base64"* ]]
	for c in "$K8S"/configs/*.yml; do
		aah-runner render -c "$c" -o yaml > r.yaml
		aah-runner render -c "$c" -o json > r.json
		"$CHECK" --quiet r.yaml r.json
		# The YAML and the JSON are the same documents (but for the keys a
		# Secret gets anew at every render: the same names, fresh values).
		/usr/bin/python3 - r.yaml r.json <<-'EOF'
		import json, sys, yaml
		y = list(yaml.safe_load_all(open(sys.argv[1])))
		j = json.load(open(sys.argv[2]))
		j = j["items"] if j.get("kind") == "List" else [j]
		for d in y + j:
		    if d["kind"] == "Secret":
		        d["data"] = sorted(d["data"])
		sys.exit(0 if y == j else 1)
		EOF
	done
}

@test "the Job has the Indexed trial shape the issue asks for" {
	aah-runner render -c "$K8S/configs/2nodes-8gpus.yml" -o json > r.json
	/usr/bin/python3 - r.json <<-'EOF'
	import json, sys
	items = json.load(open(sys.argv[1]))["items"]
	svc, job = items
	assert svc["kind"] == "Service" and svc["spec"]["clusterIP"] == "None"
	name = job["metadata"]["name"]
	assert svc["metadata"]["name"] == name
	s = job["spec"]
	assert s["completionMode"] == "Indexed" and s["completions"] == s["parallelism"] == 2
	assert s["backoffLimit"] == 0 and s["activeDeadlineSeconds"] == 4 * 3600
	assert s["ttlSecondsAfterFinished"] == 7200
	assert s["podFailurePolicy"]["rules"] == [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
	p = s["template"]["spec"]
	assert p["restartPolicy"] == "Never" and p["subdomain"] == name
	assert p["securityContext"] == {"runAsNonRoot": True, "runAsUser": 2001, "runAsGroup": 2001, "fsGroup": 2001}
	assert p["priorityClassName"] == "aah-trials" and p["imagePullSecrets"] == [{"name": "regcred"}]
	assert p["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
	c = p["containers"][0]
	assert c["resources"]["limits"] == {"nvidia.com/gpu": 8, "cpu": "64", "memory": "512Gi"}
	assert c["imagePullPolicy"] == "Always"
	env = {e["name"]: e for e in c["env"]}
	idx = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
	for v in ("VC_TASK_INDEX", "VK_TASK_INDEX", "RANK_ID"):
	    assert env[v]["valueFrom"]["fieldRef"]["fieldPath"] == idx, v
	assert env["MASTER_ADDR"]["value"] == f"{name}-0.{name}"
	assert env["VC_WORKER_HOSTS"]["value"] == f"{name}-0.{name},{name}-1.{name}"
	assert env["NCCL_COMM_ID"]["value"] == f"{name}-0.{name}:29500"
	a = c["args"]
	assert a[a.index("--rank") + 1] == "$(RANK_ID)"
	for l in (job["metadata"]["labels"], p and s["template"]["metadata"]["labels"]):
	    assert l["aah.io/experiment"] == "rendered" and l["aah.io/trial"] == "000001"
	    assert l["app.kubernetes.io/name"] == "aah" and l["app.kubernetes.io/managed-by"] == "aah-runner"
	EOF
}

@test "the pod template gives every rank exactly its launch contract (kubelet expansion simulated)" {
	# Create a real experiment (no run), render for it, and compare what the
	# kubelet (and, per device, the entrypoint) would hand each rank with the
	# launch.json that launch_build writes for the same trial.
	for cfg in 2nodes-8gpus per-device; do
		sed 's#^workdir: .*#workdir: '"$WORK"'/aah-work#' "$K8S/configs/$cfg.yml" > c.yml
		echo "  mountPath: $WORK" >> c.yml   # the volume the pods would mount
		id=$(aah-runner create -c c.yml --no-run)
		aah-runner render --experiment "$id" --trial 3 -o json > r.json
		grep -q "\"aah.io/experiment\":[[:space:]]*\"$id\"" r.json
		run /usr/bin/python3 "$K8S/kubelet_sim.py" r.json
		echo "$output"
		[ "$status" -eq 0 ]
		[[ $output == *"ranks match"* ]]
	done
	# a later attempt's pods write into its own place (docs/formats.md)
	aah-runner render --experiment "$id" --trial 3 --attempt 2 -o json > r2.json
	/usr/bin/python3 - r2.json "$WORK/aah-work/experiments/$id/trials/000003" <<-'PY'
	import json, sys
	d = json.load(open(sys.argv[1]))
	job = next(i for i in d["items"] if i["kind"] == "Job")
	place = sys.argv[2] + "/attempt-2"
	assert job["metadata"]["annotations"]["aah.io/trial-dir"] == place, job["metadata"]
	env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
	assert env["AAH_TRIAL_DIR"] == place and env["RANK_TABLE_FILE"] == place + "/rank_table.json", env
	PY
}

@test "names stay valid DNS labels for any experimentName" {
	names=('AIPerf ImageNet #1' '123 starts with digits' '---' 'ÄÖÜ ünïcödé 名前' '$(rm -rf /)'
		"$(printf 'x%.0s' {1..300})" 'UPPER.case_with.dots' '"quoted" name' '-' '9')
	for n in "${names[@]}"; do
		EXP_NAME="'${n//\'/\'\'}'" k8s_config c.yml "nodes: 100" "gpuNum: 1"
		aah-runner render -c c.yml > r.yaml
		"$CHECK" --quiet r.yaml || { echo "failed for name '$n'"; cat r.yaml | head -30; false; }
		job=$(awk '/^  name:/ {print $2; exit}' r.yaml)
		[[ $job =~ ^[a-z]([-a-z0-9]*[a-z0-9])?$ ]]
		[ "${#job}" -le 59 ]   # N3: <job>-99 must stay a DNS-1123 label
	done
}

@test "the checker rejects what the API server would (so the checks above can fail)" {
	aah-runner render -c "$K8S/configs/2nodes-8gpus.yml" -o json > good.json
	"$CHECK" --quiet good.json
	mutate() {  # python expression on d (the Job) -> bad.json; expect a rule id in the output
		/usr/bin/python3 - "$1" <<-'EOF'
		import json, sys
		doc = json.load(open("good.json")); d = doc["items"][1]; s = doc["items"][0]
		exec(sys.argv[1])
		json.dump(doc, open("bad.json", "w"))
		EOF
		run "$CHECK" bad.json
		echo "$output"
		[ "$status" -eq 1 ]
		[[ $output == *"$2"* ]]
	}
	mutate 'd["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x"' "schema"
	mutate 'd["spec"]["backoffLimit"] = "zero"' "schema"
	mutate 'del d["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"]' "schema"
	mutate 'd["spec"]["template"]["spec"]["restartPolicy"] = "Always"' "J10"
	mutate 'd["metadata"]["name"] = "a" * 62' "N3"
	mutate 'd["metadata"]["labels"]["aah.io/experiment"] = "a/b"' "N8"
	mutate 's["metadata"]["name"] = "1" + s["metadata"]["name"][1:]' "N4"
	mutate 'd["spec"]["template"]["spec"]["subdomain"] = "other"' "F1"
	mutate 'd["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "500m"' "R3"
	mutate 'd["spec"]["template"]["spec"]["containers"][0]["env"][0]["name"] = "1BAD"' "E1"
	mutate 'd["spec"]["template"]["spec"]["volumes"][0]["nfs"]["path"] = "export"' "V3"
	mutate 'd["spec"]["completionMode"] = "indexed"' "J1"
}

@test "the schema copies are byte-identical to the sums in their README" {
	cd "$AAH_ROOT/tests/k8s-schema"
	n=0
	while read -r file sum; do
		echo "$sum  $file" | sha256sum -c --quiet -
		n=$((n + 1))
	done < <(awk -F'|' '/\.json \|/ {gsub(/ /, "", $2); gsub(/ /, "", $6); print $2, $6}' README.md)
	# every schema here has its row (the ten shared ones, Secret, ResourceQuota)
	[ "$n" -eq "$(ls -- *.json | wc -l)" ]
	[ "$n" -ge 12 ]
}

@test "GPU training pods: /dev/shm in memory, dataset volumes, GPU node selector and taint" {
	aah-runner render -c "$K8S/configs/gpu-pod.yml" -o json > r.json
	"$CHECK" --quiet r.json
	/usr/bin/python3 - r.json <<-'EOF'
	import json, sys
	job = json.load(open(sys.argv[1]))["items"][1]
	p = job["spec"]["template"]["spec"]
	c = p["containers"][0]
	vols = {v["name"]: v for v in p["volumes"]}
	mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
	assert vols["dshm"] == {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}}
	assert mounts["/dev/shm"] == {"name": "dshm", "mountPath": "/dev/shm"}
	assert vols["imagenet"]["hostPath"] == {"path": "/mnt/nvme/imagenet", "type": "Directory"}
	assert mounts["/data/imagenet"] == {"name": "imagenet", "mountPath": "/data/imagenet", "readOnly": True}
	assert vols["scratch"]["persistentVolumeClaim"] == {"claimName": "aah-scratch"}
	assert "readOnly" not in mounts["/scratch"]
	assert p["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
	assert p["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
	EOF
	# No GPUs: no GPU selector or toleration; shmSize 0: no /dev/shm volume.
	k8s_config c.yml -- "claimName: c" "shmSize: 0" "gpuProduct: NVIDIA-H100-80GB-HBM3"
	aah-runner render -c c.yml -o json > r.json
	/usr/bin/python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["spec"]["template"]["spec"]; assert "nodeSelector" not in p and "tolerations" not in p and [v["name"] for v in p["volumes"]] == ["userhome"], p' r.json
	# The checker refuses what the API server would (V5).
	/usr/bin/python3 - r.json <<-'EOF'
	import json, sys
	d = json.load(open(sys.argv[1]))
	d["spec"]["template"]["spec"]["volumes"] += [{"name": "a", "hostPath": {"path": "/x/../y"}},
	                                             {"name": "b", "emptyDir": {"medium": "Memory", "sizeLimit": "lots"}}]
	json.dump(d, open(sys.argv[1], "w"))
	EOF
	run "$CHECK" r.json
	[ "$status" -eq 1 ]
	[ "$(grep -c 'V5' <<<"$output")" -eq 2 ]
}

@test "queues: Kueue (queue label, priority class, suspended), Volcano (scheduler, queue, gang), per-index limits" {
	aah-runner render -c "$K8S/configs/kueue.yml" -o json > k.json
	aah-runner render -c "$K8S/configs/volcano.yml" -o json > v.json
	"$CHECK" --quiet k.json v.json
	/usr/bin/python3 - k.json v.json <<-'EOF'
	import json, sys
	k = json.load(open(sys.argv[1]))["items"][1]
	v = json.load(open(sys.argv[2]))["items"][1]
	# Kueue: pool.priority 7000 takes aah-normal (5000 <= 7000 < 9000).
	assert k["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
	assert k["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "aah-normal"
	assert k["spec"]["suspend"] is True
	assert "schedulerName" not in k["spec"]["template"]["spec"]
	# Volcano: every one of the 4 pods or none.
	assert v["metadata"]["annotations"]["scheduling.volcano.sh/group-min-member"] == "4"
	assert v["spec"]["template"]["metadata"]["annotations"] == {"scheduling.volcano.sh/queue-name": "research"}
	ps = v["spec"]["template"]["spec"]
	assert ps["schedulerName"] == "volcano" and ps["priorityClassName"] == "aah-batch"
	assert "suspend" not in v["spec"] and "kueue.x-k8s.io/queue-name" not in v["metadata"]["labels"]
	for j in (k, v):
	    s = j["spec"]
	    assert s["backoffLimit"] == 0 and s["backoffLimitPerIndex"] == 0 and s["maxFailedIndexes"] == 0
	    env = {e["name"]: e for e in s["template"]["spec"]["containers"][0]["env"]}
	    assert env["AAH_INDEX_PREEMPTIONS"]["valueFrom"]["fieldRef"]["fieldPath"] == \
	        "metadata.annotations['batch.kubernetes.io/job-index-ignored-failure-count']"
	    assert env["AAH_RESUME_ON_REPLACE"]["value"] == "1"
	EOF
	# No queue: none of it.
	aah-runner render -c "$K8S/configs/pvc.yml" -o json > p.json
	! grep -q 'kueue\|volcano\|"suspend"' p.json
	# maxFailedIndexes beyond completions is what the API server refuses (J18).
	/usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["items"][1]["spec"]["maxFailedIndexes"] = 3; json.dump(d, open(sys.argv[1], "w"))' k.json
	run "$CHECK" k.json
	[ "$status" -eq 1 ]
	[[ $output == *J18* ]]
}

@test "kubernetes section errors name the file, line and key" {
	# Each case: config lines joined by '|', then ' => ' and the message.
	for c in "shmSize: lots => 'kubernetes.shmSize' must be a size" \
		"memory: 8Gi|shmSize: 16Gi => 'kubernetes.shmSize' is larger than kubernetes.memory" \
		"gpuTaint: a/b/c => 'kubernetes.gpuTaint' must be a taint key" \
		"volumes: {a: b} => 'kubernetes.volumes' must be a list" \
		"volumes: [{name: d, hostPath: /d, claimName: e, mountPath: /d}] => exactly one of hostPath and claimName" \
		"volumes: [{name: d, hostPath: /x/../d, mountPath: /d}] => hostPath must be an absolute path without . or .." \
		"volumes: [{name: userhome, hostPath: /d, mountPath: /d}] => other than userhome and dshm" \
		"volumes: [{name: d, hostPath: /d, mountPath: /dev/shm}] => mountPath is already" \
		"volumes: [{name: d, hostPath: /d, mountPath: /d}, {name: e, claimName: e, mountPath: /d}] => at the same mountPath" \
		"volumes: [{name: d, hostPath: /d, mountPath: /d, readOnly: yes}] => readOnly must be true or false" \
		"volumes: [{name: d, hostPath: /d, mountPath: /d, subPath: x}] => entries take name, hostPath" \
		"queue: kueue => 'kubernetes.queueName' is needed with queue: kueue" \
		"queueName: q => 'kubernetes.queueName' needs kubernetes.queue kueue or volcano" \
		"queue: volcano|queueName: Bad_Q => 'kubernetes.queueName' must be a queue name" \
		"queue: kueue|queueName: q|priorityClasses: [a] => 'kubernetes.priorityClasses' must be a mapping" \
		"queue: kueue|queueName: q|priorityClasses: {hi: 0} => values are the lowest pool.priority" \
		"queue: slurm => 'kubernetes.queue' has an unknown value 'slurm'"; do
		IFS='|' read -r -a lines <<<"${c%% => *}"
		want=${c#* => }
		k8s_config c.yml -- "claimName: c" "${lines[@]}"
		run aah-runner check c.yml
		echo "$output"
		[ "$status" -ne 0 ]
		[[ $output == *"c.yml:"[0-9]*"$want"* ]]
	done

	k8s_config c.yml -- "namespace: Bad_NS"
	run aah-runner render -c c.yml
	[ "$status" -eq 1 ]
	[[ $output == *"c.yml:"*"'kubernetes.namespace' must be a DNS-1123 label"* ]]

	k8s_config c.yml -- "image: x"
	run aah-runner render -c c.yml
	[ "$status" -eq 1 ]
	[[ $output == *"needs exactly one /userhome source"* ]]

	k8s_config c.yml -- "nfsServer: n" "nfsPath: /x" "claimName: c"
	run aah-runner render -c c.yml
	[ "$status" -eq 1 ]
	[[ $output == *"exactly one /userhome source"* ]]

	k8s_config c.yml -- "claimName: c" "tolerations:" "- key: a" "  operator: Exists" "  value: b"
	run aah-runner render -c c.yml
	[ "$status" -eq 1 ]
	[[ $output == *"'kubernetes.tolerations' with operator Exists takes no value"* ]]

	k8s_config c.yml -- "claimName: c" "imagePullPolicy: Sometimes"
	run aah-runner render -c c.yml
	[ "$status" -eq 2 ]
	[[ $output == *"'kubernetes.imagePullPolicy' has an unknown value 'Sometimes'"* ]]

	k8s_config c.yml -- "claimName: c" "nodeSelektor: {}"
	run aah-runner check c.yml
	[ "$status" -eq 2 ]   # a config error, as create (issue 13)
	[[ $output == *"did you mean 'nodeSelector'"* ]]

	run aah-runner render -c "$K8S/configs/pvc.yml" -o xml
	[ "$status" -eq 2 ]
}

@test "the shipped ImageNet Kubernetes config renders documents that pass every check" {
	run aah-runner render -c "$AAH_ROOT/examples/imagenet-kubernetes.yml" --trial 3 -o yaml
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" > rendered.yaml
	grep -q 'nvidia.com/gpu' rendered.yaml
	run /usr/bin/python3 "$CHECK" rendered.yaml
	echo "$output"
	[ "$status" -eq 0 ]
}
