#!/bin/sh
# Entrypoint of the aah trial image. Prints the launch contract this pod
# received (env + argv, after the kubelet's $(VAR) expansion), then runs the
# trial command given as arguments.
#
# Node mode (one process per node): exec the command as it is.
# Device mode (AAH_PROCS_PER_POD=G > 1, trial.processMode: device): start G
# processes, one per device d = 0..G-1, each with
#   RANK_ID = VC_TASK_INDEX * G + d, DEVICE_ID = d, CUDA_VISIBLE_DEVICES = d
# and the value after --rank replaced by its RANK_ID; wait for all of them and
# exit with the first non-zero status (SIGTERM is passed on to them).
set -eu

contract() {
	env | grep -E '^(AAH_|MA_|VC_|VK_|MASTER_|RANK_|DEVICE_ID=|CUDA_VISIBLE_DEVICES=|NCCL_COMM_ID=|TF_CONFIG=|JOB_COMPLETION_INDEX=)' |
		sort | sed 's/^/aah-entrypoint: /' || true
	# One printf for the whole line: device-mode processes share stdout and
	# must not interleave inside a line.
	line='aah-entrypoint: argv:'
	for a do line="$line $a"; done
	printf '%s\n' "$line"
}

if [ $# -eq 0 ]; then
	echo "aah-entrypoint: no trial command given (the Job's args are the command)" >&2
	exit 2
fi

procs=${AAH_PROCS_PER_POD:-1}
case $procs in
'' | *[!0-9]*)
	echo "aah-entrypoint: AAH_PROCS_PER_POD='$procs' is not a number" >&2
	exit 2
	;;
esac

if [ "$procs" -le 1 ]; then
	contract "$@"
	exec "$@"
fi

# One process of device mode: set its rank variables, rewrite --rank, exec.
run_device() {
	rank=$1 dev=$2
	shift 2
	RANK_ID=$rank DEVICE_ID=$dev CUDA_VISIBLE_DEVICES=$dev
	export RANK_ID DEVICE_ID CUDA_VISIBLE_DEVICES
	nargs=$# prev=""
	for a do
		orig=$a
		[ "$prev" = "--rank" ] && a=$rank
		set -- "$@" "$a"
		prev=$orig
	done
	shift "$nargs"
	contract "$@"
	exec "$@"
}

node=${VC_TASK_INDEX:?aah-entrypoint: VC_TASK_INDEX is not set}
pids=""
d=0
while [ "$d" -lt "$procs" ]; do
	run_device $((node * procs + d)) "$d" "$@" &
	pids="$pids $!"
	d=$((d + 1))
done
# shellcheck disable=SC2086 # pids is a list of numbers
trap 'kill -TERM $pids 2>/dev/null || true' TERM INT
status=0
for p in $pids; do
	if wait "$p"; then :; else
		rc=$?
		[ "$status" -ne 0 ] || status=$rc
	fi
done
exit "$status"
