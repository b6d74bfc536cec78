#!/usr/bin/env bash
# Install the Debian packages aah needs to build and test (idempotent, quiet
# when everything is already there). `--bench` adds what the benchmarks
# compare against (PyTorch on CPU).
set -euo pipefail

pkgs=(
  build-essential pkg-config
  libyaml-dev libcjson-dev libarchive-dev libssl-dev libzstd-dev zlib1g-dev
  libdnnl-dev libjpeg62-turbo-dev
  dataset-fashion-mnist
  libcriterion-dev bats shellcheck zstd python3 python3-jsonschema python3-yaml
  clang libclang-rt-14-dev   # make fuzz: clang -fsanitize=fuzzer (libFuzzer runtime)
  munge slurmctld slurmd slurm-client
  chromium
  openmpi-bin libopenmpi-dev   # ModelArts' MPI form: mpirun starts the ranks (tests/cli/trial_mpi.bats)
  docker.io debootstrap   # tests/docker/engine.bash: a real engine, an offline base image
  openssh-server   # tests/docker/hosts.bash: each test "host" is an sshd in front of its own dockerd
  python3-torch python3-torchvision   # examples/nni-pytorch: a trial written for NNI, on Debian's PyTorch
)
if [ "${1:-}" = "--bench" ]; then
  pkgs+=(python3-numpy hyperfine python3-pil)  # + tests/bench/bench_input.sh
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts daemons on install where it can; the tests start their own.
for svc in slurmctld slurmd munge docker containerd ssh; do
  "${sudo[@]}" service "$svc" stop >/dev/null 2>&1 || true
done
echo "deps: done"
