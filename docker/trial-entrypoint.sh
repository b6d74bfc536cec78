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
# MPI mode (trial.launcher: mpi, AAH_MPI_ROLE set by the docker or kubernetes backend;
# keys and configs in AAH_MPI_SSH_DIR, made per attempt by the runner):
#   worker    the command is sshd -D; it runs until the launcher writes
#             $AAH_MPI_SSH_DIR/done (then exit 0) or sshd dies (its status).
#   launcher  waits until the sshd of each of the AAH_MPI_WORKERS workers has
#             written its pid file (it listens then; at most AAH_MPI_WAIT_S
#             seconds, default 120), runs the command (mpirun), writes done
#             and exits with mpirun's status.
#   pod       Kubernetes (every pod of the trial's Indexed Job; keys,
#             configs and the hostfile from the trial's Secret, mounted
#             read-only at AAH_MPI_SSH_DIR): every pod runs sshd on its pod
#             IP (AAH_POD_IP). The pod of completion index 0 (AAH_MPI_INDEX)
#             is the launcher too: it waits until the sshd of every host of
#             the hostfile answers over ssh (at most AAH_MPI_WAIT_S seconds),
#             writes the hostfile to AAH_MPI_HOSTFILE, runs the command
#             (mpirun), tells every other pod over ssh that it is done and
#             exits with mpirun's status; the others exit 0 when told, or
#             with sshd's status if it dies first.
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

# A worker serves its sshd (pid $sshd) until the launcher says it is done
# (the file $1): it exits 0 then; an sshd that dies first ends it with the
# sshd's status.
sshd_until_done() {
	while kill -0 "$sshd" 2>/dev/null && [ ! -e "$1" ]; do
		sleep 0.5
	done
	if [ -e "$1" ]; then
		kill -TERM "$sshd" 2>/dev/null || true
		wait "$sshd" || true
		exit 0
	fi
	wait "$sshd" && rc=0 || rc=$?
	echo "aah-entrypoint: sshd exited with status $rc before the launcher was done" >&2
	exit "$rc"
}

mpi_worker() {
	contract "$@"
	"$@" &
	sshd=$!
	trap 'kill -TERM $sshd 2>/dev/null || true' TERM INT
	sshd_until_done "$AAH_MPI_SSH_DIR/done"
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

# The pod's sshd; the launcher's ssh to host $1 with command $2...
mpi_run=/tmp/aah-mpi
mpi_ssh() {
	ssh -F "$AAH_MPI_SSH_DIR/config" "$@"
}

mpi_pod() {
	contract "$@"
	mkdir -p "$mpi_run"
	rm -f "$mpi_run/done"
	/usr/sbin/sshd -D -e -f "$AAH_MPI_SSH_DIR/sshd_config" \
		-o "ListenAddress=${AAH_POD_IP:?aah-entrypoint: AAH_POD_IP (the pod IP) is not set}" \
		-o "PidFile=$mpi_run/sshd.pid" &
	sshd=$!
	trap 'kill -TERM $sshd 2>/dev/null || true' TERM INT
	if [ "${AAH_MPI_INDEX:?aah-entrypoint: AAH_MPI_INDEX is not set}" != 0 ]; then
		sshd_until_done "$mpi_run/done"
	fi
	hosts=$(sed 's/[[:space:]].*//' "$AAH_MPI_SSH_DIR/hostfile")
	limit=${AAH_MPI_WAIT_S:-600} start=$(date +%s)
	for h in $hosts; do
		until mpi_ssh -o ConnectTimeout=5 "$h" true 2>"$mpi_run/ssh.err"; do
			if ! kill -0 "$sshd" 2>/dev/null; then
				echo "aah-entrypoint: this pod's sshd died" >&2
				exit 1
			fi
			if [ $(($(date +%s) - start)) -ge "$limit" ]; then
				echo "aah-entrypoint: the sshd of $h did not answer within $limit s: $(tail -n 1 "$mpi_run/ssh.err")" >&2
				exit 1
			fi
			sleep 1
		done
		echo "aah-entrypoint: the sshd of $h answers"
	done
	cp "$AAH_MPI_SSH_DIR/hostfile" "$AAH_MPI_HOSTFILE.tmp.$$"
	mv -f "$AAH_MPI_HOSTFILE.tmp.$$" "$AAH_MPI_HOSTFILE"
	# mpirun in the background: the kubelet's SIGTERM (the Job deleted, the
	# pod preempted) reaches it, and it ends its ranks on every pod
	"$@" &
	mpirun=$!
	trap 'kill -TERM $mpirun $sshd 2>/dev/null || true' TERM INT
	rc=0
	wait "$mpirun" || rc=$?
	while kill -0 "$mpirun" 2>/dev/null; do   # a signal ended the wait, not mpirun
		rc=0
		wait "$mpirun" || rc=$?
	done
	first=yes
	for h in $hosts; do
		if [ "$first" = yes ]; then first=no; continue; fi   # this pod
		mpi_ssh "$h" touch "$mpi_run/done" ||
			echo "aah-entrypoint: could not tell $h that mpirun is done" >&2
	done
	kill -TERM "$sshd" 2>/dev/null || true
	wait "$sshd" || true
	exit "$rc"
}

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

case ${AAH_MPI_ROLE:-} in
'') ;;
worker) mpi_worker "$@" ;;
launcher) mpi_launcher "$@" ;;
pod) mpi_pod "$@" ;;
*)
	echo "aah-entrypoint: AAH_MPI_ROLE='$AAH_MPI_ROLE' is neither launcher, worker nor pod" >&2
	exit 2
	;;
esac

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
