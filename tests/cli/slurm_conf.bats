#!/usr/bin/env bats
# `aah-runner slurm-conf HOSTS` from the command line: its help, the files
# from AIPerf's servers.json, a node probed through --probe (here the real
# `slurmd -C` of this machine, run by a probe that stays local), and bad
# host lists refused with file, line and field. The cluster brought up from
# its files: tests/cli/slurm_nodes.bats.

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

@test "slurm-conf --help: what it reads, what it writes, every option" {
	run aah-runner slurm-conf --help
	[ "$status" -eq 0 ]
	[[ $output == *"usage: aah-runner slurm-conf HOSTS"* ]]
	[[ $output == *"servers.json"* ]]
	[[ $output == *"NAME [ADDRESS] [cpus=N] [memory=MB] [gpus=N]"* ]]
	for o in --output --controller --probe --probe-timeout --cluster --partition --gpu-file --set; do
		[[ $output == *"$o"* ]]
	done
	run aah-runner --help
	[[ $output == *"slurm-conf"*"slurm.conf and gres.conf from a host list"* ]]
}

@test "slurm-conf: AIPerf's servers.json gives slurm.conf, gres.conf and the munge key's steps" {
	cat > servers.json <<-'EOF'
	[
	  {"ip": "10.0.0.11", "name": "gpu1", "cpus": 64, "memory": 256000, "port": 22, "user": "root",
	   "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"},
	  {"ip": "10.0.0.12", "name": "gpu2", "cpus": 64, "CUDA_VISIBLE_DEVICES": "0,1,2,3"}
	]
	EOF
	run aah-runner slurm-conf servers.json -o etc --set KillWait=10
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"wrote etc/slurm.conf and etc/gres.conf: 2 nodes, controller gpu1"* ]]
	[[ $output == *"scp -p /etc/munge/munge.key root@10.0.0.12:/etc/munge/munge.key"* ]]
	[[ $output != *"root@10.0.0.11:/etc/munge"* ]]
	grep -qx 'SlurmctldHost=gpu1(10.0.0.11)' etc/slurm.conf
	grep -qx 'KillWait=10' etc/slurm.conf
	[ "$(grep -c '^KillWait=' etc/slurm.conf)" -eq 1 ]
	grep -qx 'NodeName=gpu1 NodeAddr=10.0.0.11 CPUs=64 RealMemory=256000 Gres=gpu:8 State=UNKNOWN' etc/slurm.conf
	grep -qx 'NodeName=gpu2 NodeAddr=10.0.0.12 CPUs=64 Gres=gpu:4 State=UNKNOWN' etc/slurm.conf
	grep -qx 'NodeName=gpu2 Name=gpu File=/dev/nvidia\[0-3\]' etc/gres.conf
}

@test "slurm-conf --probe: what the list leaves out is asked of the node (its slurmd -C)" {
	[ -x /usr/sbin/slurmd ] || skip "no slurmd here (make deps)"
	# the probe: CMD <node> slurmd -C, run here instead of over ssh
	printf '#!/bin/sh\nshift\ncase $1 in slurmd) exec /usr/sbin/slurmd -C ;; esac\nexit 127\n' > here
	chmod +x here
	echo "127.0.0.1 gpus=2" > hosts.txt
	run aah-runner slurm-conf hosts.txt --probe "$PWD/here" -o .
	echo "$output"
	[ "$status" -eq 0 ]
	name=$(/usr/sbin/slurmd -C | sed -n 's/^NodeName=\([^ ]*\) .*/\1/p')
	cpus=$(/usr/sbin/slurmd -C | sed -n 's/.* CPUs=\([0-9]*\) .*/\1/p')
	grep -q "^NodeName=$name NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=[0-9]* Gres=gpu:2 State=UNKNOWN$" slurm.conf
	# a name the node does not call itself is refused: slurmd finds its entry by it
	echo "not-$name 127.0.0.1" > hosts.txt
	run aah-runner slurm-conf hosts.txt --probe "$PWD/here" -o .
	[ "$status" -ne 0 ]
	[[ $output == *"hosts.txt:1: node 'not-$name' calls itself '$name' (slurmd -C)"* ]]
}

@test "slurm-conf: a bad host list is refused naming its file, line and field; nothing is written" {
	printf 'gpu1 10.0.0.11 cpus=64\ngpu2 10.0.0.12 cpus=lots\n' > hosts.txt
	run aah-runner slurm-conf hosts.txt -o out
	[ "$status" -eq 2 ]
	[[ $output == *"hosts.txt:2: 'cpus': must be an integer from 1 to "*", got 'lots'"* ]]
	[ ! -e out/slurm.conf ]
	printf '[{"ip": "10.0.0.11", "cpus": 8},\n {"ip": "10.0.0.12", "gpu": 8}]\n' > servers.json
	run aah-runner slurm-conf servers.json -o out
	[ "$status" -eq 2 ]
	[[ $output == *"servers.json:2:22: '[1].gpu': is not a known key"* ]]
	printf 'gpu1 10.0.0.11\n' > hosts.txt
	run aah-runner slurm-conf hosts.txt -o out
	[ "$status" -eq 2 ]
	[[ $output == *"hosts.txt:1: node 'gpu1' has no cpus=N; give it, or --probe to ask the node"* ]]
	run aah-runner slurm-conf
	[ "$status" -eq 2 ]
	[[ $output == *"which host list?"* ]]
	[ ! -e out/slurm.conf ]
}
