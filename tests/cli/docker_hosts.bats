#!/usr/bin/env bats
# docker.hosts: a master and three nodes reached by Docker's own ssh
# transport, as AIPerf's servers.json lists them (issue 31). Each "host" is
# real: its own dockerd (own socket, data root, exec root, pid file; no
# bridge, no iptables, containers on the host network) and its own sshd
# (Debian's openssh-server) on 127.0.0.2, .3, .4, whose sessions reach that
# dockerd (tests/docker/hosts.bash). The runner reaches them only through
# `docker -H ssh://root@127.0.0.N:PORT`; ssh uses the test's keys (a
# wrapper points the real ssh at the test's ssh_config: root's ~/.ssh is
# the machine's). Trials are tests/fixtures/trials/ckpt_trial.sh in the
# offline base image, with the work dir and the source tree bind-mounted
# (the "NFS" every node shares).

load ../docker/common
load mpi
load fence
# shellcheck source=tests/docker/hosts.bash
source "$AAH_ROOT/tests/docker/hosts.bash"

NHOSTS=3

setup_file() {
	export HOSTS_DIR HOSTS_SKIP
	HOSTS_DIR=$(mktemp -d /tmp/aah-dh.XXXXXX)
	HOSTS_SKIP=$HOSTS_DIR/skip
	if [ "$(id -u)" -ne 0 ] || [ ! -x /usr/sbin/dockerd ]; then
		echo "needs root and Debian's dockerd (make deps)" > "$HOSTS_SKIP"
	elif ! hosts_up "$HOSTS_DIR" "$NHOSTS" 2>"$HOSTS_DIR/up.err"; then
		echo "the hosts did not start: $(tail -1 "$HOSTS_DIR/up.err")" > "$HOSTS_SKIP"
	elif ! DOCKER_HOST=unix://$HOSTS_DIR/h1/docker.sock docker_base_image 2>>"$HOSTS_DIR/up.err"; then
		echo "no offline base image: $(tail -1 "$HOSTS_DIR/up.err")" > "$HOSTS_SKIP"
	else
		# Images reach the other nodes as on a real cluster: save | load over ssh.
		hosts_push_image "$HOSTS_DIR" "$NHOSTS" aah-base:bookworm ||
			echo "cannot load the base image into hosts 2-$NHOSTS" > "$HOSTS_SKIP"
	fi
	if [ -f "$HOSTS_SKIP" ]; then
		echo "# docker hosts tests SKIPPED: $(cat "$HOSTS_SKIP")" >&3
	else
		echo "# $NHOSTS hosts: dockerd $(host_docker "$HOSTS_DIR" 1 version -f '{{.Server.Version}}'), $(/usr/sbin/sshd -V 2>&1 | head -1), ssh://root@127.0.0.2-$((NHOSTS + 1))" >&3
	fi
	export HOSTS_PATH
}

teardown_file() {
	hosts_down "$HOSTS_DIR" "$NHOSTS"
	rm -rf "$HOSTS_DIR"
}

setup() {
	if [ -f "$HOSTS_SKIP" ]; then skip "$(cat "$HOSTS_SKIP")"; fi
	setup_workdir
	RUNNER_PID=
	# every host up (a test may have stopped one)
	for ((i = 1; i <= NHOSTS; i++)); do
		PATH=$HOSTS_PATH "$AAH_DOCKER" -H "$(host_url "$HOSTS_DIR" "$i")" version >/dev/null 2>&1 ||
			{ host_stop "$HOSTS_DIR" "$i"; host_start "$HOSTS_DIR" "$i"; }
	done
}

teardown() {
	local i ids c
	if [ -n "${RUNNER_PID:-}" ]; then kill -9 "$RUNNER_PID" 2>/dev/null || true; fi
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -n "${WORK:-}" ]; then
		for ((i = 1; i <= NHOSTS; i++)); do
			echo "--- host $i: docker ps -a"; host_docker "$HOSTS_DIR" "$i" ps -a 2>&1
			for c in $(host_docker "$HOSTS_DIR" "$i" ps -aq 2>/dev/null); do
				echo "--- host $i: docker logs $c"; host_docker "$HOSTS_DIR" "$i" logs "$c" 2>&1 | tail -n 20
			done
		done
		cat "$WORK"/runner*.log "$WORK/runs.log" 2>/dev/null
		dump_experiments 40
	fi
	for ((i = 1; i <= NHOSTS; i++)); do
		ids=$(host_docker "$HOSTS_DIR" "$i" ps -aq 2>/dev/null)
		# shellcheck disable=SC2086 # a list of ids
		[ -z "$ids" ] || host_docker "$HOSTS_DIR" "$i" rm -f $ids >/dev/null 2>&1
	done
	[ -z "${WORK:-}" ] || { cd / && rm -rf "$WORK"; }
}

# servers.json in AIPerf's form (ip, tag, status) with what ssh needs
# (user, port) and the slots of each node (CPU nodes: no GPUs to list).
servers_json() {
	local i
	{
		echo "["
		for ((i = 1; i <= NHOSTS; i++)); do
			printf '  {"ip": "%s", "user": "root", "port": %s, "tag": "", "status": "waiting", "slots": 1}%s\n' \
				"$(host_addr "$i")" "$(host_port "$HOSTS_DIR" "$i")" "$([ "$i" -lt "$NHOSTS" ] && echo ,)"
		done
		echo "]"
	} > servers.json
}

# hosts_config FILE NAME MIN_MAX [top-level lines...]: a search over the
# hosts of servers.json; each trial on MIN_MAX devices of the pool.
hosts_config() {
	local f=$1 name=$2 size=$3; shift 3
	servers_json
	{
		echo "experimentName: $name"
		echo "trainingServicePlatform: docker"
		echo "searchSpacePath: $AAH_ROOT/tests/fixtures/upstream-configs/aah-imagenet-search_space.json"
		for line in "$@"; do echo "$line"; done
		echo "tuner:"
		echo "  builtinTunerName: Random"
		echo "pool:"
		echo "  devices: $NHOSTS"
		echo "  minDevices: $size"
		echo "  maxDevices: $size"
		echo "trial:"
		echo "  command: $AAH_ROOT/tests/fixtures/trials/ckpt_trial.sh"
		echo "  retries: 1"
		echo "  env:"
		echo "    TRIAL_RUN_LOG: $WORK/runs.log"
		echo "    TRIAL_STEPS: \"${STEPS:-4}\""
		echo "    TRIAL_STEP_S: \"${STEP_S:-0.3}\""
		if [ -n "${GATE:-}" ]; then echo "    TRIAL_GATE: $GATE"; fi
		if [ -n "${ACC:-}" ]; then echo "    TRIAL_ACC: \"$ACC\""; fi
		if [ -n "${HOLD:-}" ]; then echo "    TRIAL_HOLD_ATTEMPT: \"$HOLD\""; fi
		echo "docker:"
		echo "  binary: $AAH_DOCKER"
		echo "  image: aah-base:bookworm"
		echo "  mounts: [\"$WORK:$WORK\", \"$AAH_ROOT:$AAH_ROOT:ro\"]"
		echo "  pollInterval: 0.3s"
		echo "  hostTimeout: 2s"
		echo "  hosts: servers.json"
	} > "$f"
}

exp_dir() { echo "$AAH_WORKDIR/experiments/$1"; }
job_ids() { grep '"event":"trial_submitted"' "$(exp_dir "$1")/journal.jsonl" | sed 's/.*"job":"\([^"]*\)".*/\1/'; }
containers_everywhere() {
	local i n=0
	for ((i = 1; i <= NHOSTS; i++)); do
		n=$((n + $(host_docker "$HOSTS_DIR" "$i" ps -aq --filter label=aah.io/experiment | wc -l)))
	done
	echo "$n"
}
# aah-runner with the ssh of the test (a function: not for background runs, whose $! must be the runner)
aah() { PATH=$HOSTS_PATH aah-runner "$@"; }

@test "docker hosts: a search over servers.json on three hosts through ssh: trials on every host, a 2-node trial across two, logs collected and archived" {
	hosts_config a.yml hosts-search 1 "trialConcurrency: 3" "maxTrialNum: 3"
	run aah create -c a.yml
	echo "$output"
	[ "$status" -eq 0 ]
	a=$(only_experiment)
	[ "$(count_events "$a" trial_finished succeeded)" -eq 3 ]
	# One container per trial, each on a host of servers.json, named in the job id.
	job_ids "$a" | grep -qE '^127\.0\.0\.[234]/[0-9a-f]{64}$'
	[ "$(job_ids "$a" | cut -d/ -f1 | sort -u | wc -l)" -eq 3 ]
	# Every host ran a trial, each once, to the end; AAH_HOST inside is the host.
	cat "$WORK/runs.log"
	[ "$(grep -c ' start=0$' "$WORK/runs.log")" -eq 3 ]
	[ "$(grep -c ' done=4$' "$WORK/runs.log")" -eq 3 ]
	[ "$(awk '/start=/ { print $4 }' "$WORK/runs.log" | sort -u | tr '\n' ' ')" = "127.0.0.2 127.0.0.3 127.0.0.4 " ]

	# A 2-node trial of another experiment in the same work dir: the pool
	# gives it two devices, on two hosts; rank 0's host is MASTER_ADDR.
	: > "$WORK/runs.log"
	hosts_config b.yml hosts-2node 2 "trialConcurrency: 1" "maxTrialNum: 1"
	run aah create -c b.yml
	echo "$output"
	[ "$status" -eq 0 ]
	b=$(only_experiment | grep -vx "$a")
	[ "$(count_events "$b" trial_finished succeeded)" -eq 1 ]
	job_ids "$b" | grep -qE '^127\.0\.0\.[234]/[0-9a-f]{64},127\.0\.0\.[234]/[0-9a-f]{64}$'
	cat "$WORK/runs.log"
	r0=$(awk '$3 == 0 && /start=/ { print $4 }' "$WORK/runs.log")
	r1=$(awk '$3 == 1 && /start=/ { print $4 }' "$WORK/runs.log")
	[ -n "$r0" ] && [ -n "$r1" ] && [ "$r0" != "$r1" ]
	[ "$(awk '/start=/ { print $5 }' "$WORK/runs.log" | sort -u)" = "$r0" ]
	[ "$(grep -c ' done=4$' "$WORK/runs.log")" -eq 2 ]
	T=$(exp_dir "$b")/trials/000001
	/usr/bin/python3 - "$T/launch.json" "$r0" "$r1" <<-'PY'
	import json, sys
	l = json.load(open(sys.argv[1]))
	hosts = [r["host"] for r in l["ranks"]]
	assert hosts == sys.argv[2:], hosts
	assert all(r["env"]["MASTER_ADDR"] == sys.argv[2] for r in l["ranks"]), l["ranks"]
	PY
	# Both containers' output reached the trial's directory, as on one host.
	grep -q "^== rank 0 (container [0-9a-f]* on $r0) ==" "$T/trial.log"
	grep -q "^== rank 1 (container [0-9a-f]* on $r1) ==" "$T/trial.log"
	grep -q '^ckpt_trial: rank 1 done$' "$T/trial.log"
	# status names the hosts, none down; collect archives the logs.
	run aah-runner status "$b"
	echo "$output"
	[[ $output == *"docker hosts: 3, 0 down"* ]]
	run aah-runner collect "$b" -o "$WORK/b.tar.gz"
	echo "$output"
	[ "$status" -eq 0 ]
	tar -tzf "$WORK/b.tar.gz" | grep -q 'trials/000001/trial.log$'
	[ "$(containers_everywhere)" -eq 0 ]
}

ckpt_at() { [ "$(cat "$(exp_dir "$1")/trials/$2/checkpoint/step" 2>/dev/null)" = "$3" ]; }
host_index() { echo $(( ${1##*.} - 1 )); }   # 127.0.0.3 -> host 2

@test "docker hosts: one host's sshd and engine stop mid-trial: down in status with the reason, the trial finishes on another host from its checkpoint, nothing runs twice when it comes back" {
	GATE=$WORK/go STEPS=6 hosts_config c.yml hosts-fault 1 "trialConcurrency: 2" "maxTrialNum: 2"
	PATH=$HOSTS_PATH aah-runner create -c c.yml -q > runner.log 2>&1 &
	RUNNER_PID=$!
	wait_for eval '[ -n "$(only_experiment)" ]'
	id=$(only_experiment)
	# Both trials wait before their last step: step 5 is in their checkpoints.
	wait_for ckpt_at "$id" 000001 5
	wait_for ckpt_at "$id" 000002 5
	victim=$(job_ids "$id" | sed -n 1p | cut -d/ -f1)
	other=$(job_ids "$id" | sed -n 2p | cut -d/ -f1)
	[ "$victim" != "$other" ]
	host_stop "$HOSTS_DIR" "$(host_index "$victim")"
	# Down after hostTimeout: the attempt fails with the host's reason ...
	wait_for eval 'grep -q "\"event\":\"trial_finished\",\"trial\":\"000001\".*\"attempt\":1,\"state\":\"failed\".*docker host $victim is down" "$(exp_dir "$id")/journal.jsonl"'
	run aah-runner status "$id"
	echo "$output"
	[[ $output == *"docker hosts: 3, 1 down"* ]]
	echo "$output" | grep -E "^$victim +1 +down .*Connection refused"
	# docker_hosts.json as docs/formats.md says, the old container kept
	run /usr/bin/python3 "$AAH_ROOT/tests/fixtures/docs/check_formats.py" "$AAH_ROOT/docs/formats.md" \
		aah-docker-hosts/1 "$(exp_dir "$id")/docker_hosts.json"
	echo "$output"
	[ "$status" -eq 0 ]
	/usr/bin/python3 - "$(exp_dir "$id")/docker_hosts.json" "$victim" "$(job_ids "$id" | sed -n 1p | cut -d/ -f2)" <<-'PY'
	import json, sys
	h = {x["name"]: x for x in json.load(open(sys.argv[1]))["hosts"]}
	assert h[sys.argv[2]]["state"] == "down" and h[sys.argv[2]]["kept"] == [sys.argv[3]], h
	assert all(x["state"] == "up" and "kept" not in x for n, x in h.items() if n != sys.argv[2]), h
	PY
	# ... and the retry runs on the third host from its checkpoint.
	wait_for eval '[ "$(count_events "$id" trial_submitted)" -eq 3 ]'
	third=$(job_ids "$id" | sed -n 3p | cut -d/ -f1)
	[ "$third" != "$victim" ] && [ "$third" != "$other" ]
	wait_for grep -q "^1 2 0 $third $third start=5$" "$WORK/runs.log"
	# The host comes back: what it kept of attempt 1 is logged and removed
	# before anything else runs there.
	host_start "$HOSTS_DIR" "$(host_index "$victim")"
	wait_for eval 'aah-runner status "$id" | grep -q "docker hosts: 3, 0 down"'
	wait_for grep -q "^== rank 0 of attempt 1 (container [0-9a-f]* on $victim, exited when its host answered again; removed) ==" \
		"$(exp_dir "$id")/trials/000001/trial.log"
	[ "$(host_docker "$HOSTS_DIR" "$(host_index "$victim")" ps -aq | wc -l)" -eq 0 ]
	touch "$WORK/go"
	wait "$RUNNER_PID"
	RUNNER_PID=
	cat "$WORK/runs.log"
	[ "$(count_events "$id" trial_finished succeeded)" -eq 2 ]
	# Trial 1: attempt 1 never finished; attempt 2 went on from step 5.
	[ "$(grep -c '^1 ' "$WORK/runs.log")" -eq 3 ]
	grep -q "^1 1 0 $victim $victim start=0$" "$WORK/runs.log"
	grep -q "^1 2 0 $third $third done=6$" "$WORK/runs.log"
	# Trial 2 ran once, on its host; no trial lost or run twice.
	[ "$(grep -c '^2 ' "$WORK/runs.log")" -eq 2 ]
	grep -q "^2 1 0 $other $other done=6$" "$WORK/runs.log"
	[ "$(grep -c ' done=' "$WORK/runs.log")" -eq 2 ]
	journal "$id" | grep '"event":"trial_retry"' | grep -q "docker host $victim is down"
	[ "$(containers_everywhere)" -eq 0 ]
}

@test "docker hosts: a host cut from the master (its sshd stopped, its engine and trial alive): the retry elsewhere finishes from the checkpoint; the cut-off attempt writes only into its own place, is stopped when its host answers, and neither the score nor the archive is its" {
	GATE=$WORK/go STEPS=4 ACC="0.91 0.62" HOLD=1 \
		hosts_config c.yml hosts-fence 1 "trialConcurrency: 1" "maxTrialNum: 1"
	PATH=$HOSTS_PATH aah-runner create -c c.yml -q > runner.log 2>&1 &
	RUNNER_PID=$!
	wait_for eval '[ -n "$(only_experiment)" ]'
	id=$(only_experiment)
	# Attempt 1 waits before its last step: step 3 is in its checkpoint.
	wait_for ckpt_at "$id" 000001 3
	victim=$(job_ids "$id" | sed -n 1p | cut -d/ -f1)
	host_cut "$HOSTS_DIR" "$(host_index "$victim")"
	# Down after hostTimeout: attempt 1 fails; attempt 2 runs on another
	# host, from the checkpoint (step 3).
	wait_for eval 'grep -q "\"event\":\"trial_finished\",\"trial\":\"000001\".*\"attempt\":1,\"state\":\"failed\".*docker host $victim is down" "$(exp_dir "$id")/journal.jsonl"'
	wait_for eval '[ "$(count_events "$id" trial_submitted)" -eq 2 ]'
	second=$(job_ids "$id" | sed -n 2p | cut -d/ -f1)
	[ "$second" != "$victim" ]
	wait_for grep -q "^1 2 0 $second $second start=3$" "$WORK/runs.log"
	# The cut-off attempt goes on: it ends its last step, writes its
	# result (0.91) and holds on; the trial still runs as attempt 2.
	touch "$WORK/go.1"
	wait_for grep -q "^1 1 0 $victim $victim done=4$" "$WORK/runs.log"
	[ "$(count_events "$id" trial_finished succeeded)" -eq 0 ]
	# Its host answers again: the old attempt, still running, is stopped.
	host_uncut "$HOSTS_DIR" "$(host_index "$victim")"
	wait_for grep -q "^== rank 0 of attempt 1 (container [0-9a-f]* on $victim, running when its host answered again; removed) ==" \
		"$(exp_dir "$id")/trials/000001/trial.log"
	wait_for eval '[ "$(host_docker "$HOSTS_DIR" "$(host_index "$victim")" ps -aq | wc -l)" -eq 0 ]'
	fence_end "$id"
	grep -q "^1 2 0 $second $second done=4$" "$WORK/runs.log"
	[ "$(containers_everywhere)" -eq 0 ]
}

@test "docker hosts: a runner killed while a host is down; resumed after it is back, it logs and removes what the host kept, the retry goes on" {
	GATE=$WORK/go STEPS=6 hosts_config c.yml hosts-kept 1 "trialConcurrency: 2" "maxTrialNum: 2"
	PATH=$HOSTS_PATH aah-runner create -c c.yml -q > runner1.log 2>&1 &
	RUNNER_PID=$!
	wait_for eval '[ -n "$(only_experiment)" ]'
	id=$(only_experiment)
	wait_for ckpt_at "$id" 000001 5
	wait_for ckpt_at "$id" 000002 5
	victim=$(job_ids "$id" | sed -n 1p | cut -d/ -f1)
	host_stop "$HOSTS_DIR" "$(host_index "$victim")"
	wait_for eval '[ "$(count_events "$id" trial_submitted)" -eq 3 ]'
	kill -9 "$RUNNER_PID"
	wait "$RUNNER_PID" 2>/dev/null || true
	RUNNER_PID=
	# Back with the old attempt's container (stopped with its engine).
	host_start "$HOSTS_DIR" "$(host_index "$victim")"
	[ "$(host_docker "$HOSTS_DIR" "$(host_index "$victim")" ps -aq | wc -l)" -eq 1 ]
	PATH=$HOSTS_PATH aah-runner resume "$id" -q > runner2.log 2>&1 &
	RUNNER_PID=$!
	wait_for eval '[ "$(host_docker "$HOSTS_DIR" "$(host_index "$victim")" ps -aq | wc -l)" -eq 0 ]'
	grep -q "^== rank 0 of attempt 1 (container [0-9a-f]* on $victim, exited when its host answered again; removed) ==" \
		"$(exp_dir "$id")/trials/000001/trial.log"
	touch "$WORK/go"
	wait "$RUNNER_PID"
	RUNNER_PID=
	cat "$WORK/runs.log"
	[ "$(count_events "$id" trial_submitted)" -eq 3 ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 2 ]
	[ "$(grep -c '^1 .* done=' "$WORK/runs.log")" -eq 1 ]
	grep -q '^1 2 0 .* done=6$' "$WORK/runs.log"
	[ "$(grep -c '^2 .* done=' "$WORK/runs.log")" -eq 1 ]
	[ "$(containers_everywhere)" -eq 0 ]
}

@test "docker hosts: SIGKILL of the runner with containers on three hosts; resume re-attaches to them, nothing runs twice" {
	GATE=$WORK/go STEPS=3 hosts_config c.yml hosts-resume 1 "trialConcurrency: 3" "maxTrialNum: 3"
	run aah create -c c.yml --no-run
	[ "$status" -eq 0 ]
	id=${lines[0]}
	PATH=$HOSTS_PATH aah-runner resume "$id" -q > runner1.log 2>&1 &
	RUNNER_PID=$!
	for t in 000001 000002 000003; do wait_for ckpt_at "$id" "$t" 2; done
	kill -9 "$RUNNER_PID"
	wait "$RUNNER_PID" 2>/dev/null || true
	RUNNER_PID=
	before=$(job_ids "$id" | sort | tr '\n' ' ')
	[ "$(echo "$before" | tr ' ' '\n' | cut -d/ -f1 | sort -u | grep -c .)" -eq 3 ]
	PATH=$HOSTS_PATH aah-runner resume "$id" -q > runner2.log 2>&1 &
	RUNNER_PID=$!
	wait_for eval '[ "$(count_events "$id" runner_started)" -eq 2 ]'
	[ "$(containers_everywhere)" -eq 3 ]
	touch "$WORK/go"
	wait "$RUNNER_PID"
	RUNNER_PID=
	# Followed on their hosts, not created again; each trial ran once.
	[ "$(count_events "$id" trial_submitted)" -eq 3 ]
	[ "$(job_ids "$id" | sort | tr '\n' ' ')" = "$before" ]
	[ "$(count_events "$id" trial_finished succeeded)" -eq 3 ]
	[ "$(grep -c ' start=0$' "$WORK/runs.log")" -eq 3 ]
	[ "$(grep -c ' done=3$' "$WORK/runs.log")" -eq 3 ]
	[ "$(containers_everywhere)" -eq 0 ]
}

@test "docker hosts: a host that does not answer when the search starts gets no trial and is down in status; the others run every trial" {
	host_stop "$HOSTS_DIR" 3
	hosts_config c.yml hosts-start-down 1 "trialConcurrency: 3" "maxTrialNum: 4"
	run aah create -c c.yml
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	[ "$(count_events "$id" trial_finished succeeded)" -eq 4 ]
	[ "$(count_events "$id" trial_finished failed)" -eq 0 ]
	[ "$(job_ids "$id" | cut -d/ -f1 | sort -u | tr '\n' ' ')" = "127.0.0.2 127.0.0.3 " ]
	[[ $output == *"docker host 127.0.0.4 does not answer (ssh: connect to host 127.0.0.4 port"* ]]
	run aah-runner status "$id"
	echo "$output"
	[[ $output == *"docker hosts: 3, 1 down"* ]]
	echo "$output" | grep -E "^127\.0\.0\.4 +1 +down .*Connection refused"
	[ "$(containers_everywhere)" -eq 0 ]
}

# aah-trial:cpu (make images, on the standard test engine and its cached
# build) into host 1's engine, then over ssh into the others.
hosts_trial_image() {
	local std=$HOSTS_DIR/std
	DOCKER_TEST_DIR=$std
	docker_engine_up "$std" || return 1
	docker_images || { docker_engine_down "$std"; return 1; }
	"$AAH_DOCKER" save aah-trial:cpu | host_docker "$HOSTS_DIR" 1 load >/dev/null
	docker_engine_down "$std"
	unset DOCKER_HOST
	hosts_push_image "$HOSTS_DIR" "$NHOSTS" aah-trial:cpu
}

@test "docker hosts: the MPI form across two hosts: mpirun in rank 0's container on one, sshd in the other's on its host's address" {
	hosts_trial_image
	mpi_config docker c.yml
	servers_json
	cat >> c.yml <<-EOF
	pool:
	  devices: $NHOSTS
	  minDevices: 2
	  maxDevices: 2
	docker:
	  binary: $AAH_DOCKER
	  image: aah-trial:cpu
	  user: "0:0"
	  mounts: ["$WORK:$WORK", "$AAH_ROOT:$AAH_ROOT:ro"]
	  pollInterval: 0.3s
	  hosts: servers.json
	EOF
	run timeout 600 env PATH="$HOSTS_PATH" aah-runner create -c c.yml --seed 5
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(only_experiment)
	T=$(exp_dir "$id")/trials/000001
	job="aah-$id-000001"
	[ "$(count_events "$id" trial_finished succeeded)" -eq 1 ]
	job_ids "$id" | grep -qE '^127\.0\.0\.[234]/[0-9a-f]{64},127\.0\.0\.[234]/[0-9a-f]{64}$'
	h0=$(job_ids "$id" | cut -d, -f1 | cut -d/ -f1)
	h1=$(job_ids "$id" | cut -d, -f2 | cut -d/ -f1)
	[ "$h0" != "$h1" ]
	# the launcher on h0 ran both ranks' mpirun; the worker's sshd listened
	# on h1's address and let it in by the trial's key
	grep -q "^== rank 0 (container [0-9a-f]* on $h0) ==" "$T/trial.log"
	grep -q "^== rank 1 (container [0-9a-f]* on $h1) ==" "$T/trial.log"
	grep -qx "mpi rank 0 of 2" "$T/trial.log"
	grep -qx "mpi rank 1 on $job-worker-1.$job" "$T/trial.log"
	grep -q "Server listening on $h1 port [0-9]*" "$T/trial.log"
	grep -q 'Accepted publickey for root from ' "$T/trial.log"
	# each node of the hostfile is a container, its name resolving to its host
	[ "$(cat "$T/hostfile")" = "$job-worker-0.$job slots=1
$job-worker-1.$job slots=1" ]
	/usr/bin/python3 - "$T/launch.json" "$T/result.json" "$h0" "$h1" <<-'PY'
	import json, sys
	l = json.load(open(sys.argv[1]))
	assert [r["host"] for r in l["ranks"]] == sys.argv[3:], l["ranks"]
	assert all(r["env"]["MASTER_ADDR"] == sys.argv[3] for r in l["ranks"]), l["ranks"]
	r = json.load(open(sys.argv[2]))
	assert r["status"] == "succeeded" and r["world_size"] == 2, r
	PY
	[ "$(containers_everywhere)" -eq 0 ]
}
