# A throw-away Docker engine for the tests: Debian's dockerd (docker.io,
# installed by scripts/deps.sh; this file installs nothing) with its own
# socket, exec root and pid file in a temp dir, no bridge network and no
# iptables rules (every container and build uses --network host and talks to
# loopback only). Teardown is by the PID we started, after removing every
# container this engine ran.
#
#   source tests/docker/engine.bash
#   docker_engine_up DIR      # starts dockerd; exports DOCKER_HOST, AAH_DOCKER; 0 or 1
#   docker_engine_down DIR    # removes its containers, stops it (by PID), keeps DIR
#   docker_engine_logs DIR    # the daemon's log (for failure output)
#   docker_base_image         # aah-base:bookworm in the engine (see below); 0 or 1
#   docker_images_built       # aah-master:cpu and aah-trial:cpu in the engine; 0 or 1
#
# The CLI is Debian's /usr/bin/docker (the same 20.10 as the daemon, with
# BuildKit built in), never whatever `docker` is first on PATH: $AAH_DOCKER.
#
# The data root (images, build cache) lives under the build tree,
# $AAH_ROOT/$AAH_BUILD/docker/engine, so images built once are reused by the
# next suite and the next run; one engine at a time may use it (dockerd locks
# it). It needs a filesystem where overlay2 works; where it does not, the
# engine falls back to the vfs driver (slow, every layer a full copy) and says
# so on stderr.
#
# No registry is reachable here: the base image aah-base:bookworm is made
# offline with debootstrap from the Debian mirror apt already uses, once, and
# kept as $AAH_ROOT/$AAH_BUILD/docker/aah-base-bookworm.tar (a `docker
# save`), which later runs `docker load`.

AAH_DOCKER=${AAH_DOCKER:-/usr/bin/docker}
DOCKER_ENGINE_DATA=${DOCKER_ENGINE_DATA:-$AAH_ROOT/${AAH_BUILD:-build}/docker/engine}
DOCKER_BASE_TAR=${DOCKER_BASE_TAR:-$AAH_ROOT/${AAH_BUILD:-build}/docker/aah-base-bookworm.tar}
export AAH_DOCKER

docker_engine_logs() {
	[ -f "$1/dockerd.log" ] || return 0
	echo "----- $1/dockerd.log (last 60 lines)"
	tail -n 60 "$1/dockerd.log"
}

docker__pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Wait for dockerd: its log says "API listen on <socket>" once it serves;
# then `docker info` must answer. Generous bound, loud failure.
docker__wait_up() {
	local dir=$1 limit=$((SECONDS + ${DOCKER_ENGINE_WAIT_S:-120}))
	until "$AAH_DOCKER" info >/dev/null 2>&1; do
		if ! docker__pid_alive "$dir/dockerd.pid" && [ -f "$dir/dockerd.pid" ]; then
			echo "docker test engine: dockerd exited while starting" >&2
			return 1
		fi
		if [ "$SECONDS" -ge "$limit" ]; then
			echo "docker test engine: dockerd did not answer within ${DOCKER_ENGINE_WAIT_S:-120} s" >&2
			return 1
		fi
		sleep 0.2
	done
}

docker__start() {    # dir, storage driver
	local dir=$1 driver=$2
	mkdir -p "$dir/exec" "$DOCKER_ENGINE_DATA"
	rm -f "$dir/dockerd.pid" "$dir/docker.sock"
	/usr/sbin/dockerd \
		--data-root "$DOCKER_ENGINE_DATA" --exec-root "$dir/exec" \
		--pidfile "$dir/dockerd.pid" --host "unix://$dir/docker.sock" \
		--storage-driver "$driver" \
		--bridge=none --iptables=false --ip-masq=false --ip6tables=false \
		>>"$dir/dockerd.log" 2>&1 &
	echo $! > "$dir/dockerd.launch.pid"
	export DOCKER_HOST=unix://$dir/docker.sock
	docker__wait_up "$dir"
}

docker_engine_up() {
	local dir=$1
	if [ ! -x /usr/sbin/dockerd ] || [ ! -x "$AAH_DOCKER" ]; then
		echo "docker test engine: /usr/sbin/dockerd or $AAH_DOCKER is not installed (run 'make deps')" >&2
		return 1
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "docker test engine: needs root (dockerd mounts and makes cgroups)" >&2
		return 1
	fi
	if [ ! -d /sys/fs/cgroup ] || [ -z "$(ls /sys/fs/cgroup 2>/dev/null)" ]; then
		echo "docker test engine: no cgroup filesystem at /sys/fs/cgroup" >&2
		return 1
	fi
	mkdir -p "$dir"
	# The socket path must fit in sun_path (108 bytes).
	if [ ${#dir} -gt 90 ]; then
		echo "docker test engine: temp dir path too long for a socket: $dir" >&2
		return 1
	fi
	if docker__start "$dir" overlay2; then
		DOCKER_ENGINE_DRIVER=overlay2
	else
		echo "docker test engine: overlay2 did not work under $DOCKER_ENGINE_DATA; falling back to vfs" >&2
		docker_engine_logs "$dir" >&2
		docker__stop "$dir"
		docker__start "$dir" vfs || { docker_engine_logs "$dir" >&2; docker__stop "$dir"; return 1; }
		DOCKER_ENGINE_DRIVER=vfs
	fi
	export DOCKER_ENGINE_DRIVER
	# Whatever an engine killed earlier left behind is not ours to keep.
	docker__remove_containers
	return 0
}

docker__remove_containers() {
	local ids
	ids=$("$AAH_DOCKER" ps -aq 2>/dev/null)
	# shellcheck disable=SC2086 # a list of ids
	[ -z "$ids" ] || "$AAH_DOCKER" rm -f $ids >/dev/null 2>&1 || true
}

docker__stop() {    # TERM dockerd (it stops its containerd), up to 30 s, then KILL
	local dir=$1 pid i
	pid=$(cat "$dir/dockerd.pid" 2>/dev/null || cat "$dir/dockerd.launch.pid" 2>/dev/null) || return 0
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 300; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	echo "docker test engine: dockerd $pid ignored TERM for 30 s; killing it" >&2
	kill -KILL "$pid" 2>/dev/null || true
}

docker_engine_down() {
	local dir=$1 left
	if "$AAH_DOCKER" info >/dev/null 2>&1; then
		docker__remove_containers
		left=$("$AAH_DOCKER" ps -aq 2>/dev/null | wc -l)
		[ "$left" -eq 0 ] || echo "docker test engine: $left containers survived teardown" >&2
	fi
	docker__stop "$dir"
	docker__umount_under "$dir"
	return 0
}

# What dockerd left mounted under DIR (its exec root's netns) once it is gone.
docker__umount_under() {
	local m
	awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
}

# The offline base image, aah-base:bookworm: from the engine if there, else
# from the cached tarball, else debootstrap (minbase, from apt's own mirror)
# into a temp root, import, and save the tarball for the next time.
docker__apt_mirror() {
	local m
	m=$(grep -hE '^URIs:.*debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | awk '{ print $2 }')
	[ -n "$m" ] || m=$(grep -hE '^deb .*debian/? bookworm' /etc/apt/sources.list 2>/dev/null | head -1 | awk '{ print $2 }')
	echo "${m:-http://deb.debian.org/debian}"
}

docker_base_image() {
	local root mirror
	"$AAH_DOCKER" image inspect aah-base:bookworm >/dev/null 2>&1 && return 0
	if [ -s "$DOCKER_BASE_TAR" ]; then
		"$AAH_DOCKER" load -i "$DOCKER_BASE_TAR" >/dev/null && return 0
		echo "docker test engine: $DOCKER_BASE_TAR does not load; making it again" >&2
	fi
	if ! command -v debootstrap >/dev/null; then
		echo "docker test engine: debootstrap is not installed (run 'make deps')" >&2
		return 1
	fi
	mirror=$(docker__apt_mirror)
	mkdir -p "$(dirname "$DOCKER_BASE_TAR")"
	root=$(mktemp -d "$(dirname "$DOCKER_BASE_TAR")/rootfs.XXXXXX")
	echo "# docker test engine: debootstrap --variant=minbase bookworm from $mirror (once; cached as $DOCKER_BASE_TAR)" >&2
	if ! debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1; then
		echo "docker test engine: debootstrap failed:" >&2
		tail -n 20 "$root.log" >&2
		rm -rf "$root" "$root.log"
		return 1
	fi
	# Apt in the image uses the same mirror; no caches in the image.
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
	tar -C "$root" -c . | "$AAH_DOCKER" import - aah-base:bookworm >/dev/null || { rm -rf "$root" "$root.log"; return 1; }
	rm -rf "$root" "$root.log"
	"$AAH_DOCKER" save -o "$DOCKER_BASE_TAR.tmp" aah-base:bookworm && mv "$DOCKER_BASE_TAR.tmp" "$DOCKER_BASE_TAR"
}
