# shellcheck shell=bash
# gpu-env.sh: what run-on-device.sh and profile-step.sh share (sourced from
# the repository root).

# where run-on-device.sh unpacks a --collect bundle (not into the carried
# folder, which must stay small)
# shellcheck disable=SC2034 # used by the scripts that source this
GPU_RUN_DIR=${TMPDIR:-/tmp}/aah-gpu-run

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
