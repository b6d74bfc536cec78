#!/usr/bin/python3
"""Run a rendered trial Job's pods as containers on a Docker engine.

usage: run_pods.py DOCKER JOB.json USERHOME

No Kubernetes API server exists here: this stands in for the Job controller
and the kubelet, and for nothing else. For every completion index of the
Indexed Job in JOB.json (a Job or a v1 List), the pod's one container runs
on the engine (`DOCKER run`) with exactly the image, args, env and user the
rendered Job gives it: env from the completion-index fieldRef and $(VAR)
expansion done as the kubelet does (tests/fixtures/k8s/kubelet_sim.py),
USERHOME mounted at the volume's mountPath, a memory /dev/shm of the
emptyDir's sizeLimit as the engine's --shm-size, hostPath volumes as bind
mounts (read-only where the mount is). The pods' DNS names (the
headless Service's, or the single pod's) resolve to 127.0.0.1, since every
container shares the host's network. Prints one line per pod, exits with
the first non-zero pod status.

Pods that ask for their pod IP (fieldRef status.podIP: trial.launcher mpi,
whose sshd listens there) each get a loopback address of their own,
127.A.B.<index+1> with A.B drawn at random per run (two runs at the same
time do not meet), as status.podIP and as the address of their DNS name;
their hostname is "<job>-<index>", as the Job controller sets it. A
secret volume is made as the kubelet makes it: the Secret's data (from
JOB.json) decoded into files owned by root and the pod's fsGroup, mode
defaultMode plus group read, mounted read-only.

RUN_PODS_INDEXES=0,2 starts only the pods of these completion indexes: the
others stand for pods the scheduler never placed.
"""
import base64
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "k8s"))
from kubelet_sim import pod_env  # noqa: E402


def secret_volume(job_file, secrets, vs, sec):
    """The files of a secret volume, as the kubelet writes them with fsGroup."""
    d = secrets[vs["secretName"]]
    path = os.path.abspath(f"{job_file}.{vs['secretName']}")
    os.makedirs(path, exist_ok=True)
    group = sec.get("fsGroup", 0)
    for key, value in d.get("data", {}).items():
        f = os.path.join(path, key)
        with open(f, "wb") as out:
            out.write(base64.b64decode(value, validate=True))
        os.chown(f, 0, group)
        os.chmod(f, vs.get("defaultMode", 0o644) | 0o440)
    os.chown(path, 0, group)
    os.chmod(path, 0o2750)
    return path


def main(argv):
    docker, job_file, userhome = argv
    docs = json.load(open(job_file))
    items = docs["items"] if docs.get("kind") == "List" else [docs]
    job = next(d for d in items if d["kind"] == "Job")
    pod = job["spec"]["template"]["spec"]
    c = pod["containers"][0]
    mount = c["volumeMounts"][0]["mountPath"]
    sec = pod.get("securityContext", {})
    user = f"{sec.get('runAsUser', 0)}:{sec.get('runAsGroup', 0)}"
    secrets = {d["metadata"]["name"]: d for d in items if d["kind"] == "Secret"}
    wants_ip = any(e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "status.podIP"
                   for e in c.get("env", []))
    rnd = random.SystemRandom()
    net = f"127.{rnd.randint(64, 250)}.{rnd.randint(1, 250)}"
    n = job["spec"]["completions"]
    pod_ips = [f"{net}.{i + 1}" if wants_ip else "127.0.0.1" for i in range(n)]
    procs = []
    only = os.environ.get("RUN_PODS_INDEXES")
    for index in range(n):
        if only is not None and str(index) not in only.split(","):
            continue
        env, args = pod_env(c, index, pod_ips[index])
        cmd = [docker, "run", "--rm", "--network", "host", "--user", user,
               "--name", f"{job['metadata']['name']}-{index}",
               "--label", f"aah.io/experiment={job['metadata']['labels']['aah.io/experiment']}",
               "-v", f"{userhome}:{mount}"]
        vols = {v["name"]: v for v in pod.get("volumes", [])}
        for m in c["volumeMounts"][1:]:
            v = vols[m["name"]]
            if m["mountPath"] == "/dev/shm" and v.get("emptyDir", {}).get("medium") == "Memory":
                cmd += ["--shm-size", v["emptyDir"]["sizeLimit"].replace("i", "").lower()]
            elif "hostPath" in v:
                cmd += ["-v", f"{v['hostPath']['path']}:{m['mountPath']}" + (":ro" if m.get("readOnly") else "")]
            elif "secret" in v:
                cmd += ["-v", f"{secret_volume(job_file, secrets, v['secret'], sec)}:{m['mountPath']}:ro"]
        for i, h in enumerate(env.get("VC_WORKER_HOSTS", "").split(",")):
            if h:
                cmd += ["--add-host", f"{h}:{pod_ips[i]}"]
        if wants_ip:
            cmd += ["--hostname", f"{job['metadata']['name']}-{index}"]
        for k, v in env.items():
            cmd += ["-e", f"{k}={v}"]
        cmd += [c["image"]] + args
        log = open(f"{job_file}.pod{index}.log", "w")
        procs.append((index, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)))
    status = 0
    for index, p in procs:
        rc = p.wait()
        print(f"pod {job['metadata']['name']}-{index}: exit {rc}")
        status = status or rc
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
