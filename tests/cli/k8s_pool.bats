#!/usr/bin/env bats
# The device pool on Kubernetes: `pool.devices: quota` sizes the pool from
# the namespace's ResourceQuota on requests.nvidia.com/gpu, read with one
# `kubectl get resourcequota` before any trial joins the pool. NO Kubernetes
# API server runs here: kubectl is tests/fixtures/k8s/bin/kubectl replaying
# captured answers (each checked against the strict ResourceQuota schema by
# k8s_captures.bats), and the pods are stood in for by pod_sim.sh.

load helpers
load fake_kubectl

setup() { fake_kubectl_setup; }
teardown() { fake_kubectl_teardown; }

# pool_config FILE DEVICES [GPUS]: one trial of two pods (pool.maxDevices 2)
# in a pool of DEVICES ("quota" or a number), trial.gpuNum GPUS (1).
pool_config() {
	cat > "$1" <<-YML
	experimentName: k8s-test
	trainingServicePlatform: kubernetes
	workdir: $WORK/aah-work
	maxTrialNum: 1
	trial:
	  command: contract_trial.sh
	  gpuNum: ${3:-1}
	pool:
	  devices: $2
	  maxDevices: 2
	kubernetes:
	  mountPath: $WORK
	  claimName: aah-userhome
	  pollInterval: 0.05s
	  kubectlRetries: 1
	YML
}

# the answers of a two-pod trial that runs and succeeds
trial_succeeds() {
	answers create create-ok
	answers get-job jobs-pending jobs-running jobs-complete
	answers get-pod pods-succeeded
	answers logs logs-ok
	answers delete-service delete-ok
}

pool_line() { head -1 "$WORK/aah-work/pool/ledger.jsonl"; }

@test "no API server: the quota is a captured kubectl answer" {
	echo "# NO Kubernetes API server ran: kubectl is tests/fixtures/k8s/bin/kubectl replaying captured answers" >&3
	[ "$(command -v kubectl)" = "$K8S/bin/kubectl" ]
}

@test "pool.devices: quota: the pool is the smallest GPU quota of the namespace, read once before the trial" {
	pool_config c.yml quota
	answers get-resourcequota quota-two
	trial_succeeds
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(grep -E '^[a-z0-9]{8}$' <<<"$output")
	[[ $output == *"device pool: 6 devices (pool.devices: quota)"* ]]
	pool_line | grep -q '"event":"pool","devices":6[,}]'
	grep -q '"event":"applied","training":"'"$id"'/000001","devices":2[,}]' "$WORK/aah-work/pool/ledger.jsonl"
	# one read, in the experiment's namespace, before the Job was created
	[ "$(grep -c 'get resourcequota -o json' "$FAKE_KUBECTL_DIR/calls.log")" -eq 1 ]
	grep -q -- '--namespace=aah .*get resourcequota' "$FAKE_KUBECTL_DIR/calls.log"
	[ "$(grep -n 'get resourcequota' "$FAKE_KUBECTL_DIR/calls.log" | cut -d: -f1)" -lt \
	  "$(grep -n 'create -f -' "$FAKE_KUBECTL_DIR/calls.log" | cut -d: -f1)" ]
	grep '"event":"trial_finished"' "$WORK/aah-work/experiments/$id/journal.jsonl" | grep -q '"state":"succeeded"'
	run aah-runner status "$id" --workdir "$WORK/aah-work"
	echo "$output"
	[[ $output == *"device pool: 6 devices"* ]]
}

@test "pool.devices: quota where the namespace limits no GPUs: an error at the key, nothing created" {
	pool_config c.yml quota
	answers get-resourcequota quota-nogpu
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 2 ]
	line=$(grep -n 'devices: quota' c.yml | cut -d: -f1)
	[[ $output == *"c.yml:$line:"*"'pool.devices': quota: namespace 'aah' has no ResourceQuota on requests.nvidia.com/gpu"* ]]
	[ ! -d "$WORK/aah-work/experiments" ] || [ -z "$(ls "$WORK/aah-work/experiments")" ]
	! grep -q 'create -f -' "$FAKE_KUBECTL_DIR/calls.log"
	# kubectl that cannot answer: its own words, the key named
	answers get-resourcequota err-forbidden-list
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 2 ]
	[[ $output == *"'pool.devices': quota: kubectl get: forbidden in namespace 'aah'"* ]]
}

@test "pool.devices: quota is refused where no quota can be read, and without one GPU a rank" {
	pool_config c.yml quota 0
	run aah-runner check -c c.yml
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"'pool.devices' quota counts the namespace's GPUs: it needs trial.gpuNum 1"* ]]
	pool_config c.yml quota
	sed -i 's/^trainingServicePlatform: kubernetes/trainingServicePlatform: local/; /^kubernetes:/,$d' c.yml
	run aah-runner check -c c.yml
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"'pool.devices': quota is read from a cluster's GPU quota: the kubernetes backend only"* ]]
	pool_config c.yml quotas
	run aah-runner check -c c.yml
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"'pool.devices' must be an integer, 0 to 65536, or quota"* ]]
	pool_config c.yml quota
	run aah-runner check -c c.yml
	[ "$status" -eq 0 ]
	! grep -q 'resourcequota' "$FAKE_KUBECTL_DIR/calls.log" 2>/dev/null   # check reads no cluster
}

@test "a pool fixed by its first user keeps its size when the quota changes; a minimum above it is refused" {
	pool_config c.yml quota
	answers get-resourcequota quota-gpus
	trial_succeeds
	run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	pool_line | grep -q '"devices":8[,}]'
	answers get-resourcequota quota-two
	trial_succeeds
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"the cluster's quota is now 6 GPUs; the pool of $WORK/aah-work stays at the 8 its first user fixed"* ]]
	[ "$(grep -c '"event":"pool"' "$WORK/aah-work/pool/ledger.jsonl")" -eq 1 ]
	id=$(grep -E '^[a-z0-9]{8}$' <<<"$output")
	grep '"event":"trial_finished"' "$WORK/aah-work/experiments/$id/journal.jsonl" | grep -q '"state":"succeeded"'
	# pool.minDevices above what the quota gives
	rm -rf "$WORK/aah-work"
	sed -i 's/^  maxDevices: 2/  minDevices: 7/' c.yml
	answers get-resourcequota quota-two
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 2 ]
	[[ $output == *"'pool.minDevices': must not be above the pool's 6 devices (pool.devices: quota)"* ]]
}

@test "resume reads the quota again; create --no-run reads none" {
	pool_config c.yml quota
	run aah-runner create --no-run -c c.yml
	[ "$status" -eq 0 ]
	id=$(grep -E '^[a-z0-9]{8}$' <<<"$output")
	! grep -q 'resourcequota' "$FAKE_KUBECTL_DIR/calls.log" 2>/dev/null
	answers get-resourcequota quota-gpus
	trial_succeeds
	run aah-runner resume "$id" --workdir "$WORK/aah-work"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"device pool: 8 devices (pool.devices: quota)"* ]]
	[ "$(grep -c 'get resourcequota' "$FAKE_KUBECTL_DIR/calls.log")" -eq 1 ]
	pool_line | grep -q '"devices":8[,}]'
}

@test "a pool trial whose Job waits for admission: its devices are reserved, not counted as running" {
	pool_config c.yml 4
	printf '  queue: kueue\n  queueName: team-a\n' >> c.yml
	answers create create-ok
	answers get-job jobs-suspended
	aah-runner create -c c.yml > out.txt 2>&1 3>&- &
	BG_PID=$!
	wait_for grep -q '^[a-z0-9]\{8\}$' out.txt
	id=$(grep '^[a-z0-9]\{8\}$' out.txt)
	wait_for grep -qs "waiting for admission" "$WORK/aah-work/experiments/$id/trials/000001/waiting"
	run aah-runner status "$id" --workdir "$WORK/aah-work"
	echo "$output"
	[[ $output == *"$id/000001"*" 2        0, 2 reserved (0-1): waiting for admission"* ]]
	run aah-runner metrics "$id" --workdir "$WORK/aah-work"
	echo "$output"
	grep -q "^aah_pool_running_on{.*trial=\"000001\"} 0$" <<<"$output"
	grep -q "^aah_pool_devices{.*trial=\"000001\"} 2$" <<<"$output"
	# admitted: it runs on them, then completes
	answers get-job jobs-running jobs-running jobs-complete
	answers get-pod pods-succeeded
	answers logs logs-ok
	wait_for sh -c "! test -e '$WORK/aah-work/experiments/$id/trials/000001/waiting'"
	run aah-runner status "$id" --workdir "$WORK/aah-work"
	echo "$output"
	[[ $output != *"reserved"* ]]
	wait "$BG_PID"
	BG_PID=
	grep '"event":"trial_finished"' "$WORK/aah-work/experiments/$id/journal.jsonl" | grep -q '"state":"succeeded"'
}

@test "a pool trial's Job: a resize (every rank exits 85) ends each index by itself, any other exit fails the Job at once" {
	pool_config c.yml 8
	sed -i 's/^  command: contract_trial.sh/  command: contract_trial.sh\n  nodes: 2/' c.yml
	aah-runner render -c c.yml -o json > pool.json
	"$K8S/k8s_check.py" --quiet pool.json
	/usr/bin/python3 - pool.json <<-'PY'
	import json, sys
	job = next(d for d in json.load(open(sys.argv[1]))["items"] if d["kind"] == "Job")
	spec = job["spec"]
	assert spec["backoffLimitPerIndex"] == 0 and spec["maxFailedIndexes"] == spec["completions"] == 2, spec
	rules = spec["podFailurePolicy"]["rules"]
	assert rules[0]["action"] == "Ignore" and rules[0]["onPodConditions"][0]["type"] == "DisruptionTarget"
	assert rules[1] == {"action": "FailIndex", "onExitCodes": {"containerName": "trial", "operator": "In", "values": [85]}}, rules
	assert rules[2] == {"action": "FailJob", "onExitCodes": {"containerName": "trial", "operator": "NotIn", "values": [0, 85]}}, rules
	assert "--elastic" in spec["template"]["spec"]["containers"][0]["args"]
	PY
	# without a pool: the first failed index fails the Job, no exit-code rules
	pool_config c.yml 0
	aah-runner render -c c.yml -o json > plain.json
	/usr/bin/python3 - plain.json <<-'PY'
	import json, sys
	d = json.load(open(sys.argv[1]))   # one node: the Job alone, no Service
	spec = next(i for i in d.get("items", [d]) if i["kind"] == "Job")["spec"]
	assert spec["maxFailedIndexes"] == 0 and len(spec["podFailurePolicy"]["rules"]) == 1, spec
	PY
}
