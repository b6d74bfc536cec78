#!/usr/bin/env bash
# `make run`: the quickstart experiment (examples/quickstart.yml) on this
# machine, then its report and its verified log archive.
#   scripts/quickstart.sh [--minutes N] [--seed N]
# AAH_WORKDIR picks where experiments go (default ./aah-work).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
minutes=10 seed=
while [ $# -gt 0 ]; do
	case "$1" in
	--minutes) minutes=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	-h|--help) sed -n '2,5p' "$0"; exit 0 ;;
	*) echo "quickstart: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
case "$minutes" in ''|*[!0-9]*) echo "quickstart: --minutes needs a whole number" >&2; exit 2 ;; esac
[ "$minutes" -ge 1 ] || { echo "quickstart: --minutes must be at least 1" >&2; exit 2; }

export PATH="$root/${AAH_BUILD:-build}:$PATH"
export AAH_WORKDIR=${AAH_WORKDIR:-$PWD/aah-work}
mkdir -p "$AAH_WORKDIR"
data=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
[ -f "$data" ] || { echo "quickstart: $data is missing: run 'make deps' (Debian package dataset-fashion-mnist)" >&2; exit 1; }

# The shipped config with this run's budget and absolute paths.
cfg=$AAH_WORKDIR/quickstart.yml
sed -e "s|^maxExecDuration: .*|maxExecDuration: ${minutes}m|" \
    -e "s|^searchSpacePath: |searchSpacePath: $root/examples/|" \
    -e "s|^  initialArch: |  initialArch: $root/examples/|" \
    "$root/examples/quickstart.yml" > "$cfg"

echo "quickstart: architecture search on Fashion-MNIST for $minutes minute(s), 2 trials at a time"
echo "quickstart: experiments in $AAH_WORKDIR (progress below; Ctrl-C stops, 'aah-runner resume <id>' continues)"
log=$AAH_WORKDIR/quickstart.log
set +e
aah-runner create -c "$cfg" ${seed:+--seed "$seed"} | tee "$log"
rc=${PIPESTATUS[0]}
set -e
id=$(head -1 "$log")
if [ "$rc" -ne 0 ] || [ -z "$id" ]; then
	echo "quickstart: the experiment did not finish (exit $rc)" >&2
	exit 1
fi

echo
aah-runner report "$id" | tee "$AAH_WORKDIR/quickstart-report.txt"
archive=$AAH_WORKDIR/experiments/$id/$id-logs.tar.zst
aah-runner collect "$id" -o "$archive" -q
aah-runner verify "$archive" > /dev/null
echo
echo "=== aah quickstart: experiment $id"
grep -E '^ *(Result|Final Score|Final Regulated Score|Error):' "$AAH_WORKDIR/quickstart-report.txt" | sed 's/^ */  /'
echo "  report:  $AAH_WORKDIR/experiments/$id/report.html"
echo "  archive: $archive (verified)"
