#!/bin/sh
# Entrypoint of the aah trial image. Prints the launch contract this pod
# received (env + argv, after the kubelet's $(VAR) expansion), then runs the
# trial command given as arguments.
#
# Node mode (one process per node, no AAH_PROCS_PER_POD): exec the command
# as it is.
# Device mode (AAH_PROCS_PER_POD=G, trial.processMode: device; G = 1 too,
# since the pod template leaves the per-process names to us): start G
# processes, one per device d = 0..G-1, each with
#   RANK_ID = VC_TASK_INDEX * G + d, DEVICE_ID = d, CUDA_VISIBLE_DEVICES = d
# and the value after --rank replaced by its RANK_ID; wait for all of them and
# exit with the first non-zero status (SIGTERM is passed on to them).
#
# MPI mode (trial.launcher: mpi, AAH_MPI_ROLE set by the docker backend;
# keys and configs in AAH_MPI_SSH_DIR, made per attempt by the runner):
#   worker    the command is sshd -D; it runs until the launcher writes
#             $AAH_MPI_SSH_DIR/done (then exit 0) or sshd dies (its status).
#   launcher  waits until the sshd of each of the AAH_MPI_WORKERS workers has
#             written its pid file (it listens then; at most AAH_MPI_WAIT_S
#             seconds, default 120), runs the command (mpirun), writes done
#             and exits with mpirun's status.
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

mpi_worker() {
	contract "$@"
	"$@" &
	sshd=$!
	trap 'kill -TERM $sshd 2>/dev/null || true' TERM INT
	while kill -0 "$sshd" 2>/dev/null && [ ! -e "$AAH_MPI_SSH_DIR/done" ]; do
		sleep 0.5
	done
	if [ -e "$AAH_MPI_SSH_DIR/done" ]; then
		kill -TERM "$sshd" 2>/dev/null || true
		wait "$sshd" || true
		exit 0
	fi
	wait "$sshd" && rc=0 || rc=$?
	echo "aah-entrypoint: sshd exited with status $rc before the launcher was done" >&2
	exit "$rc"
}

mpi_launcher() {
	contract "$@"
	limit=${AAH_MPI_WAIT_S:-120} waited=0 i=1
	while [ "$i" -le "${AAH_MPI_WORKERS:-0}" ]; do
		while [ ! -s "$AAH_MPI_SSH_DIR/sshd-$i.pid" ]; do
			if [ "$waited" -ge $((limit * 10)) ]; then
				echo "aah-entrypoint: the sshd of worker $i did not start within $limit s" >&2
				exit 1
			fi
			sleep 0.1
			waited=$((waited + 1))
		done
		i=$((i + 1))
	done
	"$@" && rc=0 || rc=$?
	: > "$AAH_MPI_SSH_DIR/done"
	exit "$rc"
}

case ${AAH_MPI_ROLE:-} in
'') ;;
worker) mpi_worker "$@" ;;
launcher) mpi_launcher "$@" ;;
*)
	echo "aah-entrypoint: AAH_MPI_ROLE='$AAH_MPI_ROLE' is neither launcher nor worker" >&2
	exit 2
	;;
esac

# Kubernetes: a pod that replaces a preempted or evicted one (the Job
# controller's count of this index's ignored failures, AAH_INDEX_PREEMPTIONS,
# is > 0), or a Job a queue suspended and admitted again (the trial's
# checkpoint is there already), continues from the checkpoint: --resume is
# added unless trial.resumeOnRetry is off (AAH_RESUME_ON_REPLACE unset) or
# the command has it.
if [ "${AAH_RESUME_ON_REPLACE:-}" = 1 ]; then
	replaced=no
	case ${AAH_INDEX_PREEMPTIONS:-} in
	'' | 0 | *[!0-9]*) ;;
	*) replaced=yes ;;
	esac
	if [ -n "${AAH_TRIAL_DIR:-}" ] && [ -d "$AAH_TRIAL_DIR/checkpoint" ]; then replaced=yes; fi
	has_resume=no
	for a do [ "$a" != --resume ] || has_resume=yes; done
	if [ "$replaced" = yes ] && [ "$has_resume" = no ]; then
		echo "aah-entrypoint: this pod replaces one that was preempted or evicted (index preemptions: ${AAH_INDEX_PREEMPTIONS:-0}); resuming from the checkpoint"
		set -- "$@" --resume
	fi
fi

procs=${AAH_PROCS_PER_POD:-1}
case $procs in
'' | *[!0-9]*)
	echo "aah-entrypoint: AAH_PROCS_PER_POD='$procs' is not a number" >&2
	exit 2
	;;
esac

if [ -z "${AAH_PROCS_PER_POD:-}" ] || [ "$procs" -lt 1 ]; then
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
