# The simulated cluster of tests/fixtures/k8s/cluster_sim.py for the bats
# suites that run real trials on the kubernetes backend (k8s_elastic.bats,
# k8s_preempt.bats). NO Kubernetes API server runs here (none can):
# cluster_sim.py is the kubectl, and plays one namespace's API server, Job
# controller and kubelet; the pods are the real trial entrypoint and the
# real aah-trial, as local processes. The cluster's DNS (each pod's
# <job>-<i>.<service> name) is a hosts file bind-mounted on /etc/hosts in
# the runners' own mount namespace: nothing of this machine changes.

SIM=$AAH_ROOT/tests/fixtures/k8s/cluster_sim.py

cluster_setup() {
	setup_workdir
	export CLUSTER_SIM_DIR=$WORK/cluster CLUSTER_SIM_GRACE=5
	mkdir -p "$CLUSTER_SIM_DIR"
	cp /etc/hosts "$CLUSTER_SIM_DIR/hosts"
	unshare -m --propagation private sh -c "mount --bind '$CLUSTER_SIM_DIR/hosts' /etc/hosts" 2>/dev/null ||
		skip "cannot bind a hosts file in a mount namespace of its own here (unshare -m needs root)"
}

cluster_teardown() {
	"$SIM" --teardown 2>/dev/null || true
	teardown_workdir
}

cluster_note() {
	echo "# NO Kubernetes API server ran: kubectl is tests/fixtures/k8s/cluster_sim.py (API server, Job controller and kubelet played locally; the pods run the real entrypoint and aah-trial)" >&3
}

# The runner sees the cluster's DNS: its own mount namespace, the simulated
# cluster's hosts file on /etc/hosts; its kubectl's pods inherit both.
aah-runner() {
	unshare -m --propagation private sh -c 'mount --bind "$0" /etc/hosts && exec aah-runner "$@"' \
		"$CLUSTER_SIM_DIR/hosts" "$@"
}
