# syntax=docker/dockerfile:1
# aah images: `make images` builds both targets.
#   trial   the trainer (aah-trial, CUDA + cuDNN + NCCL) plus aah-runner for
#           in-container search (tuner.placement: trial); entrypoint
#           docker/trial-entrypoint.sh prints the launch contract and execs.
#   master  aah-runner plus kubectl; runs `aah-runner create` on a mounted
#           config.yml and submits one Kubernetes Job per trial
#           (docker/master-entrypoint.sh, k8s/master-job.yaml).
# Tags follow NVIDIA's <cuda>-cudnn-<devel|runtime>-ubuntu<version> form.

ARG CUDA_VERSION=13.0.2
ARG UBUNTU_VERSION=24.04
ARG KUBECTL_VERSION=v1.32.2

# ---- builder: both binaries, with CUDA (nvcc, cuDNN and NCCL headers) -------
FROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu${UBUNTU_VERSION} AS builder
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential pkg-config \
        libyaml-dev libcjson-dev libarchive-dev libssl-dev libzstd-dev zlib1g-dev \
        libdnnl-dev libjpeg-turbo8-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The whole tree (minus .dockerignore): the Makefile finds sources by wildcard,
# so a new module folder builds without an edit here.
COPY . .
RUN make config-info \
    && make -j"$(nproc)" AAH_CUDA=1 CUDA_HOME=/usr/local/cuda all \
    && make install DESTDIR=/out PREFIX=/usr/local \
    && docker/collect-libs.sh /out/usr/local/lib/aah /out/usr/local/bin/aah-runner /out/usr/local/bin/aah-trial

# ---- kubectl, checked against its published sha256 ----------------------------
FROM ubuntu:${UBUNTU_VERSION} AS kubectl
ARG KUBECTL_VERSION
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && curl -fsSLo /kubectl "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/amd64/kubectl" \
    && curl -fsSLo /kubectl.sha256 "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/amd64/kubectl.sha256" \
    && echo "$(cat /kubectl.sha256)  /kubectl" | sha256sum -c - \
    && chmod 0755 /kubectl

# ---- trial: cuDNN/NCCL runtime + aah-trial + aah-runner -----------------------
FROM nvidia/cuda:${CUDA_VERSION}-cudnn-runtime-ubuntu${UBUNTU_VERSION} AS trial
RUN (userdel -r ubuntu 2>/dev/null || true) \
    && groupadd --gid 1000 aah && useradd --uid 1000 --gid 1000 --create-home aah
COPY --from=builder /out/usr/local/bin/aah-trial /out/usr/local/bin/aah-runner /usr/local/bin/
COPY --from=builder /out/usr/local/lib/aah/ /usr/local/lib/aah/
COPY docker/trial-entrypoint.sh /usr/local/bin/aah-trial-entrypoint
RUN echo /usr/local/lib/aah > /etc/ld.so.conf.d/aah.conf && ldconfig \
    && aah-runner --version
ENV AAH_WORKDIR=/userhome/aah-work
USER 1000:1000
WORKDIR /home/aah
ENTRYPOINT ["/usr/local/bin/aah-trial-entrypoint"]
CMD ["aah-trial", "--help"]

# ---- master: aah-runner + kubectl ------------------------------------------------
FROM ubuntu:${UBUNTU_VERSION} AS master
RUN (userdel -r ubuntu 2>/dev/null || true) \
    && groupadd --gid 1000 aah && useradd --uid 1000 --gid 1000 --create-home aah
COPY --from=builder /out/usr/local/bin/aah-runner /usr/local/bin/
COPY --from=builder /out/usr/local/lib/aah/ /usr/local/lib/aah/
COPY --from=kubectl /kubectl /usr/local/bin/kubectl
COPY docker/master-entrypoint.sh /usr/local/bin/aah-master
RUN echo /usr/local/lib/aah > /etc/ld.so.conf.d/aah.conf && ldconfig \
    && aah-runner --version && kubectl version --client
ENV AAH_WORKDIR=/userhome/aah-work
USER 1000:1000
WORKDIR /home/aah
ENTRYPOINT ["/usr/local/bin/aah-master"]
CMD ["/etc/aah/config.yml"]
