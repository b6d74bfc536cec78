#!/bin/sh
# cuda-context.sh CUDA_HOME DEST: stage the parts of a CUDA toolkit that
# building and running aah-trial need into DEST (docker/cuda in the build
# context) for `make images IMAGE_BASE=cudalocal`: the Dockerfile's CUDA
# stage built offline from the project's Debian base, where no registry
# serves nvidia/cuda. Copied: nvcc and its tools (bin/, nvvm/), the headers
# (cuDNN's and NCCL's included, where the toolkit holds them), and, of the
# libraries, only the shared ones aah-trial links or cuDNN loads at run
# time: cudart, cublas, cublasLt, every cudnn*, nccl, and nvrtc with
# nvJitLink (cuDNN's runtime-compiled engines). Symlinks are kept. Prints
# DEST's size. Refreshes DEST only when CUDA_HOME's libraries are newer.
set -eu
[ $# -eq 2 ] || { echo "usage: cuda-context.sh CUDA_HOME DEST" >&2; exit 2; }
src=$(readlink -f "$1")
dest=$2
for need in bin/nvcc include/cuda_runtime.h include/cudnn.h lib64/libcudart.so; do
	[ -e "$src/$need" ] || { echo "cuda-context: $src has no $need" >&2; exit 1; }
done
if [ -f "$dest/.staged" ] && [ -z "$(find "$src/lib64/" -newer "$dest/.staged" -name '*.so*' | head -1)" ]; then
	du -sh "$dest"
	exit 0
fi
rm -rf "$dest"
mkdir -p "$dest/lib64" "$dest/targets/x86_64-linux"
cp -a "$src/bin" "$src/nvvm" "$dest/"
cp -aL "$src/include" "$dest/include"
for pat in 'libcudart.so*' 'libcublas.so*' 'libcublasLt.so*' 'libcudnn*.so*' 'libnccl.so*' \
	'libnvrtc.so*' 'libnvrtc-builtins.so*' 'libnvJitLink.so*'; do
	# shellcheck disable=SC2086 # the pattern is meant to glob
	for f in "$src"/lib64/$pat; do
		[ -e "$f" ] && cp -a "$f" "$dest/lib64/"
	done
done
# nvcc.profile finds the headers and libraries under targets/<arch>/
ln -s ../../include "$dest/targets/x86_64-linux/include"
ln -s ../../lib64 "$dest/targets/x86_64-linux/lib"
touch "$dest/.staged"
du -sh "$dest"
