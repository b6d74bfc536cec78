# shellcheck shell=bash
# gpu-env.sh: what tests/gpu/lease.sh needs besides its parts (sourced
# from the repository root): the bundle it carries to the device machine
# (gpu_collect, here) and unpacks there (gpu_unpack), and where aah's
# binaries find CUDA's libraries there (gpu_lib_path).

# where a --collect bundle is unpacked on the device (not into the carried
# folder, which must stay small)
GPU_RUN_DIR=${TMPDIR:-/tmp}/aah-gpu-run
# the device tool carries at most 64 MiB, the working tree included
GPU_CARRY_MAX=$((60 * 1024 * 1024))
# what lease.sh runs, relative to a build folder
GPU_BINS=(aah-trial bench/bench_train tests/unit/test_kernels_ref tests/unit/test_kernels_cast
	tests/unit/test_precision tests/unit/test_kernels_refnet tests/unit/test_monitor_sampling
	tests/unit/test_kernels_train_gpu)

# gpu_collect BUILD DEST: DEST/ from BUILD: the binaries (stripped), the
# libraries they need beside CUDA's (docker/collect-libs.sh), the kernel
# families' objects with their ptxas reports (for cuobjdump), resnet50.json
# (tests/gpu/resnet50-arch.sh), a Fashion-MNIST subset and cuDNN's header
# version; one bundle.tar.xz where xz makes it 10% smaller. Refused (DEST
# removed) when it and the working tree pass GPU_CARRY_MAX.
gpu_collect() {
	local build=$1 dest=$2 stage raw packed tree h
	stage=$(mktemp -d) || return 1
	rm -rf "$dest" && mkdir -p "$stage/tests/unit" "$stage/bench" "$stage/obj/kernels/cuda" "$dest" ||
		return 1
	for b in "${GPU_BINS[@]}"; do
		strip -o "$stage/$b" "$build/$b" || return 1
	done
	docker/collect-libs.sh "$stage/gpu-libs" "${GPU_BINS[@]/#/$build/}" || return 1
	strip --strip-unneeded "$stage"/gpu-libs/* 2>/dev/null
	for o in "$build"/obj/kernels/cuda/cuda_*.o; do
		[ -f "$o.ptxas" ] && cp "$o" "$o.ptxas" "$stage/obj/kernels/cuda/"
	done
	AAH_BUILD=$build tests/gpu/resnet50-arch.sh "$stage/resnet50.json" || return 1
	tests/gpu/fmnist-subset.py "${FMNIST:-/usr/share/datasets/fashion-mnist}" "$stage/fashion-mnist" \
		4096 1024 || return 1
	h=${CUDA_HOME:-/usr/local/cuda}/include/cudnn_version.h
	awk '/define CUDNN_MAJOR/ { M = $3 } /define CUDNN_MINOR/ { m = $3 } /define CUDNN_PATCHLEVEL/ { p = $3 }
		END { if (M != "") print M * 10000 + m * 100 + p }' "$h" >"$stage/cudnn-header-version" 2>/dev/null
	raw=$(du -sb "$stage" | cut -f1)
	tar -C "$stage" -cf - . | xz -T2 -6 >"$dest/bundle.tar.xz" || return 1
	packed=$(stat -c %s "$dest/bundle.tar.xz")
	if [ "$packed" -ge $((raw * 9 / 10)) ]; then   # xz does not pay: carry it as it is
		rm -f "$dest/bundle.tar.xz"
		cp -a "$stage/." "$dest/" || return 1
	fi
	rm -rf "$stage"
	packed=$(du -sb "$dest" | cut -f1)
	# the device tool carries the working tree too (tracked and untracked files)
	tree=$(git ls-files -z -co --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
	echo "collect: $dest is $((packed / 1024)) KiB ($((raw / 1024)) KiB unpacked), the tree $((tree / 1024)) KiB: $(((packed + tree) / 1024)) KiB of the 64 MiB carry"
	if [ $((packed + tree)) -gt "$GPU_CARRY_MAX" ]; then
		echo "collect: refused: over $((GPU_CARRY_MAX >> 20)) MiB, too near the device tool's 64 MiB limit; $dest removed" >&2
		rm -rf "$dest"
		return 1
	fi
}

# gpu_unpack BUILD: the folder to run from: BUILD itself, or where its
# bundle.tar.xz was unpacked (GPU_RUN_DIR; tar, else Python's tarfile)
gpu_unpack() {
	if [ ! -f "$1/bundle.tar.xz" ] || [ -x "$1/aah-trial" ]; then
		echo "$1"
		return 0
	fi
	rm -rf "$GPU_RUN_DIR" && mkdir -p "$GPU_RUN_DIR" || return 1
	tar -C "$GPU_RUN_DIR" -xJf "$1/bundle.tar.xz" 2>/dev/null ||
		python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="tar")' \
			"$1/bundle.tar.xz" "$GPU_RUN_DIR" || return 1
	echo "$GPU_RUN_DIR"
}

# gpu_lib_path BUILD PY: CUDA's libraries for aah's binaries alone: the
# collected ones in BUILD/gpu-libs, then the system's, else those of
# PyTorch's nvidia-* wheels (PY's)
gpu_lib_path() {
	local wheels
	wheels=$("$2" - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
    print(":".join(sorted(d for p in nvidia.__path__ for d in glob.glob(os.path.join(p, "*", "lib")))))
except ImportError:
    pass
PY
)
	echo "$(cd "$1" && pwd)/gpu-libs${wheels:+:$wheels}"
}
