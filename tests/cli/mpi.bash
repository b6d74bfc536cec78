# The 2-node trial of ModelArts' MPI form (trial.launcher: mpi) that
# launch_mpi.bats (local backend) and docker_mpi.bats (containers) run:
# each rank says its rank and its host, then trains a little Fashion-MNIST.

# mpi_config PLATFORM [FILE]: the config (default c.yml); 'launcher: mpi'
# is on line 10.
mpi_config() {
	cat > "${2:-c.yml}" <<EOF2
experimentName: mpi
maxTrialNum: 1
trialConcurrency: 1
trainingServicePlatform: $1
searchSpacePath: $AAH_ROOT/examples/quickstart-search-space.json
tuner:
  builtinTunerName: Random
trial:
  nodes: 2
  launcher: mpi
  command: echo "mpi rank \$OMPI_COMM_WORLD_RANK of \$OMPI_COMM_WORLD_SIZE";
           echo "mpi rank \$OMPI_COMM_WORLD_RANK on \$(hostname)";
           exec aah-trial --dataset /usr/share/datasets/fashion-mnist --threads 1
           --arch $AAH_ROOT/examples/fashion-mnist-cnn.json --batch_size 32
           --warmup_1 1 --train_samples 256 --val_samples 128
EOF2
}
