#!/usr/bin/env bash
# resnet50-arch.sh OUT: writes AIPerf's start graph, ResNet-50 at 224x224x3
# with 1000 classes, as an aah-arch/1 file: trial 1 of the ImageNet
# config's network morphism tuner, as aah-runner proposes it. The GPU
# benchmark (lease.sh) trains it beside PyTorch.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: resnet50-arch.sh OUT}
runner=$PWD/${AAH_BUILD:-build}/aah-runner
w=$(mktemp -d) || exit 1
trap 'rm -rf "$w"' EXIT
cp tests/fixtures/upstream-configs/aah-imagenet-config.yml \
	tests/fixtures/upstream-configs/aah-imagenet-search_space.json "$w/" || exit 1
id=$(cd "$w" && AAH_WORKDIR="$w/work" "$runner" create --no-run -q aah-imagenet-config.yml) &&
	AAH_WORKDIR="$w/work" "$runner" propose --experiment "$id" --trial 1 >/dev/null &&
	cp "$w/work/experiments/$id/trials/000001/arch.json" "$out"
