#!/bin/sh
# collect-libs.sh DEST BINARY...: copy the shared libraries the binaries
# need into DEST, except those every runtime image already has (glibc) and
# those the nvidia/cuda runtime image provides (CUDA, cuDNN, cuBLAS, NCCL).
# The build stage runs it so the runtime stages need no -dev packages and no
# guessing of Ubuntu's runtime package names.
set -eu
[ $# -ge 2 ] || { echo "usage: collect-libs.sh DEST BINARY..." >&2; exit 2; }
dest=$1
shift
mkdir -p "$dest"
for bin in "$@"; do
	[ -x "$bin" ] || { echo "collect-libs: '$bin' is not an executable" >&2; exit 1; }
	ldd "$bin" | awk '/=> \// { print $3 }' | while read -r lib; do
		case $(basename "$lib") in
		libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libresolv.so*) ;;
		libcuda.so* | libcudart.so* | libcudnn*.so* | libcublas*.so* | libnccl.so* | libnvrtc*.so* | libnvJitLink*.so*) ;;
		*) cp -L -n "$lib" "$dest/" ;;
		esac
	done
done
