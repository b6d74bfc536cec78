# Shared by the bats files that run against the real Docker engine
# (tests/cli/docker_*.bats): one engine per file (tests/docker/engine.bash),
# started in setup_file; where it cannot start, every test of the file is
# skipped with the reason (run.sh counts the skips).

load helpers
# shellcheck source=tests/docker/engine.bash
source "$AAH_ROOT/tests/docker/engine.bash"

docker_file_setup() {    # [images]: also build the CPU images (make images)
	export DOCKER_TEST_DIR DOCKER_SKIP_FILE
	DOCKER_TEST_DIR=$(mktemp -d /tmp/aah-docker.XXXXXX)
	DOCKER_SKIP_FILE=$DOCKER_TEST_DIR/skip
	if ! docker_engine_up "$DOCKER_TEST_DIR" 2>"$DOCKER_TEST_DIR/up.err"; then
		echo "no Docker engine here: $(head -1 "$DOCKER_TEST_DIR/up.err")" > "$DOCKER_SKIP_FILE"
	elif ! docker_base_image 2>>"$DOCKER_TEST_DIR/up.err"; then
		echo "no offline base image: $(tail -1 "$DOCKER_TEST_DIR/up.err")" > "$DOCKER_SKIP_FILE"
	fi
	if [ -f "$DOCKER_SKIP_FILE" ]; then
		echo "# docker tests SKIPPED: $(cat "$DOCKER_SKIP_FILE")" >&3
	else
		echo "# docker engine: $("$AAH_DOCKER" version -f '{{.Server.Version}}') via $AAH_DOCKER, storage driver $DOCKER_ENGINE_DRIVER, data root $DOCKER_ENGINE_DATA" >&3
	fi
	export DOCKER_HOST
	T_FILE_START=$SECONDS
	export T_FILE_START
}

docker_file_teardown() {
	docker_engine_down "$DOCKER_TEST_DIR"
	if [ -f "$DOCKER_SKIP_FILE" ]; then
		echo "# docker test file: every test skipped ($(cat "$DOCKER_SKIP_FILE"))" >&3
	else
		echo "# docker test file: $((SECONDS - T_FILE_START)) s with the engine up" >&3
	fi
	rm -rf "$DOCKER_TEST_DIR"
}

docker_skip_if_down() {
	if [ -f "$DOCKER_SKIP_FILE" ]; then skip "$(cat "$DOCKER_SKIP_FILE")"; fi
}

# setup and teardown of each test: skip where the engine is down, a fresh
# work dir; on failure, what the containers, journals and trial logs say;
# then this test's containers and work dir go (the engine is ours alone).
# A test that starts a runner in the background keeps its pid in RUNNER_PID.
docker_test_setup() {
	docker_skip_if_down
	setup_workdir
	RUNNER_PID=
}

docker_test_teardown() {
	local c ids
	if [ -n "${RUNNER_PID:-}" ]; then kill -9 "$RUNNER_PID" 2>/dev/null || true; fi
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -n "${WORK:-}" ]; then
		echo "--- docker ps -a:"; "$AAH_DOCKER" ps -a 2>&1
		for c in $("$AAH_DOCKER" ps -aq --filter label=aah.io/experiment 2>/dev/null); do
			echo "--- docker logs $c:"; "$AAH_DOCKER" logs "$c" 2>&1 | tail -n 30
		done
		dump_experiments 40
	fi
	ids=$("$AAH_DOCKER" ps -aq --filter label=aah.io/experiment 2>/dev/null)
	# shellcheck disable=SC2086 # a list of ids
	[ -z "$ids" ] || "$AAH_DOCKER" rm -f $ids >/dev/null 2>&1
	[ -z "${WORK:-}" ] || { cd / && rm -rf "$WORK"; }
}

# The CPU images, built with `make images` from the offline base (cached in
# the engine's data root under the build tree; a fresh tree builds cold).
# Always `make images`: BuildKit's cache makes it quick when nothing changed,
# and a changed source rebuilds from the compile step on.
docker_images() {
	make -C "$AAH_ROOT" --no-print-directory images DOCKER="$AAH_DOCKER" \
		DEBIAN_IMAGE=aah-base:bookworm KUBECTL_BIN="$(readlink -f /usr/bin/kubectl)" \
		>"$DOCKER_TEST_DIR/images.log" 2>&1 || { tail -n 40 "$DOCKER_TEST_DIR/images.log"; return 1; }
}

# Containers of this engine (labels of aah: one experiment's, or all).
containers_of() { "$AAH_DOCKER" ps -aq --filter "label=aah.io/experiment${1:+=$1}" | wc -l; }
