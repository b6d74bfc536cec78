# The fake kubectl of the kubernetes suites (k8s_backend.bats, k8s_pool.bats,
# k8s_mpi.bats): tests/fixtures/k8s/bin/kubectl first on PATH, recording
# every call and replaying captured answers (tests/fixtures/k8s/kubectl/),
# and pod_sim.sh standing in for the pods. NO Kubernetes API server runs.

K8S=$AAH_ROOT/tests/fixtures/k8s

fake_kubectl_setup() {
	setup_workdir
	export FAKE_KUBECTL_DIR=$WORK/fake
	mkdir -p "$FAKE_KUBECTL_DIR/script"
	ln -s "$K8S/pod_sim.sh" "$FAKE_KUBECTL_DIR/on-create"
	export PATH="$K8S/bin:$PATH"
	export FAKE_POD_RESULT=succeeded
}

fake_kubectl_teardown() {
	[ -z "${BG_PID:-}" ] || kill -9 "$BG_PID" 2>/dev/null || true
	touch "$FAKE_KUBECTL_DIR/release"    # a blocked fake kubectl (err-timeout) may go
	teardown_workdir
}

# answers KEY CASE... : what the fake kubectl answers to KEY, in order.
answers() {
	local key=$1; shift
	printf '%s\n' "$@" > "$FAKE_KUBECTL_DIR/script/$key"
}

calls() { cat "$FAKE_KUBECTL_DIR/calls.log"; }
ncalls() { grep -c -- "$1" "$FAKE_KUBECTL_DIR/calls.log" || true; }
finished() { grep '"event":"trial_finished"' "$WORK/aah-work/experiments/$1/journal.jsonl"; }
