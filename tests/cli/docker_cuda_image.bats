#!/usr/bin/env bats
# The CUDA trial image without a registry (issue 28): the Dockerfile's
# cudalocal stages, built on the real Docker engine (tests/docker/engine.bash)
# from the offline Debian base with this machine's /usr/local/cuda staged in
# (docker/cuda-context.sh). No GPU and no NVIDIA container runtime here: the
# image is checked for what can be checked without them, that every library
# resolves and that aah-trial says "no CUDA device" rather than failing to
# load. Built cold it takes minutes (the toolkit is 1.7 GB, its own image:
# aah-cuda-toolkit:local); the builder's packages are the CPU images' layer.

load ../docker/common

setup_file() { docker_file_setup; }
teardown_file() { docker_file_teardown; }

setup() { docker_test_setup; }
teardown() { docker_test_teardown; }

@test "cuda trial image, offline from the Debian base: ldd resolves every library, --backend cuda says 'no CUDA device'" {
	[ -x /usr/local/cuda/bin/nvcc ] || skip "no CUDA toolkit in /usr/local/cuda to stage"
	t0=$SECONDS
	make -C "$AAH_ROOT" --no-print-directory images-trial IMAGE_BASE=cudalocal DOCKER="$AAH_DOCKER" \
		DEBIAN_IMAGE=aah-base:bookworm >"$WORK/images.log" 2>&1 || { tail -n 40 "$WORK/images.log"; false; }
	size=$("$AAH_DOCKER" image inspect -f '{{.Size}}' aah-trial:cuda)
	echo "# aah-trial:cuda: $((size / 1000000)) MB, built in $((SECONDS - t0)) s" >&3
	# aah-trial's own libraries, and what cuDNN loads at run time, all
	# resolve; only the driver's libcuda.so.1 is left to the host's runtime
	run "$AAH_DOCKER" run --rm --network host --entrypoint sh aah-trial:cuda -c \
		'ldd /usr/local/bin/aah-trial; for l in /usr/local/cuda/lib64/lib*.so.*; do ldd "$l"; done'
	echo "$output" | grep -E 'not found|cudnn|cublas|nccl|cudart' | sort -u | head -40
	[ "$status" -eq 0 ]
	[ "$(grep 'not found' <<<"$output" | grep -vc 'libcuda.so.1 => not found')" -eq 0 ]
	for lib in libcudnn.so.9 libcublasLt.so.13 libcudart.so.13 libnccl.so.2; do
		grep -q "$lib => /usr/local/cuda/lib64/$lib" <<<"$output"
	done
	# without a device: the runtime's reason, no loader error
	run "$AAH_DOCKER" run --rm --network host aah-trial:cuda aah-trial --backend cuda \
		--trial_dir /tmp/t --warmup_1 1
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"aah-trial: error: no CUDA device: the cuda backend needs an NVIDIA GPU ("* ]]
	[[ $output != *"error while loading shared libraries"* ]]
	# and --backend auto, the default, says why it takes the CPU
	run "$AAH_DOCKER" run --rm --network host aah-trial:cuda aah-trial --trial_dir /tmp/t \
		--dataset /nonexistent
	[[ $output == *"backend cpu (auto: no CUDA device visible: "* ]]
}
