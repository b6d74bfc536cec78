#!/usr/bin/env bats
# trial.launcher: mpi on the kubernetes backend, offline: the rendered
# Secret (per-attempt ssh keys), headless Service and Indexed Job pass the
# strict schemas and the rules of tests/k8s-schema/VALIDATION.md (and of
# VALIDATION-added.md, K1-K6 and F7, for the Secret); the runner submits,
# cleans up and never shows the key, with a fake kubectl (tests/fixtures/k8s/bin/kubectl) replaying
# captured answers. NO Kubernetes API server runs here. The rendered pods
# run as containers on the real Docker engine in k8s_mpi_engine.bats.

load helpers
load mpi
load fake_kubectl

CHECK=$K8S/k8s_check.py

setup() { fake_kubectl_setup; }
teardown() { fake_kubectl_teardown; }

# mpi_k8s_config FILE [kubernetes lines...]: mpi.bash's 2-node trial on
# kubernetes (launcher: mpi on line 10); KUBECTL adds the fake's settings.
mpi_k8s_config() {
	local f=$1; shift
	mpi_config kubernetes "$f"
	sed -i "1s/.*/experimentName: k8s-test/" "$f"
	{
		echo "workdir: $WORK/aah-work"
		echo "kubernetes:"
		echo "  mountPath: $WORK"
		echo "  claimName: aah-userhome"
		if [ -n "${KUBECTL:-}" ]; then
			echo "  pollInterval: 0.05s"
			echo "  kubectlTimeout: 60s"
			echo "  kubectlRetries: 1"
		fi
		for line in "$@"; do echo "  $line"; done
	} >> "$f"
}

# secret_files DOCS DIR: the Secret's data, decoded, one file per key.
secret_files() {
	/usr/bin/python3 - "$1" "$2" <<-'PY'
	import base64, json, os, sys, yaml
	text = open(sys.argv[1]).read()
	if text.lstrip().startswith("{"):
	    d = json.loads(text)
	    docs = d["items"] if d.get("kind") == "List" else [d]
	else:
	    docs = list(yaml.safe_load_all(text))
	s = next(x for x in docs if x["kind"] == "Secret")
	os.makedirs(sys.argv[2], exist_ok=True)
	for k, v in s["data"].items():
	    open(os.path.join(sys.argv[2], k), "wb").write(base64.b64decode(v, validate=True))
	PY
}

@test "no API server: the documents are checked offline, kubectl is a fake" {
	echo "# NO Kubernetes API server ran: documents are checked against the strict schemas and VALIDATION.md rules; kubectl is tests/fixtures/k8s/bin/kubectl replaying captured answers" >&3
	[ -x "$CHECK" ]
}

@test "render: a Secret of fresh ssh keys, the Service and the Job pass the strict schemas and rules" {
	mpi_k8s_config c.yml
	aah-runner render -c c.yml > r.yaml
	aah-runner render -c c.yml -o json > r.json
	run "$CHECK" r.yaml r.json
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '3 document(s) valid (strict schema + semantic rules' <<<"$output")" -eq 2 ]
	# Secret first (the Job's pods mount it), then Service, then Job
	[ "$(grep '^kind: ' r.yaml | tr '\n' ' ')" = "kind: Secret kind: Service kind: Job " ]
	job=k8s-test-rendered-000001-1
	svc=$job
	/usr/bin/python3 - r.json "$job" <<-'PY'
	import json, sys
	docs = json.load(open(sys.argv[1]))["items"]
	job = sys.argv[2]
	secret, service, j = docs
	assert secret["metadata"]["name"] == f"{job}-ssh"
	assert secret["type"] == "Opaque"
	assert sorted(secret["data"]) == sorted(["id_ecdsa", "authorized_keys", "host_ecdsa_key",
	    "known_hosts", "config", "sshd_config", "hostfile"]), secret["data"].keys()
	labels = secret["metadata"]["labels"]
	assert labels["app.kubernetes.io/component"] == "mpi-ssh"
	assert labels["aah.io/trial"] == "000001" and labels["aah.io/attempt"] == "1"
	assert {"name": "ssh", "port": 2222, "targetPort": 2222, "protocol": "TCP"} in service["spec"]["ports"]
	spec = j["spec"]
	assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == 2
	ps = spec["template"]["spec"]
	assert ps["subdomain"] == job
	vol = next(v for v in ps["volumes"] if v["name"] == "mpi-ssh")
	assert vol == {"name": "mpi-ssh", "secret": {"secretName": f"{job}-ssh", "defaultMode": 0o400}}, vol
	c = ps["containers"][0]
	assert {"name": "mpi-ssh", "mountPath": "/etc/aah-mpi", "readOnly": True} in c["volumeMounts"]
	env = {e["name"]: e for e in c["env"]}
	assert env["AAH_MPI_ROLE"]["value"] == "pod"
	assert env["AAH_POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
	assert "completion-index" in env["AAH_MPI_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"]
	assert env["OMPI_MCA_plm_rsh_agent"]["value"] == "ssh -F /etc/aah-mpi/config"
	# the rank comes from mpirun: no per-pod rank names, every pod alike
	assert "RANK_ID" not in env and "VC_TASK_INDEX" not in env
	assert c["args"][0] == "mpirun" and c["args"][c["args"].index("-np") + 1] == "2"
	assert ps["securityContext"]["runAsNonRoot"] is True
	PY
	# what the pods read from the Secret
	secret_files r.yaml s
	ma0=aah-rendered-000001-worker-0.aah-rendered-000001
	ma1=aah-rendered-000001-worker-1.aah-rendered-000001
	# the contract's hostfile: ModelArts names, as on the other backends
	[ "$(cat s/hostfile)" = "$ma0 slots=1
$ma1 slots=1" ]
	# mpirun's ssh maps each ModelArts name to the pod's DNS name (headless Service)
	grep -A1 -x "Host $ma0" s/config | grep -qx "    HostName $job-0.$svc"
	grep -A1 -x "Host $ma1" s/config | grep -qx "    HostName $job-1.$svc"
	grep -qx '    Port 2222' s/config
	grep -qx '    StrictHostKeyChecking yes' s/config
	grep -qx '    IdentityFile /etc/aah-mpi/id_ecdsa' s/config
	# keys only, on the pod IP, port 2222, as the pod's non-root user
	grep -qx 'Port 2222' s/sshd_config
	grep -qx 'PasswordAuthentication no' s/sshd_config
	grep -qx 'PermitRootLogin no' s/sshd_config
	grep -qx 'HostKey /etc/aah-mpi/host_ecdsa_key' s/sshd_config
	# the key pairs match: the launcher's key is the authorized one, the
	# host key the known one (ssh-keygen reads the private keys back)
	chmod 600 s/id_ecdsa s/host_ecdsa_key
	id_pub=$(ssh-keygen -y -f s/id_ecdsa | cut -d' ' -f1,2)
	host_pub=$(ssh-keygen -y -f s/host_ecdsa_key | cut -d' ' -f1,2)
	[ "$(cut -d' ' -f1-3 s/authorized_keys)" = "restrict $id_pub" ]
	[ "$(cat s/known_hosts)" = "[$job-0.$svc]:2222 $host_pub
[$job-1.$svc]:2222 $host_pub" ]
	[ "$id_pub" != "$host_pub" ]
	# a fresh pair at every rendering: never a key of an earlier one
	secret_files r.json s2
	! cmp -s s/id_ecdsa s2/id_ecdsa
	! cmp -s s/host_ecdsa_key s2/host_ecdsa_key
}

@test "render: one node, GPUs and a custom sshPort keep the form; the launcher's devices stay its own" {
	mpi_k8s_config c.yml "sshPort: 30022"
	sed -i "s/^  nodes: 2$/  nodes: 1\\n  gpuNum: 2\\n  processMode: node/" c.yml
	aah-runner render -c c.yml -o json > r.json
	"$CHECK" r.json
	job=k8s-test-rendered-000001-1
	/usr/bin/python3 - r.json "$job" <<-'PY'
	import json, sys
	docs = json.load(open(sys.argv[1]))["items"]
	job = sys.argv[2]
	# one node: no Service; the pod's own hostname reaches its sshd
	assert [d["kind"] for d in docs] == ["Secret", "Job"], [d["kind"] for d in docs]
	c = docs[1]["spec"]["template"]["spec"]["containers"][0]
	assert c["resources"]["limits"]["nvidia.com/gpu"] == 2
	args = c["args"]
	# each pod's GPUs come from the device plugin: mpirun must not carry
	# the launcher's CUDA_VISIBLE_DEVICES to the other pods' ranks
	assert "CUDA_VISIBLE_DEVICES" not in args, args
	assert "CUDA_VISIBLE_DEVICES" not in {e["name"] for e in c["env"]}
	PY
	secret_files r.json s
	grep -A1 -x "Host aah-rendered-000001-worker-0.aah-rendered-000001" s/config | grep -qx "    HostName $job-0"
	grep -qx '    Port 30022' s/config
	grep -qx 'Port 30022' s/sshd_config
	grep -q "^\[$job-0\]:30022 ecdsa-sha2-nistp256 " s/known_hosts
}

@test "the checker rejects Secrets and secret volumes the API server or the kubelet would (so the checks can fail)" {
	mpi_k8s_config c.yml
	aah-runner render -c c.yml -o json > r.json
	"$CHECK" --quiet r.json
	for c in "K2|s['data']['a/b'] = 'eA=='" \
		"K2|s['data']['..x'] = 'eA=='" \
		"K3|s['data']['config'] = 'not base64!'" \
		"K3|s['data']['big'] = base64.b64encode(b'x' * (1024 * 1024)).decode()" \
		"K4|s['type'] = 'kubernetes.io/ssh-auth'" \
		"K5|vol['secret']['defaultMode'] = 0o1000" \
		"K5|vol['secret']['items'] = [{'key': 'config', 'path': '../config'}]" \
		"K6|vol['secret']['defaultMode'] = 0o644" \
		"F7|vol['secret']['secretName'] = 'other'" \
		"F7|vol['secret']['items'] = [{'key': 'nope', 'path': 'nope'}]" \
		"N1|s['metadata']['name'] = 'Bad_Name'" \
		"schema|s['stringdata'] = {}"; do
		rule=${c%%|*}
		/usr/bin/python3 - r.json bad.json "${c#*|}" <<-'PY'
		import base64, json, sys
		d = json.load(open(sys.argv[1]))
		s = d["items"][0]
		job = d["items"][2]
		vol = next(v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "mpi-ssh")
		exec(sys.argv[3])
		json.dump(d, open(sys.argv[2], "w"))
		PY
		run "$CHECK" bad.json
		echo "$rule: $output"
		[ "$status" -eq 1 ]
		[[ $output == *": $rule"* ]]
	done
}

@test "bad MPI config on kubernetes: clear errors naming the file, line and key" {
	mpi_k8s_config c.yml
	run aah-runner check c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	# the pods run as non-root users: sshd cannot listen below 1024
	mpi_k8s_config c.yml "sshPort: 22"
	run aah-runner check c.yml
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"c.yml:"[0-9]*":"[0-9]*": 'kubernetes.sshPort' must be between 1024 and 65535, got 22"* ]]
	run aah-runner render -c c.yml
	[ "$status" -ne 0 ]
	[[ $output == *"'kubernetes.sshPort' must be between 1024 and 65535"* ]]
	# one mpirun starts every rank: one process per pod (line 10: launcher)
	mpi_k8s_config c.yml
	sed -i 's/^  launcher: mpi$/  launcher: mpi\n  gpuNum: 2\n  processMode: device/' c.yml
	run aah-runner check c.yml
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"c.yml:10:"*"'trial.launcher' 'mpi' needs trial.processMode 'node'"* ]]
	run aah-runner render -c c.yml
	[ "$status" -ne 0 ]
	[[ $output == *"c.yml:10:"*"processMode 'node'"* ]]
}

@test "runner: Secret, Service and Job in one create, stale Secret deleted first, the Secret goes with the Job; the key is never shown" {
	export KUBECTL=1
	mpi_k8s_config c.yml
	answers create create-ok
	# the first answer is the look before the create: no Job of that name
	answers get-job jobs-empty jobs-running jobs-complete
	answers get-pod pods-succeeded
	answers logs logs-ok
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	job=k8s-test-$id-000001-1
	finished "$id" | grep -q '"state":"succeeded"'
	cat "$FAKE_KUBECTL_DIR/calls.log"
	# a leftover Secret of this name (no Job uses it) goes before the create
	del_stale=$(grep -n -- "delete secret $job-ssh --ignore-not-found$" "$FAKE_KUBECTL_DIR/calls.log" | cut -d: -f1)
	create=$(grep -n -- "create -f - -o name" "$FAKE_KUBECTL_DIR/calls.log" | cut -d: -f1)
	[ -n "$del_stale" ] && [ "$del_stale" -lt "$create" ]
	[ "$(ncalls "create -f -")" -eq 1 ]
	# the Secret goes with the Service once the Job is done
	del=$(grep -n -- "delete secret $job-ssh --ignore-not-found --wait=false" "$FAKE_KUBECTL_DIR/calls.log" | cut -d: -f1)
	[ -n "$del" ] && [ "$del" -gt "$create" ]
	grep -q "delete service $job --ignore-not-found --wait=false" "$FAKE_KUBECTL_DIR/calls.log"
	# the one create held Secret, Service and Job, which the pod stand-in
	# checked (schemas, rules) and read as the contract's mpirun
	stdin=$(ls "$FAKE_KUBECTL_DIR"/stdin.*)
	[ "$(jq -r '[.items[].kind] | join(" ")' "$stdin")" = "Secret Service Job" ]
	grep -q "$job: 2 MPI pods match the launch contract's mpirun and launch.json" "$FAKE_KUBECTL_DIR/sim.log"
	# the private key (a line of its PEM body) is in no file of the
	# experiment (journal, trial.log, launch.json), not in the runner's
	# output nor in status
	secret_files "$stdin" s
	key_line=$(sed -n 2p s/id_ecdsa)
	host_line=$(sed -n 2p s/host_ecdsa_key)
	[ ${#key_line} -ge 40 ]
	run aah-runner status "$id"
	echo "$output"
	for k in "$key_line" "$host_line"; do
		! grep -rqF -- "$k" "$WORK/aah-work"
		! grep -qF -- "$k" <<<"$output"
	done
	run aah-runner report "$id"
	! grep -qF -- "$key_line" <<<"$output"
}

@test "runner: a relaunch meets its predecessor's finished Job: Job, Service and Secret replaced, new keys created" {
	export KUBECTL=1
	mpi_k8s_config c.yml
	answers create err-exists create-ok
	# the look before the create finds the finished Job (its Secret is a
	# leftover: deleted), the create meets the Job, which is replaced
	answers get-job jobs-failed-backoff jobs-failed-backoff jobs-running jobs-complete
	answers get-pod pods-succeeded
	answers logs logs-ok
	answers delete-job delete-ok
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	job=k8s-test-$id-000001-1
	cat "$FAKE_KUBECTL_DIR/calls.log"
	[[ $output == *"Job $job: replaced the finished Job of the same name (failed)"* ]]
	[ "$(ncalls "create -f -")" -eq 2 ]
	first=$(grep -n -- "create -f -" "$FAKE_KUBECTL_DIR/calls.log" | head -1 | cut -d: -f1)
	second=$(grep -n -- "create -f -" "$FAKE_KUBECTL_DIR/calls.log" | tail -1 | cut -d: -f1)
	# between the two creates: the old Job, its Service and its Secret went
	sed -n "${first},${second}p" "$FAKE_KUBECTL_DIR/calls.log" > between
	grep -q "delete job $job --cascade=foreground --ignore-not-found --wait=true" between
	grep -q "delete service $job " between
	grep -q "delete secret $job-ssh " between
	finished "$id" | grep -q '"state":"succeeded"'
}

@test "runner: a canceled MPI trial takes its Secret along; a resumed runner deletes the Secret of the Job it re-attached to" {
	export KUBECTL=1
	mpi_k8s_config c.yml
	answers create create-ok
	answers get-job jobs-empty jobs-running
	aah-runner create -c c.yml > out.txt 2>&1 &
	BG_PID=$!
	polled() {
		grep -qs '"event":"trial_submitted"' "$WORK"/aah-work/experiments/*/journal.jsonl &&
			[ "$(ncalls 'get jobs')" -ge 3 ]
	}
	wait_for polled
	# the runner dies with the Job running (its Secret in use)
	kill -9 "$BG_PID"
	wait "$BG_PID" || true
	BG_PID=
	id=$(head -1 out.txt)
	job=k8s-test-$id-000001-1
	[ "$(ncalls "delete secret $job-ssh --ignore-not-found --wait=false")" -eq 0 ]
	# resumed: re-attaches (no second create, no new key), the Job
	# completes, its Secret goes
	answers get-job jobs-running jobs-complete
	answers get-pod pods-succeeded
	answers logs logs-ok
	run aah-runner resume "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(ncalls "create -f -")" -eq 1 ]
	[ "$(ncalls "delete secret $job-ssh --ignore-not-found --wait=false")" -eq 1 ]
	finished "$id" | grep -q '"state":"succeeded"'

	# stop while it runs: the Job is deleted, and its Secret with it
	rm -rf "$WORK/aah-work" "$FAKE_KUBECTL_DIR/calls.log"
	answers create create-ok
	answers get-job jobs-empty jobs-running
	aah-runner create -c c.yml > out.txt 2>&1 &
	BG_PID=$!
	wait_for polled
	id=$(head -1 out.txt)
	job=k8s-test-$id-000001-1
	run aah-runner stop "$id"
	echo "$output"
	wait "$BG_PID" || true
	BG_PID=
	cat "$FAKE_KUBECTL_DIR/calls.log"
	grep -q "delete job $job --cascade=foreground" "$FAKE_KUBECTL_DIR/calls.log"
	grep -q "delete secret $job-ssh --ignore-not-found --wait=false" "$FAKE_KUBECTL_DIR/calls.log"
}
