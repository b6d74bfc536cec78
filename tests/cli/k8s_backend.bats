#!/usr/bin/env bats
# The kubernetes backend end to end through `aah-runner create`/`resume`,
# with a fake kubectl on PATH (tests/fixtures/k8s/bin/kubectl) that records
# every call and replays captured kubectl answers (tests/fixtures/k8s/kubectl/,
# each JSON answer valid against the strict schemas, see k8s_captures.bats).
# NO Kubernetes API server runs here: the pods are stood in for by
# tests/fixtures/k8s/pod_sim.sh, which checks the submitted documents and
# the contract each rank would get, and writes result.json like rank 0.

load helpers
load fake_kubectl

setup() { fake_kubectl_setup; }
teardown() { fake_kubectl_teardown; }

# k8s_config FILE [top-level lines...]; KUBE_YAML adds kubernetes lines.
# KUBECTL_TIMEOUT (60s) limits each kubectl call: generous, because the fake
# kubectl is a shell script (its create runs the pod stand-in's Python
# checks) that is merely slow on a loaded machine, never hung; the one case
# that must time out (err-timeout) blocks until told instead.
k8s_config() {
	local f=$1; shift
	{
		echo "experimentName: k8s-test"
		echo "trainingServicePlatform: kubernetes"
		echo "workdir: $WORK/aah-work"
		echo "maxTrialNum: 1"
		for line in "$@"; do echo "$line"; done
		echo "trial:"
		echo "  command: contract_trial.sh"
		echo "  nodes: 2"
		echo "  gpuNum: 1"
		if [ -n "${TRIAL_YAML:-}" ]; then printf "%s\n" "$TRIAL_YAML"; fi
		echo "kubernetes:"
		echo "  mountPath: $WORK"
		echo "  claimName: aah-userhome"
		echo "  pollInterval: 0.05s"
		echo "  kubectlTimeout: ${KUBECTL_TIMEOUT:-60s}"
		echo "  kubectlRetries: 1"
		if [ -n "${KUBE_YAML:-}" ]; then printf "%s\n" "$KUBE_YAML"; fi
	} > "$f"
}


@test "no API server: kubectl is a fake that replays captured answers" {
	echo "# NO Kubernetes API server ran: kubectl is tests/fixtures/k8s/bin/kubectl replaying captured answers" >&3
	[ "$(command -v kubectl)" = "$K8S/bin/kubectl" ]
}

@test "submit, run, succeed: create, poll with the label selector, copy pod logs, delete the Service" {
	k8s_config c.yml
	answers create create-ok
	answers get-job jobs-pending jobs-running jobs-running jobs-complete
	answers get-pod pods-succeeded
	answers logs logs-ok
	answers delete-service delete-ok
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	job=k8s-test-$id-000001-1
	finished "$id" | grep -q '"state":"succeeded"'
	grep -q "\"event\":\"trial_submitted\".*\"backend\":\"kubernetes\",\"job\":\"$job\"" "$WORK/aah-work/experiments/$id/journal.jsonl"
	calls
	[ "$(ncalls "create -f - -o name")" -eq 1 ]
	grep -q -- "--namespace=aah --request-timeout=60s create -f - -o name" "$FAKE_KUBECTL_DIR/calls.log"
	[ "$(ncalls "get jobs -l aah.io/experiment=$id -o json")" -ge 4 ]
	grep -q "get pods -l batch.kubernetes.io/job-name=$job -o json" "$FAKE_KUBECTL_DIR/calls.log"
	# Logs in completion-index order although the pod list is not.
	[ "$(grep -o "logs $job-[01]-[a-z0-9]* -c trial" "$FAKE_KUBECTL_DIR/calls.log" | sed 's/.*-000001-1-\([01]\)-.*/\1/' | tr '\n' ' ')" = "0 1 " ]
	grep -q "delete service $job --ignore-not-found --wait=false" "$FAKE_KUBECTL_DIR/calls.log"
	! grep -q "delete job" "$FAKE_KUBECTL_DIR/calls.log"
	log=$WORK/aah-work/experiments/$id/trials/000001/trial.log
	grep -q "==> kubernetes pod $job-0-x7k2p (Succeeded) <==" "$log"
	[ "$(grep -c 'aah-trial: epoch 1/1 val_acc 0.8000' "$log")" -eq 2 ]
	# The pod stand-in checked the submitted documents and both ranks' contract.
	grep -q "$job: 2 ranks match the launch contract and launch.json" "$FAKE_KUBECTL_DIR/sim.log"
	/usr/bin/python3 "$K8S/k8s_check.py" "$FAKE_KUBECTL_DIR"/stdin.*
}

@test "a failed Job fails the trial with the Job's reason and the pod's exit status" {
	for c in jobs-failed-backoff:BackoffLimitExceeded:failed \
		jobs-failed-podfailurepolicy:PodFailurePolicy:failed \
		jobs-failed-deadline:DeadlineExceeded:timed; do
		IFS=: read -r name reason word <<<"$c"
		rm -rf "$WORK/aah-work" "$FAKE_KUBECTL_DIR"/calls.log
		k8s_config c.yml
		answers create create-ok
		answers get-job jobs-running "$name"
		answers get-pod pods-failed
		FAKE_POD_RESULT= run aah-runner create -c c.yml
		[ "$status" -eq 0 ]
		id=${lines[0]}
		f=$(finished "$id")
		echo "$f"
		[[ $f == *'"state":"failed"'* ]]
		[[ $f == *"$reason"* ]]
		[[ $f == *'"exit_code":7'* ]]
		[[ $f == *"pod k8s-test-$id-000001-1-0-x7k2p: container exited with status 7 (Error)"* ]]
		if [ "$word" = timed ]; then [[ $f == *'"reason":"timed out: Job passed its activeDeadlineSeconds'* ]]; fi
	done
}

@test "pods pending too long: the Job is deleted and the trial fails with the scheduler's words" {
	for c in pods-pending:"not scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu." \
		pods-imagepull:"ImagePullBackOff: Back-off pulling image"; do
		pods=${c%%:*} why=${c#*:}
		rm -rf "$WORK/aah-work" "$FAKE_KUBECTL_DIR"/calls.log
		KUBE_YAML="  pendingTimeout: 0.3s" k8s_config c.yml
		answers create create-ok
		answers get-job jobs-pending
		answers get-pod "$pods"
		run aah-runner create -c c.yml
		[ "$status" -eq 0 ]
		id=${lines[0]}
		f=$(finished "$id")
		echo "$f"
		[[ $f == *'"state":"failed"'*"pods not running after 0.3s (0 of 2 ready): pod k8s-test-$id-000001-1-0-x7k2p: $why"* ]]
		grep -q "delete job k8s-test-$id-000001-1 --cascade=foreground --ignore-not-found --wait=false" "$FAKE_KUBECTL_DIR/calls.log"
	done
}

@test "cancel (budget spent, trial timeout): foreground delete of the Job and its Service" {
	# The pods write no result.json: a result on disk would win over the
	# cancel (issue 13), and this case is about a trial still running.
	k8s_config c.yml "maxExecDuration: 1s"
	answers create create-ok
	answers get-job jobs-running
	answers delete-job delete-ok
	FAKE_POD_RESULT= run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=${lines[0]}
	job=k8s-test-$id-000001-1
	finished "$id" | grep -q '"state":"canceled".*"reason":"experiment budget (maxExecDuration) reached"'
	grep -q "delete job $job --cascade=foreground --ignore-not-found --wait=false" "$FAKE_KUBECTL_DIR/calls.log"
	grep -q "delete service $job --ignore-not-found --wait=false" "$FAKE_KUBECTL_DIR/calls.log"

	rm -rf "$WORK/aah-work" "$FAKE_KUBECTL_DIR/calls.log"
	TRIAL_YAML="  timeout: 1s" k8s_config c.yml
	FAKE_POD_RESULT= run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=${lines[0]}
	finished "$id" | grep -q '"state":"failed".*"reason":"timed out: over the trial timeout of 1s"'
	grep -q "delete job k8s-test-$id-000001-1 --cascade=foreground" "$FAKE_KUBECTL_DIR/calls.log"
	# The Job carries the same deadline for the cluster to enforce.
	grep -q '"activeDeadlineSeconds":[[:space:]]*1' "$FAKE_KUBECTL_DIR"/stdin.*
}

@test "kubectl errors at submit: clear messages, transient ones retried, the journal stays whole" {
	for c in err-forbidden:1:"forbidden in namespace 'aah'"*"k8s/rbac.yaml" \
		err-notfound:1:'namespaces "aah" not found' \
		err-exists:1:"already exists in namespace 'aah'"*"delete it with 'kubectl -n aah delete job,service" \
		err-unreachable:2:"was refused - did you specify the right host or port?"; do
		IFS=: read -r errcase tries msg <<<"$c"
		rm -rf "$WORK/aah-work" "$FAKE_KUBECTL_DIR"/calls.log
		k8s_config c.yml
		answers create "$errcase"
		run aah-runner create -c c.yml
		echo "$output"
		[ "$status" -eq 0 ]
		id=${lines[0]}
		[ "$(ncalls "create -f -")" -eq "$tries" ]    # kubectlRetries: 1 for transient only
		# shellcheck disable=SC2053
		[[ $output == *$msg* ]]
		j=$WORK/aah-work/experiments/$id/journal.jsonl
		/usr/bin/python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$j"
		[ "$(grep -c '"event":"trial_submitted"' "$j")" -eq 1 ]
		finished "$id" | grep -q '"state":"failed".*"reason":"could not be started: '
		grep -q '"event":"experiment_done"' "$j"
	done
}

@test "kubectl errors while polling: unreachable, timeout, forbidden are retried with backoff" {
	# err-timeout blocks until told (never, here): the runner must kill it
	# at kubectlTimeout (the run then goes on and succeeds), or `timeout`
	# fails the test loudly.
	KUBECTL_TIMEOUT=15s k8s_config c.yml
	answers create create-ok
	answers get-job err-unreachable err-timeout err-forbidden-list jobs-complete
	answers get-pod pods-succeeded
	answers logs logs-ok
	run timeout 300 aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	[[ $output == *"was refused"* ]]
	[[ $output == *"kubectl get: no answer within 15s (API server unreachable or slow)"* ]]
	[[ $output == *"kubectl get: forbidden in namespace 'aah'"* ]]
	[[ $output == *"cannot query job 'k8s-test-$id-000001-1'; will try again"* ]]
	finished "$id" | grep -q '"state":"succeeded"'
	[ "$(finished "$id" | wc -l)" -eq 1 ]
}

@test "a Complete Job waits (resultWait) for result.json to show through NFS" {
	k8s_config c.yml
	answers create create-ok
	answers get-job jobs-complete
	answers get-pod pods-succeeded
	FAKE_POD_RESULT_DELAY=0.8 run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=${lines[0]}
	finished "$id" | grep -q '"state":"succeeded"'

	rm -rf "$WORK/aah-work"
	KUBE_YAML="  resultWait: 0.3s" k8s_config c.yml
	FAKE_POD_RESULT= run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=${lines[0]}
	finished "$id" | grep -q '"state":"failed".*"reason":"no valid result.json in '
}

@test "a Job that disappears is lost; one deleted by someone else is canceled" {
	k8s_config c.yml
	answers create create-ok
	answers get-job jobs-running jobs-empty
	FAKE_POD_RESULT= run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=${lines[0]}
	finished "$id" | grep -q "\"state\":\"failed\".*Job k8s-test-$id-000001-1 is gone from namespace aah"

	# Deleted by someone else (kubectl delete --cascade=foreground): canceled.
	rm -rf "$WORK/aah-work"
	answers get-job jobs-running jobs-deleting
	FAKE_POD_RESULT= run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=${lines[0]}
	finished "$id" | grep -q '"state":"canceled".*"reason":"the Job is being deleted"'
}

@test "namespace, context and kubeconfig reach every kubectl call; KUBECONFIG is inherited" {
	KUBE_YAML=$'  namespace: team-x\n  context: lab-a\n  kubeconfig: /etc/aah/kubeconfig' k8s_config c.yml
	answers create create-ok
	answers get-job jobs-complete
	KUBECONFIG=/home/u/.kube/other run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	n=$(wc -l < "$FAKE_KUBECTL_DIR/calls.log")
	[ "$n" -ge 3 ]
	[ "$(grep -c -- '^--kubeconfig=/etc/aah/kubeconfig --context=lab-a --namespace=team-x --request-timeout=60s ' "$FAKE_KUBECTL_DIR/calls.log")" -eq "$n" ]
	[ "$(grep -c '^/home/u/.kube/other$' "$FAKE_KUBECTL_DIR/kubeconfig.log")" -eq "$n" ]
	grep -q '"namespace":[[:space:]]*"team-x"' "$FAKE_KUBECTL_DIR"/stdin.*
}

@test "resume re-attaches to a Job that is still running (no second create)" {
	k8s_config c.yml
	answers create create-ok
	answers get-job jobs-running
	aah-runner create -c c.yml > out.txt 2>&1 &
	pid=$!
	polled() {
		grep -qs '"event":"trial_submitted"' "$WORK"/aah-work/experiments/*/journal.jsonl &&
			[ "$(ncalls 'get jobs')" -ge 2 ]
	}
	wait_for polled
	kill -9 "$pid"
	wait "$pid" || true
	id=$(head -1 out.txt)
	[ "$(ncalls "create -f -")" -eq 1 ]
	# The Job goes on on the cluster, then completes.
	answers get-job jobs-running jobs-complete
	answers get-pod pods-succeeded
	answers logs logs-ok
	run aah-runner resume "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(ncalls "create -f -")" -eq 1 ]
	finished "$id" | grep -q '"state":"succeeded"'
	j=$WORK/aah-work/experiments/$id/journal.jsonl
	[ "$(grep -c '"event":"runner_started"' "$j")" -eq 2 ]
	[ "$(grep -c '"event":"trial_submitted"' "$j")" -eq 1 ]
	grep -q "==> kubernetes pod k8s-test-$id-000001-1-1-m4q9z (Succeeded) <==" \
		"$WORK/aah-work/experiments/$id/trials/000001/trial.log"
}

@test "Kueue: a suspended Job is waiting for admission, not pending too long; the runner never unsuspends it" {
	# pendingTimeout 0.01s is shorter than one poll interval: without the
	# pending clock starting at admission, the second suspended listing
	# would fail the trial.
	KUBE_YAML=$'  queue: kueue\n  queueName: team-a\n  pendingTimeout: 0.01s' k8s_config c.yml
	answers create create-ok
	answers get-job jobs-suspended jobs-suspended jobs-suspended jobs-running jobs-complete
	answers get-pod pods-succeeded
	answers logs logs-ok
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	[[ $output == *"Job k8s-test-$id-000001-1: waiting for admission: the Job is suspended until its queue (team-a) admits it"* ]]
	finished "$id" | grep -q '"state":"succeeded"'
	calls
	! grep -qE '^(--[^ ]* )*(patch|edit|replace|resume)' "$FAKE_KUBECTL_DIR/calls.log"
	! grep -q "delete job" "$FAKE_KUBECTL_DIR/calls.log"
	grep -q '"kueue.x-k8s.io/queue-name":[[:space:]]*"team-a"' "$FAKE_KUBECTL_DIR"/stdin.*
	grep -q '"suspend":[[:space:]]*true' "$FAKE_KUBECTL_DIR"/stdin.*
}

@test "no gang scheduler: pods partly running past gangTimeout free the trial; under Volcano they are its business" {
	KUBE_YAML="  gangTimeout: 0.01s" k8s_config c.yml
	answers create create-ok
	answers get-job jobs-partial
	answers get-pod pods-pending
	FAKE_POD_RESULT= run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	f=$(finished "$id")
	echo "$f"
	[[ $f == *'"state":"failed"'*"freed after 0.01s with its pods partly running (1 of 2 ready; kubernetes.gangTimeout): pod k8s-test-$id-000001-1-0-x7k2p: not scheduled"* ]]
	grep -q "delete job k8s-test-$id-000001-1 --cascade=foreground" "$FAKE_KUBECTL_DIR/calls.log"

	rm -rf "$WORK/aah-work" "$FAKE_KUBECTL_DIR/calls.log"
	KUBE_YAML=$'  gangTimeout: 0.01s\n  queue: volcano' k8s_config c.yml
	answers get-job jobs-partial jobs-partial jobs-partial jobs-running jobs-complete
	answers get-pod pods-succeeded
	run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=${lines[0]}
	finished "$id" | grep -q '"state":"succeeded"'
	! grep -q "delete job" "$FAKE_KUBECTL_DIR/calls.log"
	grep -q '"schedulerName":[[:space:]]*"volcano"' "$FAKE_KUBECTL_DIR"/stdin.*
}

@test "a preempted pod: its replacement resumes from the checkpoint, no retry is charged, no epoch runs twice" {
	# The kubectl answers replay a one-pod Job whose pod is preempted
	# (DisruptionTarget, ignored by the podFailurePolicy) and replaced by the
	# Job controller; the pods themselves run for real (preempt_sim.sh: the
	# trial entrypoint with each pod's env and args, the real aah-trial on a
	# slice of Fashion-MNIST, the first pod SIGKILLed after its first
	# checkpoint, the replacement annotated with one ignored failure).
	# NO API server: the Job controller's part is the replayed answers.
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]
	rm "$FAKE_KUBECTL_DIR/on-create"
	ln -s "$K8S/preempt_sim.sh" "$FAKE_KUBECTL_DIR/on-create"
	cat > c.yml <<-EOF2
	experimentName: k8s-test
	trainingServicePlatform: kubernetes
	workdir: $WORK/aah-work
	maxTrialNum: 1
	searchSpacePath: $AAH_ROOT/examples/quickstart-search-space.json
	tuner:
	  builtinTunerName: NetworkMorphism
	  initialArch: $AAH_ROOT/examples/fashion-mnist-cnn.json
	trial:
	  command: aah-trial --threads 1 --batch_size 32 --warmup_1 3 --train_samples 2048 --val_samples 64
	  retries: 0
	kubernetes:
	  mountPath: $WORK
	  claimName: aah-userhome
	  pollInterval: 0.05s
	  resultWait: 10m
	EOF2
	answers create create-ok
	answers get-job jobs-1node-running jobs-1node-running jobs-1node-preempted jobs-1node-preempted \
		jobs-1node-running jobs-1node-complete
	answers get-pod pods-preempted
	answers logs logs-ok
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	job=k8s-test-$id-000001-1
	wait_for test -e "$FAKE_KUBECTL_DIR/pods-done"
	E=$WORK/aah-work/experiments/$id
	T=$E/trials/000001
	cat "$FAKE_KUBECTL_DIR/pod-first.log" "$FAKE_KUBECTL_DIR/pod-replacement.log"
	# The runner: told once, in its output and trial.log; one submission,
	# no retry (retries: 0 would have made a charged failure final).
	[ "$(grep -c "pod $job-0-x7k2p was disrupted (DisruptionTarget: PreemptionByScheduler: Kubernetes Scheduler: preempting to accommodate a higher priority pod); the Job controller replaces it" <<<"$output")" -eq 1 ]
	grep -q "==> kubernetes: pod $job-0-x7k2p was disrupted .*not a failure: trial.retries is not charged" "$T/trial.log"
	[ "$(grep -c '"event":"trial_submitted"' "$E/journal.jsonl")" -eq 1 ]
	! grep -q '"event":"trial_retry"' "$E/journal.jsonl"
	grep -q '"event":"trial_finished".*"attempt":1.*"state":"succeeded"' "$E/journal.jsonl"
	[ "$(ncalls "create -f -")" -eq 1 ]
	[ "$(grep -c "\"event\":\"trial_note\".*\"reason\":\"pod $job-0-x7k2p disrupted (PreemptionByScheduler); its replacement resumes from the checkpoint, not charged to trial.retries\"" "$E/journal.jsonl")" -eq 1 ]
	run aah-runner status "$id"
	echo "$output"
	[[ $output == *"note from attempt 1: pod $job-0-x7k2p disrupted (PreemptionByScheduler); its replacement resumes from the checkpoint, not charged to trial.retries"* ]]
	! grep -q "retried after" <<<"$output"
	# The pods: the first one without --resume, killed; the replacement
	# resumed from the first one's checkpoint.
	grep -q 'aah-entrypoint: argv: .*aah-trial' "$FAKE_KUBECTL_DIR/pod-first.log"
	! grep -q 'aah-entrypoint: argv: .*--resume' "$FAKE_KUBECTL_DIR/pod-first.log"
	grep -q 'first pod: killed' "$FAKE_KUBECTL_DIR/pod-first.log"
	grep -q 'aah-entrypoint: this pod replaces one that was preempted or evicted (index preemptions: 1); resuming from the checkpoint' "$FAKE_KUBECTL_DIR/pod-replacement.log"
	grep -q 'aah-entrypoint: argv: .*aah-trial.* --resume$' "$FAKE_KUBECTL_DIR/pod-replacement.log"
	# (after epoch 1, or 2 if the kill came late on a loaded machine: the
	# pod is killed once its first checkpoint is seen, epochs take seconds)
	grep -qE "resumed from '.*checkpoint/state.bin' after epoch [12]$" "$FAKE_KUBECTL_DIR/pod-replacement.log"
	# Epochs 1, 2, 3, each once.
	[ "$(grep -o '"epoch":[0-9]*' "$T/metrics.jsonl" | tr '\n' ' ')" = '"epoch":1 "epoch":2 "epoch":3 ' ]
	/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["epochs_run"] == 3 and r["status"] == "succeeded", r' "$T/result.json"
}

@test "status: a trial whose Job waits for admission is shown waiting, not running, until admitted" {
	KUBE_YAML=$'  queue: kueue\n  queueName: team-a' k8s_config c.yml
	answers create create-ok
	answers get-job jobs-suspended
	aah-runner create -c c.yml > out.txt 2>&1 3>&- &
	BG_PID=$!
	wait_for grep -q '^[a-z0-9]' out.txt
	id=$(head -1 out.txt)
	wait_for grep -qs "waiting for admission" "$WORK/aah-work/experiments/$id/trials/000001/waiting"
	run aah-runner status "$id"
	echo "$output"
	[[ $output == *"0 running, 1 waiting for admission, 0 queued"* ]]
	[[ $output == *"000001  waiting "*"waiting for admission: the Job is suspended until its queue (team-a) admits it"* ]]
	# Kueue admits it: it runs, then completes.
	answers get-job jobs-running jobs-complete
	answers get-pod pods-succeeded
	answers logs logs-ok
	wait "$BG_PID"
	BG_PID=
	run aah-runner status "$id"
	echo "$output"
	[[ $output == *"1 done (1 succeeded, 0 failed), 0 running, 0 queued"* ]]
	[[ $output != *"  waiting "* ]]
	[ ! -e "$WORK/aah-work/experiments/$id/trials/000001/waiting" ]
	# The journal keeps what the queue did, once; status lists it.
	[ "$(grep -c '"event":"trial_note".*"reason":"waiting for admission: the Job is suspended until its queue (team-a) admits it"' "$WORK/aah-work/experiments/$id/journal.jsonl")" -eq 1 ]
	[[ $output == *"note from attempt 1: waiting for admission: the Job is suspended until its queue (team-a) admits it"* ]]
}

@test "a relaunch of the same attempt replaces its predecessor's finished Job; a running one is never touched" {
	# A device pool's resize relaunches the same attempt (--resume): its
	# Job name is taken by the finished Job of the launch before.
	k8s_config c.yml
	answers create err-exists create-ok
	answers get-job jobs-failed-backoff jobs-running jobs-complete
	answers get-pod pods-succeeded
	answers logs logs-ok
	answers delete-job delete-ok
	run aah-runner create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=${lines[0]}
	job=k8s-test-$id-000001-1
	[[ $output == *"Job $job: replaced the finished Job of the same name (failed) left from this trial's previous launch"* ]]
	[ "$(ncalls "create -f -")" -eq 2 ]
	grep -q "delete job $job --cascade=foreground --ignore-not-found --wait=true" "$FAKE_KUBECTL_DIR/calls.log"
	finished "$id" | grep -q '"state":"succeeded"'

	# The Job of that name is running: left alone, the trial fails to start.
	rm -rf "$WORK/aah-work" "$FAKE_KUBECTL_DIR/calls.log"
	answers create err-exists
	answers get-job jobs-running
	run aah-runner create -c c.yml
	[ "$status" -eq 0 ]
	id=${lines[0]}
	[ "$(ncalls "create -f -")" -eq 1 ]
	! grep -q "delete job" "$FAKE_KUBECTL_DIR/calls.log"
	[[ $output == *"already exists in namespace 'aah'"* ]]
	finished "$id" | grep -q '"state":"failed".*"reason":"could not be started: '
}
