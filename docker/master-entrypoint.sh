#!/bin/sh
# Entrypoint of the aah master image: run the experiment of a mounted
# config.yml with `aah-runner`, submitting trials through kubectl.
#
#   docker run ... aah-master /etc/aah/config.yml    (or: k8s/master-job.yaml)
#   docker run ... aah-master <aah-runner subcommand> [args]   (status, list, render ...)
#
# The experiment id is kept in $AAH_MASTER_ID_FILE (default
# $AAH_WORKDIR/aah-master.id): when the container restarts, the same
# experiment is resumed (`aah-runner resume`), never started twice. Remove
# that file to start a new experiment from the same config.
set -eu

export AAH_WORKDIR="${AAH_WORKDIR:-/userhome/aah-work}"
id_file=${AAH_MASTER_ID_FILE:-$AAH_WORKDIR/aah-master.id}

case "${1:-}" in
'' | -h | --help)
	echo "usage: aah-master CONFIG.yml | aah-master <aah-runner command> [args]" >&2
	exit 2
	;;
*.yml | *.yaml) ;;
*) exec aah-runner "$@" ;;
esac

config=$1
[ -r "$config" ] || { echo "aah-master: cannot read config '$config'" >&2; exit 2; }
echo "aah-master: config $config, workdir $AAH_WORKDIR, kubectl $(command -v kubectl || echo missing)"
aah-runner check "$config"
mkdir -p "$AAH_WORKDIR"

if [ -s "$id_file" ]; then
	id=$(cat "$id_file")
	echo "aah-master: resuming experiment $id (from $id_file)"
else
	id=$(aah-runner create -c "$config" --no-run --quiet)
	printf '%s\n' "$id" > "$id_file.tmp"
	mv "$id_file.tmp" "$id_file"
	echo "aah-master: created experiment $id"
fi
exec aah-runner resume "$id"
