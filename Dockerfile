# aah images: `make images` builds both targets (BASE=cpu by default there).
#   trial   the trainer (aah-trial) plus aah-runner for in-container search
#           (tuner.placement: trial); entrypoint docker/trial-entrypoint.sh
#           prints the launch contract and execs.
#   master  aah-runner plus kubectl; runs `aah-runner create` on a mounted
#           config.yml and submits the trials (Kubernetes Jobs, or sibling
#           containers through a mounted Docker socket with the docker
#           backend) (docker/master-entrypoint.sh, k8s/master-job.yaml).
#
# BASE picks the family of base images:
#   cuda  (default) GPU clusters: NVIDIA's images, tags in their
#         <cuda>-cudnn-<devel|runtime>-ubuntu<version> form; aah-trial is
#         built with CUDA, cuDNN and NCCL.
#   cpu   CPU-only nodes and the container quick start: Debian bookworm
#         (DEBIAN_IMAGE; the tests pass an offline-made aah-base:bookworm),
#         aah-trial on oneDNN, Fashion-MNIST (Debian's package) in the image.
#   cudalocal  the cuda trial image where no registry serves nvidia/cuda:
#         Debian bookworm (DEBIAN_IMAGE) with the CUDA toolkit of the build
#         machine, staged as docker/cuda by `make images IMAGE_BASE=cudalocal`
#         (docker/cuda-context.sh: nvcc, headers, and the cudart, cublas,
#         cublasLt, cudnn*, nccl and nvrtc libraries) and made an image of
#         its own, CUDA_TOOLKIT_IMAGE, that the cudalocal stages copy from:
#         the 1.7 GB stay out of this build's context (.dockerignore), so
#         the cpu builds never carry them and a source change rebuilds no
#         layer of CUDA libraries. The trial image gets those libraries in
#         /usr/local/cuda/lib64.
# Only the stages of the chosen BASE are built (BuildKit: DOCKER_BUILDKIT=1).
#
# KUBECTL=download (default) fetches kubectl KUBECTL_VERSION and checks it
# against its published sha256; KUBECTL=context takes the binary at
# docker/kubectl in the build context instead (git ignores it; `make images
# KUBECTL_BIN=/path/to/kubectl` puts it there), for machines that reach no
# download server.
# The master image also holds the docker CLI of the builder's distribution
# (from its docker.io package), for the docker backend through a mounted
# engine socket.

ARG BASE=cuda
ARG KUBECTL=download
ARG CUDA_VERSION=13.0.2
ARG UBUNTU_VERSION=24.04
ARG DEBIAN_IMAGE=debian:bookworm
ARG KUBECTL_VERSION=v1.32.2
ARG CUDA_TOOLKIT_IMAGE=aah-cuda-toolkit:local

# cudalocal: the staged toolkit (docker/cuda as an image, Makefile)
FROM ${CUDA_TOOLKIT_IMAGE} AS cuda-toolkit

# ---- builders: both binaries ----------------------------------------------------
# cuda: nvcc, cuDNN and NCCL headers.
FROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu${UBUNTU_VERSION} AS builder-cuda
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential pkg-config \
        libyaml-dev libcjson-dev libarchive-dev libssl-dev libzstd-dev zlib1g-dev \
        libdnnl-dev libjpeg-turbo8-dev \
    && rm -rf /var/lib/apt/lists/*
ENV AAH_CUDA=1 CUDA_HOME=/usr/local/cuda

# cpu: Debian bookworm, the libraries scripts/deps.sh builds with, and the
# C toolchain with g++: every build compiles the CUDA kernel families for
# the host too (kernels/cudahost), as C++ that needs no C++ runtime. dpkg's
# unsafe-io: no fsync per file in a throw-away build stage.
FROM ${DEBIAN_IMAGE} AS builder-cpu
RUN echo force-unsafe-io > /etc/dpkg/dpkg.cfg.d/aah-unsafe-io \
    && apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        gcc g++ make libc6-dev \
        libyaml-dev libcjson-dev libarchive-dev libssl-dev libzstd-dev zlib1g-dev \
        libdnnl-dev libjpeg62-turbo-dev \
    && rm -rf /var/lib/apt/lists/*
ENV AAH_CUDA=0

# cudalocal: the cpu builder (its layers are shared with the cpu images;
# its g++ serves nvcc too) and the staged toolkit.
FROM builder-cpu AS builder-cudalocal
COPY --from=cuda-toolkit / /usr/local/cuda/
ENV AAH_CUDA=1 CUDA_HOME=/usr/local/cuda

FROM builder-${BASE} AS builder
WORKDIR /src
# The whole tree (minus .dockerignore): the Makefile finds sources by wildcard,
# so a new module folder builds without an edit here.
COPY . .
RUN make config-info \
    && make -j"$(nproc)" all \
    && make install DESTDIR=/out PREFIX=/usr/local \
    && docker/collect-libs.sh /out/usr/local/lib/aah /out/usr/local/bin/aah-runner /out/usr/local/bin/aah-trial

# ---- kubectl: downloaded and checked against its published sha256, or taken
# from the build context -----------------------------------------------------------
FROM ubuntu:${UBUNTU_VERSION} AS kubectl-download
ARG KUBECTL_VERSION
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && curl -fsSLo /kubectl "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/amd64/kubectl" \
    && curl -fsSLo /kubectl.sha256 "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/amd64/kubectl.sha256" \
    && echo "$(cat /kubectl.sha256)  /kubectl" | sha256sum -c - \
    && chmod 0755 /kubectl

FROM ${DEBIAN_IMAGE} AS kubectl-context
COPY docker/ /tmp/context/
RUN test -x /tmp/context/kubectl \
        || { echo "KUBECTL=context: no executable docker/kubectl in the build context" >&2; exit 1; } \
    && cp /tmp/context/kubectl /kubectl && rm -rf /tmp/context

FROM kubectl-${KUBECTL} AS kubectl

# ---- the docker CLI of the distribution's docker.io, the client alone (its
# daemon, containerd and runc are not needed to talk to a mounted socket) ------
FROM builder-${BASE} AS docker-cli
RUN apt-get update && cd /tmp && apt-get download docker.io \
    && dpkg-deb -x docker.io_*.deb /tmp/docker.io && cp /tmp/docker.io/usr/bin/docker /docker \
    && rm -rf /tmp/docker.io* /var/lib/apt/lists/*

# ---- runtime bases ------------------------------------------------------------------
# Both trial bases carry sshd and Open MPI's mpirun (the distribution's
# openssh-server and openmpi-bin) for trial.launcher: mpi, where the launcher
# container runs mpirun over ssh to workers that run sshd (entrypoint mode
# AAH_SSHD; keys come per trial from the runner, none are in the image: the
# host keys the package generates are removed).
#
# Both also carry the distribution's python3, for trials written for NNI:
# aah's nni module (runner/nni/python) is on its path (below, in the trial
# stage), after the site directories, so an NNI the image adds wins.
FROM nvidia/cuda:${CUDA_VERSION}-cudnn-runtime-ubuntu${UBUNTU_VERSION} AS trial-base-cuda
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        openssh-server openssh-client openmpi-bin python3 \
    && rm -rf /var/lib/apt/lists/* /etc/ssh/ssh_host_*
FROM ubuntu:${UBUNTU_VERSION} AS master-base-cuda

# The Debian trial bases (cudalocal, cpu) share that layer: built for one
# image, it is cached for the other.
FROM ${DEBIAN_IMAGE} AS trial-base-debian
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y -o Dpkg::Options::=--force-unsafe-io --no-install-recommends \
        openssh-server openssh-client openmpi-bin python3 \
    && rm -rf /var/lib/apt/lists/* /etc/ssh/ssh_host_*

# cudalocal: no data set, and the runtime libraries of the staged toolkit
# (the driver's libcuda comes from the host, through the NVIDIA container
# runtime, as on nvidia/cuda's images).
FROM trial-base-debian AS trial-base-cudalocal
COPY --from=cuda-toolkit /lib64/ /usr/local/cuda/lib64/
RUN echo /usr/local/cuda/lib64 > /etc/ld.so.conf.d/cuda.conf && ldconfig
FROM ${DEBIAN_IMAGE} AS master-base-cudalocal

# cpu: Fashion-MNIST (Debian's dataset-fashion-mnist) in the image.
FROM trial-base-debian AS trial-base-cpu
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y -o Dpkg::Options::=--force-unsafe-io --no-install-recommends \
        dataset-fashion-mnist \
    && rm -rf /var/lib/apt/lists/*
FROM ${DEBIAN_IMAGE} AS master-base-cpu

# ---- trial: aah-trial + aah-runner ---------------------------------------------------
# aah's password is '*' (none matches, but not locked: sshd without PAM
# refuses a locked account even for a key); /run/sshd is sshd's privilege
# separation directory when it runs as root.
FROM trial-base-${BASE} AS trial
RUN (userdel -r ubuntu 2>/dev/null || true) \
    && groupadd --gid 1000 aah && useradd --uid 1000 --gid 1000 --create-home --password '*' aah \
    && mkdir -p /userhome /run/sshd && chown 1000:1000 /userhome && chmod 0755 /run/sshd
COPY --from=builder /out/usr/local/bin/aah-trial /out/usr/local/bin/aah-runner /usr/local/bin/
COPY --from=builder /out/usr/local/lib/aah/ /usr/local/lib/aah/
COPY docker/trial-entrypoint.sh /usr/local/bin/aah-trial-entrypoint
RUN echo /usr/local/lib/aah > /etc/ld.so.conf.d/aah.conf && ldconfig \
    && mkdir -p /usr/lib/python3/dist-packages \
    && echo /usr/local/lib/aah/python > /usr/lib/python3/dist-packages/aah-nni.pth \
    && python3 -c 'import nni, nni.trial; assert nni.__version__.endswith("+aah")' \
    && aah-runner --version
ENV AAH_WORKDIR=/userhome/aah-work
USER 1000:1000
WORKDIR /home/aah
ENTRYPOINT ["/usr/local/bin/aah-trial-entrypoint"]
CMD ["aah-trial", "--help"]

# ---- master: aah-runner + kubectl -----------------------------------------------------
FROM master-base-${BASE} AS master
RUN (userdel -r ubuntu 2>/dev/null || true) \
    && groupadd --gid 1000 aah && useradd --uid 1000 --gid 1000 --create-home aah \
    && mkdir -p /userhome && chown 1000:1000 /userhome
COPY --from=builder /out/usr/local/bin/aah-runner /usr/local/bin/
COPY --from=builder /out/usr/local/lib/aah/ /usr/local/lib/aah/
COPY --from=kubectl /kubectl /usr/local/bin/kubectl
COPY --from=docker-cli /docker /usr/local/bin/docker
COPY docker/master-entrypoint.sh /usr/local/bin/aah-master
RUN echo /usr/local/lib/aah > /etc/ld.so.conf.d/aah.conf && ldconfig \
    && aah-runner --version && kubectl version --client && docker --version
ENV AAH_WORKDIR=/userhome/aah-work
USER 1000:1000
WORKDIR /home/aah
ENTRYPOINT ["/usr/local/bin/aah-master"]
CMD ["/etc/aah/config.yml"]
