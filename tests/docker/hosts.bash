# Several Docker "hosts" on this machine for docker.hosts tests: host I is
# its own dockerd (own socket, data root, exec root and pid file; no bridge,
# no iptables: containers use the host network) and its own sshd (Debian's
# openssh-server) listening on 127.0.0.(I+1), whose sessions reach that
# dockerd (sshd_config SetEnv DOCKER_HOST=unix://<its socket>), so that
# `docker -H ssh://root@127.0.0.(I+1):<port>` runs `docker system
# dial-stdio` against the right engine. Keys (client and host) are made by
# the test. Everything lives under DIR (a temp dir of the test): nothing
# collides with another checkout's run. Teardown is by the PIDs we started.
#
#   source tests/docker/hosts.bash
#   hosts_up DIR N        # hosts 1..N; exports HOSTS_PATH (a PATH for the runner)
#   host_stop DIR I       # its sshd and its engine stop (TERM; bounded waits)
#   host_start DIR I      # both again, with the same socket, data root and port
#   host_cut DIR I        # its sshd alone stops: cut from the master, its engine and
#                         # containers run on
#   host_uncut DIR I      # its sshd again; returns once the engine answers through it
#   hosts_down DIR N      # every container removed, every host stopped
#   host_docker DIR I ... # docker against host I's engine (its local socket)
#   hosts_push_image DIR N IMAGE  # host 1's IMAGE into hosts 2..N, over ssh
#   host_addr I; host_port DIR I; host_url DIR I
#
# The runner's ssh must use the test's key and known_hosts, not root's
# ~/.ssh (the machine's): $DIR/bin/ssh is `ssh -F $DIR/ssh_config "$@"`,
# first on HOSTS_PATH, so the docker CLI's own ssh transport runs the real
# ssh with the test's config. Images reach each engine as on real nodes:
# docker save | docker -H ... load (hosts_load_image).

AAH_DOCKER=${AAH_DOCKER:-/usr/bin/docker}

host_addr() { echo "127.0.0.$(($1 + 1))"; }
host_port() { cat "$1/h$2/port"; }
host_url() { echo "ssh://root@$(host_addr "$2"):$(host_port "$1" "$2")"; }
host_docker() { local dir=$1 i=$2; shift 2; "$AAH_DOCKER" -H "unix://$dir/h$i/docker.sock" "$@"; }

hosts__free_port() {    # a TCP port free on that address now
	python3 -c 'import socket, sys
s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$1"
}

hosts__pid_wait_gone() {    # pid, seconds: TERM, wait, then KILL
	local pid=$1 limit=$2 i
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < limit * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	echo "hosts: pid $pid ignored TERM for $limit s; killing it" >&2
	kill -KILL "$pid" 2>/dev/null || true
}

hosts_up() {
	local dir=$1 n=$2 i
	if [ ! -x /usr/sbin/sshd ]; then
		echo "hosts: /usr/sbin/sshd is not installed (run 'make deps': openssh-server)" >&2
		return 1
	fi
	mkdir -p "$dir/keys" "$dir/bin" /run/sshd
	ssh-keygen -q -t ed25519 -N '' -f "$dir/keys/id" -C aah-test-client || return 1
	ssh-keygen -q -t ed25519 -N '' -f "$dir/keys/host" -C aah-test-host || return 1
	cp "$dir/keys/id.pub" "$dir/keys/authorized_keys"
	: > "$dir/keys/known_hosts"
	cat > "$dir/ssh_config" <<-EOF
	Host *
	    IdentityFile $dir/keys/id
	    IdentitiesOnly yes
	    UserKnownHostsFile $dir/keys/known_hosts
	    GlobalKnownHostsFile /dev/null
	    StrictHostKeyChecking yes
	    BatchMode yes
	    ConnectTimeout 10
	    LogLevel ERROR
	EOF
	printf '#!/bin/sh\nexec /usr/bin/ssh -F %s/ssh_config "$@"\n' "$dir" > "$dir/bin/ssh"
	chmod +x "$dir/bin/ssh"
	export HOSTS_PATH="$dir/bin:$PATH"
	for ((i = 1; i <= n; i++)); do
		local a h=$dir/h$i
		a=$(host_addr "$i")
		mkdir -p "$h/exec" "$h/data"
		hosts__free_port "$a" > "$h/port" || return 1
		echo "[$a]:$(cat "$h/port") $(cat "$dir/keys/host.pub")" >> "$dir/keys/known_hosts"
		cat > "$h/sshd_config" <<-EOF
		ListenAddress $a:$(cat "$h/port")
		HostKey $dir/keys/host
		AuthorizedKeysFile $dir/keys/authorized_keys
		PidFile $h/sshd.pid
		PermitRootLogin prohibit-password
		PubkeyAuthentication yes
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		UsePAM no
		StrictModes no
		X11Forwarding no
		SetEnv DOCKER_HOST=unix://$h/docker.sock
		EOF
		host_start "$dir" "$i" || return 1
	done
}

host_start() {
	local dir=$1 i=$2 h=$1/h$2 limit
	rm -f "$h/docker.sock" "$h/dockerd.pid"
	/usr/sbin/dockerd --data-root "$h/data" --exec-root "$h/exec" --pidfile "$h/dockerd.pid" \
		--host "unix://$h/docker.sock" --storage-driver overlay2 \
		--bridge=none --iptables=false --ip-masq=false --ip6tables=false \
		>>"$h/dockerd.log" 2>&1 &
	echo $! > "$h/dockerd.launch.pid"
	/usr/sbin/sshd -D -e -f "$h/sshd_config" >>"$h/sshd.log" 2>&1 &
	echo $! > "$h/sshd.launch.pid"
	# Up when the engine answers through ssh, as the runner will ask it.
	limit=$((SECONDS + ${HOSTS_WAIT_S:-120}))
	until PATH=$HOSTS_PATH "$AAH_DOCKER" -H "$(host_url "$dir" "$i")" version >/dev/null 2>&1; do
		if ! kill -0 "$(cat "$h/dockerd.launch.pid")" 2>/dev/null ||
			! kill -0 "$(cat "$h/sshd.launch.pid")" 2>/dev/null; then
			echo "hosts: host $i's dockerd or sshd exited while starting" >&2
			tail -n 20 "$h/dockerd.log" "$h/sshd.log" >&2
			return 1
		fi
		if [ "$SECONDS" -ge "$limit" ]; then
			echo "hosts: host $i did not answer over ssh within ${HOSTS_WAIT_S:-120} s" >&2
			tail -n 20 "$h/dockerd.log" "$h/sshd.log" >&2
			return 1
		fi
		sleep 0.3
	done
}

host_cut() {
	local h=$1/h$2
	[ -f "$h/sshd.launch.pid" ] && hosts__pid_wait_gone "$(cat "$h/sshd.launch.pid")" 10
	return 0
}

host_uncut() {
	local dir=$1 i=$2 h=$1/h$2 limit
	/usr/sbin/sshd -D -e -f "$h/sshd_config" >>"$h/sshd.log" 2>&1 &
	echo $! > "$h/sshd.launch.pid"
	limit=$((SECONDS + ${HOSTS_WAIT_S:-120}))
	until PATH=$HOSTS_PATH "$AAH_DOCKER" -H "$(host_url "$dir" "$i")" version >/dev/null 2>&1; do
		if ! kill -0 "$(cat "$h/sshd.launch.pid")" 2>/dev/null || [ "$SECONDS" -ge "$limit" ]; then
			echo "hosts: host $i's sshd did not answer again" >&2
			tail -n 20 "$h/sshd.log" >&2
			return 1
		fi
		sleep 0.3
	done
}

host_stop() {
	local dir=$1 i=$2 h=$1/h$2 m
	[ -f "$h/sshd.launch.pid" ] && hosts__pid_wait_gone "$(cat "$h/sshd.launch.pid")" 10
	[ -f "$h/dockerd.launch.pid" ] && hosts__pid_wait_gone "$(cat "$h/dockerd.launch.pid")" 60
	awk -v d="$h/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	return 0
}

hosts_down() {    # every host at once: each dockerd takes seconds to stop
	local dir=$1 n=$2 i pids=()
	for ((i = 1; i <= n; i++)); do
		[ -d "$dir/h$i" ] || continue
		hosts__down_one "$dir" "$i" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i"; done
	return 0
}

hosts__down_one() {
	local dir=$1 i=$2 ids
	ids=$(host_docker "$dir" "$i" ps -aq 2>/dev/null)
	# shellcheck disable=SC2086 # a list of ids
	[ -z "$ids" ] || host_docker "$dir" "$i" rm -f $ids >/dev/null 2>&1 || true
	host_stop "$dir" "$i"
}

# The image of DIR's engine-1 source (a docker save tarball) into every host.
hosts_load_image() {
	local dir=$1 n=$2 tar=$3 i
	for ((i = 1; i <= n; i++)); do
		host_docker "$dir" "$i" load -i "$tar" >/dev/null || return 1
	done
}

# IMAGE of host 1's engine into hosts 2..N as on real nodes, docker save |
# docker -H ssh://... load, to every host at once (each load is the host's
# own engine unpacking layers); 1 if any host did not take it.
hosts_push_image() {
	local dir=$1 n=$2 image=$3 i pids=() rc=0
	for ((i = 2; i <= n; i++)); do
		host_docker "$dir" 1 save "$image" |
			PATH=$HOSTS_PATH "$AAH_DOCKER" -H "$(host_url "$dir" "$i")" load >/dev/null &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || rc=1; done
	return "$rc"
}
