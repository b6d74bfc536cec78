#!/usr/bin/python3
"""The scale harness (docs/scale.md): one experiment of the stand-in trainer
(aah-scale-trial) at a given size, measured; or the table of such runs.

usage:
  scale.py run --slots S --trials N [--placement master|trial] [--compress C]
               [--kill-at K] [--class-arg key=value ...]
               [--platform local|slurm|kubernetes] [--poll DURATION]
               [--extra-yaml FILE] [--runner CMD] --out RESULT.json
  scale.py table RESULT.json ...        (the markdown rows of docs/scale.md)
  scale.py analyze RESULT.json          (a kept run's journal figures, again)

`run` writes a config, runs `aah-runner create` in the foreground and
samples the runner's /proc files (CPU, RSS, bytes written) while it runs;
with --kill-at it SIGKILLs the runner once K trials exist and times
`aah-runner resume`. At the end it times `status`, `report` and `collect`,
and reads the journal and the trials' logs for the slots' idle time and the
proposals' latency. Everything it measures is in RESULT.json; it asserts
nothing about speed (tests/scale/scale_small.bats checks structure).
"""
import argparse
import glob
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TICK = os.sysconf("SC_CLK_TCK")


def build_dir():
    return os.path.join(ROOT, os.environ.get("AAH_BUILD", "build"))


# ---- sampling the runner ----------------------------------------------------

class Sampler(threading.Thread):
    """Reads /proc/<pid>/{stat,status,io} every `every` seconds: the last
    values (CPU ticks and bytes are cumulative) and the highest RSS."""

    def __init__(self, pid, every=0.5):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.cpu_s = 0.0
        self.rss_max = 0
        self.wchar = self.rchar = self.write_bytes = 0
        self.halt = threading.Event()

    def sample(self):
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                st = f.read().rsplit(")", 1)[1].split()
            self.cpu_s = (int(st[11]) + int(st[12])) / TICK   # utime, stime
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        self.rss_max = max(self.rss_max, int(line.split()[1]) * 1024)
            with open("/proc/%d/io" % self.pid) as f:
                io = dict(l.split(": ") for l in f.read().splitlines())
            self.wchar, self.rchar = int(io["wchar"]), int(io["rchar"])
            self.write_bytes = int(io["write_bytes"])
        except (OSError, IndexError, ValueError, KeyError):
            pass

    def run(self):
        while not self.halt.wait(self.every):
            self.sample()


def timed(cmd, env, out=None):
    """Run cmd; its wall and CPU seconds, exit status, output bytes."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out:
        with open(out, "wb") as f:
            f.write(p.stdout)
    return {"wall_s": wall, "cpu_s": cpu, "rc": p.returncode, "output_bytes": len(p.stdout),
            "output_lines": p.stdout.count(b"\n")}


# ---- the journal and the trials' logs ----------------------------------------

def journal(expdir):
    ev = []
    with open(os.path.join(expdir, "journal.jsonl")) as f:
        for line in f:
            try:
                ev.append(json.loads(line))
            except ValueError:
                pass      # a torn last line
    return ev


PROBE = re.compile(r"aah-scale-trial: trial (\d+) attempt (\d+) rank (\d+) of \d+: "
                   r"before_main_s=([-\d.]+) before_main_rchar=(-?\d+) "
                   r"before_main_wchar=(-?\d+) start=([\d.]+)")
END = re.compile(r"aah-scale-trial: \S+ after \d+ epochs, best [\d.]+; end=([\d.]+)")


def trial_logs(expdir):
    """Per trial seq: its proposers' probes (rank 0 of each launch) and the
    end of its last launch's rank 0, from trial.log."""
    probes, ends = {}, {}
    for log in glob.glob(os.path.join(expdir, "trials", "*", "trial.log")):
        seq = int(os.path.basename(os.path.dirname(log)))
        with open(log, errors="replace") as f:
            for line in f:
                m = PROBE.search(line)
                if m and m.group(3) == "0":
                    probes.setdefault(seq, []).append(
                        (float(m.group(4)), int(m.group(5)), int(m.group(6)),
                         float(m.group(7))))
                m = END.search(line)
                if m:
                    ends[seq] = float(m.group(1))
    return probes, ends


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def slot_idle(ev, ends, slots):
    """Master-caused idle: per slot, the time from the runner's start (or
    the end of the slot's last trial) to its next submission, while trials
    were still to come; the busy time: submission to the trial's end."""
    started = [e["ts"] for e in ev if e["event"] == "runner_started"]
    finished = {}
    subs = {}
    for e in ev:
        if e["event"] == "trial_submitted":
            subs.setdefault(e["slot"], []).append((e["ts"], e["trial_seq"]))
        elif e["event"] == "trial_finished":
            finished[e["trial_seq"]] = e["ts"]
    idle = busy = first = 0.0   # first: before each slot's first trial (the ramp-up)
    gaps = []
    detect = []
    refill = []   # a slot's trial settled to its next trial submitted
    for slot, s in subs.items():
        s.sort()
        free_at = started[0]
        for k, (ts, seq) in enumerate(s):
            # after a kill the runner was not there to submit: from its restart
            restart = max([r for r in started if r <= ts], default=started[0])
            gap = ts - max(free_at, restart)
            if k > 0 and s[k - 1][1] in finished and finished[s[k - 1][1]] >= restart:
                refill.append(ts - finished[s[k - 1][1]])
            if gap > 0:
                idle += gap
                gaps.append(gap)
                if k == 0:
                    first += gap
            end = ends.get(seq, finished.get(seq, ts))
            if seq in finished and seq in ends:
                detect.append(finished[seq] - ends[seq])
            busy += max(0.0, end - ts)
            free_at = max(end, ts)
    return {"idle_s": idle, "busy_s": busy, "idle_first_wave_s": first,
            "idle_fraction_after_first_wave": ((idle - first) / (idle - first + busy)
                                               if idle - first + busy > 0 else None),
            "idle_fraction": idle / (idle + busy) if idle + busy > 0 else None,
            "idle_gap_p50_s": pct(gaps, 50), "idle_gap_p99_s": pct(gaps, 99),
            "end_to_settle_p50_s": pct(detect, 50), "end_to_settle_p99_s": pct(detect, 99),
            "settle_to_submit_p50_s": pct(refill, 50), "settle_to_submit_p99_s": pct(refill, 99),
            "submits_per_busy_second": busy_rate(ev),
            "slots_used": len(subs), "slots": slots}


def start_figures(ev, probes, ends):
    """What the journal's submission leaves out on a cluster: from each
    `trial_submitted` to its trainer's start (the cluster's release and
    scheduling, or the local rank's release and exec), and the slots' idle
    counted from one trainer's end to the next one's start in the slot,
    past each slot's first trial and not across a kill: what a GPU saw."""
    started = [e["ts"] for e in ev if e["event"] == "runner_started"]
    to_start, by_slot = [], {}
    for e in ev:
        if e["event"] != "trial_submitted":
            continue
        start = min((p[3] for p in probes.get(e["trial_seq"], []) if p[3] >= e["ts"] - 1),
                    default=None)
        if start is not None:
            to_start.append(start - e["ts"])
            by_slot.setdefault(e["slot"], []).append((start, ends.get(e["trial_seq"])))
    idle = busy = 0.0
    for runs in by_slot.values():
        runs.sort()
        for k, (start, end) in enumerate(runs):
            if end is None:
                continue
            busy += max(0.0, end - start)
            prev = runs[k - 1][1] if k else None
            if prev is not None and not any(prev < r < start for r in started):
                idle += max(0.0, start - prev)
    return {"submit_to_start_p50_s": pct(to_start, 50), "submit_to_start_p99_s": pct(to_start, 99),
            "idle_to_start_fraction_after_first_wave": idle / (idle + busy) if idle + busy else None}


SLURM_LOG = re.compile(r"\[(\S+)\] (?:sched: (Allocate) JobId=(\d+)|_job_complete: JobId=(\d+) (done)|"
                       r"sched: _release_job_rec: (release) hold on JobId=(\d+))")


def slurm_figures(cdir, ev, ends):
    """With --platform slurm, slurmctld's log splits a trial's way through
    the cluster: journaled to released (the runner), released to allocated
    (Slurm's scheduler), the trainer's end to the job done (Slurm), the job
    done to settled (the runner's squeue poll). p50 / p99 of each."""
    when = {"Allocate": {}, "done": {}, "release": {}}
    try:
        with open(os.path.join(cdir, "log", "slurmctld.log"), errors="replace") as f:
            for line in f:
                m = SLURM_LOG.match(line)
                if m:
                    what = m.group(2) or m.group(5) or m.group(6)
                    job = m.group(3) or m.group(4) or m.group(7)
                    t = time.mktime(time.strptime(m.group(1)[:19], "%Y-%m-%dT%H:%M:%S"))
                    when[what].setdefault(job, t + float("0" + m.group(1)[19:]))
    except OSError:
        return None
    sub = {e["trial_seq"]: (e["ts"], e["job"]) for e in ev if e["event"] == "trial_submitted"}
    fin = {e["trial_seq"]: e["ts"] for e in ev if e["event"] == "trial_finished"}
    parts = {"journaled_to_released": [], "released_to_allocated": [],
             "trainer_end_to_job_done": [], "job_done_to_settled": []}
    rel, alloc, done = when["release"], when["Allocate"], when["done"]
    for seq, (ts, job) in sub.items():
        if job in rel:
            parts["journaled_to_released"].append(rel[job] - ts)
            if job in alloc:
                parts["released_to_allocated"].append(alloc[job] - rel[job])
        if job in done and seq in ends:
            parts["trainer_end_to_job_done"].append(done[job] - ends[seq])
        if job in done and seq in fin:
            parts["job_done_to_settled"].append(fin[seq] - done[job])
    return {k: {"p50_s": pct(v, 50), "p99_s": pct(v, 99), "n": len(v)} for k, v in parts.items()}


def busy_rate(ev):
    """The runner's submissions a second, over the whole seconds after the
    first wave (its first `slots` submissions) in which it submitted any:
    median and highest. What it sustains while trials end and start."""
    subs = sorted(e["ts"] for e in ev if e["event"] == "trial_submitted")
    per = {}
    for ts in subs[len({e["slot"] for e in ev if e["event"] == "trial_submitted"}):]:
        per[int(ts)] = per.get(int(ts), 0) + 1
    counts = sorted(per.values())
    return {"p50": pct(counts, 50), "max": counts[-1] if counts else None}


def latencies(ev, probes, placement):
    """Proposal latency by history size n (trials created before it). Master:
    trial_submitted's propose_s when the runner journals it, else the time
    from trial_created to trial_submitted; trial: the proposer's time before
    the trainer's main (its probe). A runner that journals propose_s leaves
    it out where no proposal was made for the submission: a trial proposed
    before a kill and submitted by the resumed runner, whose created to
    submitted spans the kill and is no proposal's time (left out here)."""
    out = []
    created = {}
    n = 0
    journals_propose = any("propose_s" in e for e in ev if e["event"] == "trial_submitted")
    for e in ev:
        if e["event"] == "trial_created":
            n += 1
            created[e["trial_seq"]] = (e["ts"], n)
        elif e["event"] == "trial_submitted" and e["trial_seq"] in created:
            ts, at_n = created.pop(e["trial_seq"])
            if placement == "trial":
                p = probes.get(e["trial_seq"])
                if p:
                    out.append((at_n, p[0][0], p[0][2]))
            elif "propose_s" in e or not journals_propose:
                out.append((at_n, e.get("propose_s", e["ts"] - ts), 0))
    return out


def journal_figures(res, ev, probes, ends, n_created):
    """The figures read from the journal and the trials' logs, into res:
    slot idle, the proposals' waits and latency."""
    res["idle"] = slot_idle(ev, ends, res["slots"])
    res["start"] = start_figures(ev, probes, ends)
    if res.get("platform") == "slurm":
        # the cluster's directory beside the workdir: WORK/w/experiments/ID
        res["slurm"] = slurm_figures(os.path.join(
            os.path.dirname(os.path.dirname(os.path.dirname(res["expdir"]))), "cluster"),
            ev, ends)
    waits = [e["proposal_wait_s"] for e in ev
             if e["event"] == "trial_submitted" and "proposal_wait_s" in e]
    res["proposal_waits"] = {"count": len(waits), "sum_s": sum(waits),
                             "p50_s": pct(waits, 50), "p99_s": pct(waits, 99)}
    lat = latencies(ev, probes, res["placement"])
    res["proposal_latency"] = by_decade(lat, n_created)
    res["proposal_latency_all"] = {"p50_s": pct([l for _, l, _ in lat], 50),
                                   "p99_s": pct([l for _, l, _ in lat], 99)}


def by_decade(lat, top):
    rows = []
    edges = [0]
    e = 10
    while e < top:
        edges.append(e)
        e *= 10
    edges.append(top + 1)
    for lo, hi in zip(edges, edges[1:]):
        xs = [l for n, l, _ in lat if lo < n <= hi]
        if xs:
            rows.append({"n_from": lo + 1, "n_to": min(hi, top), "count": len(xs),
                         "p50_s": pct(xs, 50), "p99_s": pct(xs, 99), "max_s": max(xs)})
    return rows


def du(paths):
    total = 0
    for p in paths:
        if os.path.isfile(p):
            total += os.path.getsize(p)
        for root, _, files in os.walk(p):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(root, f))
                except OSError:
                    pass
    return total


# ---- one run ---------------------------------------------------------------------

def write_config(path, a, trial_bin):
    args = {"optimize_mode": "maximize", "input_width": 224, "input_channel": 3,
            "n_output_node": 1000, "start_model": "resnet50", "cooling": 0.5}
    for kv in a.class_arg:
        k, v = kv.split("=", 1)
        args[k] = v
    lines = [
        "experimentName: scale-%dx%d-%s" % (a.slots, a.trials, a.placement),
        "trialConcurrency: %d" % a.slots,
        "maxTrialNum: %d" % a.trials,
        "trainingServicePlatform: %s" % a.platform,
        "seed: %d" % a.seed,
        "tuner:",
        "  builtinTunerName: %s" % a.tuner,
        "  placement: %s" % a.placement,
    ] + (["  inheritWeights: true"] if a.inherit_weights else []) + [
        "  classArgs:",
    ] + ["    %s: %s" % (k, v) for k, v in args.items()] + [
        "trial:",
        "  command: %s%s --compress %g --fsync %d" % (
            "nice -n %d " % a.trainer_nice if a.trainer_nice else "", trial_bin, a.compress,
            a.fsync),
        "  retries: 1",
    ]
    lines += cluster_yaml(a, os.path.dirname(path))
    if a.extra_yaml:
        with open(a.extra_yaml) as f:
            lines.append(f.read().rstrip("\n"))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


# ---- the cluster of --platform slurm / kubernetes ----------------------------------

SLURM_SH = os.path.join(ROOT, "tests", "slurm", "cluster.bash")
CLUSTER_SIM = os.path.join(ROOT, "tests", "fixtures", "k8s", "cluster_sim.py")


def cluster_yaml(a, work):
    """The config's section for the cluster cluster_up starts."""
    if a.platform == "slurm":
        return ["slurm:", "  pollInterval: %s" % a.poll]
    if a.platform == "kubernetes":
        return ["kubernetes:", "  kubectl: %s" % CLUSTER_SIM, "  image: aah-trial:cpu",
                "  mountPath: %s" % work, "  claimName: aah-userhome",
                "  pollInterval: %s" % a.poll]
    return []


def slurm_sh(what, cdir, env):
    return subprocess.run(["bash", "-c", 'source "$0" && %s "$1"' % what, SLURM_SH, cdir],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)


def cluster_up(a, work, env):
    """--platform slurm: real Slurm daemons on loopback (tests/slurm/cluster.bash:
    munged, slurmctld, one slurmd declaring a CPU a slot); kubernetes: the
    simulated cluster of tests/fixtures/k8s/cluster_sim.py (NO API server:
    it plays one, its Job controller and kubelet; the pods are local
    processes). Sets env for the runner; returns the cluster's directory."""
    cdir = os.path.join(work, "cluster")
    if a.platform == "slurm":
        # its own directory: munged must reach it, and work may sit in a
        # directory only root enters (a test's mktemp -d); work/cluster
        # names it
        real = tempfile.mkdtemp(prefix="aah-scale-slurm-")
        os.symlink(real, cdir)
        cdir = real
        r = slurm_sh("slurm_cluster_up", cdir,
                     dict(env, SLURM_TEST_CPUS=str(a.slots), SLURM_TEST_GPUS="0"))
        if r.returncode != 0:
            slurm_sh("slurm_cluster_down", cdir, env)
            sys.exit("scale.py: the Slurm cluster did not come up:\n" + r.stdout)
        env["SLURM_CONF"] = os.path.join(cdir, "slurm.conf")
    elif a.platform == "kubernetes":
        print("scale.py: NO Kubernetes API server runs here: kubectl is %s"
              % os.path.relpath(CLUSTER_SIM, ROOT), file=sys.stderr)
        os.makedirs(cdir, exist_ok=True)
        shutil.copy("/etc/hosts", os.path.join(cdir, "hosts"))
        env["CLUSTER_SIM_DIR"], env["CLUSTER_SIM_GRACE"] = cdir, "5"
    return cdir


def cluster_down(a, cdir, env):
    if a.platform == "slurm":
        slurm_sh("slurm_cluster_down", cdir, env)
    elif a.platform == "kubernetes":
        subprocess.run([CLUSTER_SIM, "--teardown"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def wait_for(pred, timeout, every=0.05):
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if pred():
            return True
        time.sleep(every)
    return False


def count_in(path, what):
    try:
        with open(path, "rb") as f:
            return f.read().count(what)
    except OSError:
        return 0


def run(a):
    runner = a.runner or os.path.join(build_dir(), "aah-runner")
    trial_bin = os.path.join(build_dir(), "scale", "aah-scale-trial")
    work = a.work or tempfile.mkdtemp(prefix="aah-scale-")
    os.makedirs(work, exist_ok=True)
    cfg = os.path.join(work, "config.yml")
    write_config(cfg, a, trial_bin)
    env = dict(os.environ, AAH_WORKDIR=os.path.join(work, "w"))
    cdir = cluster_up(a, work, env)
    try:
        return measure(a, runner, work, cfg, env)
    finally:
        cluster_down(a, cdir, env)
        if not a.keep:
            shutil.rmtree(cdir, ignore_errors=True)
            shutil.rmtree(work, ignore_errors=True)


def measure(a, runner, work, cfg, env):
    res = {"slots": a.slots, "trials": a.trials, "placement": a.placement,
           "platform": a.platform, "poll": a.poll if a.platform != "local" else None,
           "slurm_sched": os.environ.get("SLURM_TEST_SCHED") if a.platform == "slurm" else None,
           "compress": a.compress, "tuner": a.tuner,
           "class_args": a.class_arg, "inherit_weights": a.inherit_weights,
           "fsync": a.fsync, "trainer_nice": a.trainer_nice,
           "load_before": os.getloadavg(), "machine": machine()}
    t0 = time.monotonic()
    p = subprocess.Popen([runner, "create", "-c", cfg, "-q"], env=env,
                         stdout=subprocess.PIPE, stderr=open(os.path.join(work, "runner.err"), "w"))
    sampler = Sampler(p.pid)
    sampler.start()
    expdir = None
    exps = os.path.join(work, "w", "experiments")
    wait_for(lambda: os.path.isdir(exps) and [d for d in os.listdir(exps) if not d.startswith(".")], 60)
    expdir = os.path.join(exps, [d for d in os.listdir(exps) if not d.startswith(".")][0])
    jpath = os.path.join(expdir, "journal.jsonl")
    cpu_before_kill = 0.0
    if a.kill_at:
        wait_for(lambda: count_in(jpath, b'"trial_created"') >= a.kill_at or p.poll() is not None,
                 a.timeout)
        sampler.sample()
        cpu_before_kill = sampler.cpu_s
        res["killed_at_trials"] = count_in(jpath, b'"trial_created"')
        res["running_at_kill"] = count_in(jpath, b'"trial_submitted"') - count_in(jpath, b'"trial_finished"')
        p.send_signal(signal.SIGKILL)
        p.wait()
        sampler.halt.set()
        before = count_in(jpath, b'"runner_started"')
        t_kill = time.monotonic()
        p = subprocess.Popen([runner, "resume", os.path.basename(expdir), "-q"], env=env,
                             stdout=subprocess.PIPE,
                             stderr=open(os.path.join(work, "resume.err"), "w"))
        sampler2 = Sampler(p.pid)
        sampler2.start()
        subs0 = count_in(jpath, b'"trial_submitted"')
        wait_for(lambda: count_in(jpath, b'"runner_started"') > before or p.poll() is not None, 600)
        res["resume_started_s"] = time.monotonic() - t_kill
        wait_for(lambda: count_in(jpath, b'"trial_submitted"') > subs0 or p.poll() is not None, 600)
        res["resume_first_submit_s"] = time.monotonic() - t_kill
        sampler2.sample()
        res["resume_cpu_to_first_submit_s"] = sampler2.cpu_s
        sampler = sampler2
    try:
        p.wait(timeout=a.timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        res["timed_out"] = True
    sampler.halt.set()
    sampler.sample()
    res["runner_rc"] = p.returncode
    res["wall_s"] = time.monotonic() - t0
    res["runner_cpu_s"] = cpu_before_kill + sampler.cpu_s
    res["runner_rss_max_bytes"] = sampler.rss_max
    res["runner_wchar_bytes"] = sampler.wchar
    res["load_after"] = os.getloadavg()

    ev = journal(expdir)
    probes, ends = trial_logs(expdir)
    n_created = sum(1 for e in ev if e["event"] == "trial_created")
    states = {}
    for e in ev:
        if e["event"] == "trial_finished":
            states[e["trial_seq"]] = e["state"]
    res["trials_created"] = n_created
    res["trials_settled"] = len(states)
    res["states"] = {s: list(states.values()).count(s) for s in set(states.values())}
    res["expdir"] = expdir
    journal_figures(res, ev, probes, ends, n_created)
    proposer_w = sum(p[0][2] for p in probes.values() if p and p[0][2] > 0)
    proposer_r = sum(p[0][1] for p in probes.values() if p and p[0][1] > 0)
    n = max(1, n_created)
    res["bytes_per_trial"] = {
        "journal": os.path.getsize(jpath) / n,
        "tuner_cache_file": (os.path.getsize(os.path.join(expdir, "tuner.cache"))
                             if os.path.exists(os.path.join(expdir, "tuner.cache")) else 0),
        "trial_dirs": du([os.path.join(expdir, "trials")]) / n,
        "trial_logs": du(glob.glob(os.path.join(expdir, "trials", "*", "trial.log"))) / n,
        "runner_written": sampler.wchar / n,
        "proposers_written": proposer_w / n,
        "proposers_read": proposer_r / n,
    }
    end = {}
    end["status"] = timed([runner, "status", os.path.basename(expdir)], env,
                          os.path.join(work, "status.txt"))
    end["report"] = timed([runner, "report", os.path.basename(expdir)], env,
                          os.path.join(work, "report.txt"))
    html = os.path.join(expdir, "report.html")
    end["report"]["html_bytes"] = os.path.getsize(html) if os.path.exists(html) else 0
    end["collect"] = timed([runner, "collect", os.path.basename(expdir)], env,
                           os.path.join(work, "collect.txt"))
    arch = glob.glob(os.path.join(expdir, "*-logs.tar.zst"))
    end["collect"]["archive_bytes"] = os.path.getsize(arch[0]) if arch else 0
    res["end_commands"] = end
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0 if res["runner_rc"] == 0 else 1


def machine():
    """The CPU by name, family and model (a virtual machine's name may be
    only the vendor's: "AMD EPYC" is Zen 3 at family 25 model 1, Zen 4 at
    model 17), and its widest vector ISA."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                info.setdefault(k.strip(), v.strip())
                if k.strip() == "flags":
                    break
    except OSError:
        pass
    flags = info.get("flags", "").split()
    return {"cpu": info.get("model name", "?"), "family": info.get("cpu family"),
            "model": info.get("model"),
            "isa": next((i for i in ("amx_tile", "avx512_bf16", "avx512f", "avx2") if i in flags),
                        None),
            "cpus": os.cpu_count(),
            "mem_gib": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30}


# ---- the table ----------------------------------------------------------------------

def fmt(x, unit="", nd=2):
    if x is None:
        return "-"
    if unit == "B":
        for u in ("B", "KB", "MB", "GB"):
            if abs(x) < 1000 or u == "GB":
                return ("%.0f %s" % (x, u)) if u == "B" else ("%.1f %s" % (x, u))
            x /= 1000.0
    return ("%." + str(nd) + "f%s") % (x, unit)


def table(paths):
    print("| slots | n | tuner on, platform | compress | wall | slot idle: all / after the first wave | "
          "trainer end to settled p50 / p99 | settled to the slot's next submitted p50 / p99; "
          "submissions a busy second p50 / max | proposal p50 / p99 (last decade of n) | "
          "slots that waited for a proposal | runner CPU | runner RSS | "
          "bytes per trial: journal, trial dir, runner writes | status | report (html) | collect | "
          "submitted to the trainer's start p50 / p99; slot idle from end to start, after the "
          "first wave |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p in paths:
        with open(p) as f:
            r = json.load(f)
        last = r["proposal_latency"][-1] if r["proposal_latency"] else {}
        b, e, i, st = r["bytes_per_trial"], r["end_commands"], r["idle"], r.get("start", {})
        w = r.get("proposal_waits")
        rate = i.get("submits_per_busy_second") or {}
        print("| %d | %d | %s | %g | %s | %s / %s | %s / %s | %s / %s; %s / %s | %s / %s (%s / %s) | "
              "%s | %s | %s | "
              "%s, %s, %s | %s | %s (%s) | %s | %s / %s; %s |" % (
                  r["slots"], r["trials_created"], r["placement"] + (
                      "" if r.get("platform", "local") == "local"
                      else ", %s (poll %s%s)" % (r["platform"], r.get("poll"), (
                          ", " + r["slurm_sched"]) if r.get("slurm_sched") else "")) + (
                      ", inheritWeights" if r.get("inherit_weights") else ""), r["compress"],
                  fmt(r["wall_s"], " s", 0),
                  fmt(100 * (i["idle_fraction"] or 0), "%", 1),
                  fmt(100 * i["idle_fraction_after_first_wave"], "%", 1)
                  if i.get("idle_fraction_after_first_wave") is not None else "-",
                  fmt(i["end_to_settle_p50_s"], " s", 2), fmt(i["end_to_settle_p99_s"], " s", 2),
                  fmt(i.get("settle_to_submit_p50_s"), " s", 2),
                  fmt(i.get("settle_to_submit_p99_s"), " s", 2),
                  rate.get("p50", "-"), rate.get("max", "-"),
                  fmt(r["proposal_latency_all"]["p50_s"], " s", 3),
                  fmt(r["proposal_latency_all"]["p99_s"], " s", 3),
                  fmt(last.get("p50_s"), " s", 3), fmt(last.get("p99_s"), " s", 3),
                  "%d (%s s)" % (w["count"], fmt(w["sum_s"], "", 0)) if w else "-",
                  fmt(r["runner_cpu_s"], " s", 0), fmt(r["runner_rss_max_bytes"], "B"),
                  fmt(b["journal"], "B"), fmt(b["trial_dirs"], "B"), fmt(b["runner_written"], "B"),
                  fmt(e["status"]["wall_s"], " s"), fmt(e["report"]["wall_s"], " s"),
                  fmt(e["report"].get("html_bytes"), "B"), fmt(e["collect"]["wall_s"], " s"),
                  fmt(st.get("submit_to_start_p50_s"), " s"), fmt(st.get("submit_to_start_p99_s"), " s"),
                  fmt(100 * st["idle_to_start_fraction_after_first_wave"], "%", 1)
                  if st.get("idle_to_start_fraction_after_first_wave") is not None else "-"))
    return 0


def analyze(a):
    """Recompute the journal's figures of a kept result (its expdir must
    still exist) with this version of the harness."""
    with open(a.result) as f:
        r = json.load(f)
    ev = journal(r["expdir"])
    probes, ends = trial_logs(r["expdir"])
    journal_figures(r, ev, probes, ends, sum(1 for e in ev if e["event"] == "trial_created"))
    with open(a.result, "w") as f:
        json.dump(r, f, indent=1)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="one measured experiment")
    r.add_argument("--slots", type=int, required=True,
                   help="trialConcurrency: trials that run at once")
    r.add_argument("--trials", type=int, required=True, help="maxTrialNum")
    r.add_argument("--placement", choices=["master", "trial"], default="master",
                   help="tuner.placement: the runner proposes, or each trial (default master)")
    r.add_argument("--platform", choices=["local", "slurm", "kubernetes"], default="local",
                   help="local (default); slurm: real Slurm daemons the harness starts on "
                   "loopback (root), a CPU a slot; kubernetes: the simulated cluster of "
                   "tests/fixtures/k8s (no API server runs here)")
    r.add_argument("--poll", default="1s", metavar="DURATION",
                   help="slurm.pollInterval or kubernetes.pollInterval (default 1s)")
    r.add_argument("--tuner", default="NetworkMorphism",
                   help="builtinTunerName (default NetworkMorphism; Random measures the runner alone)")
    r.add_argument("--compress", type=float, default=3600.0,
                   help="the stand-in trainer sleeps its modelled time divided by this (default 3600)")
    r.add_argument("--fsync", type=int, choices=[0, 1], default=0,
                   help="1: the stand-in trainer fsyncs what it writes (default 0)")
    r.add_argument("--trainer-nice", type=int, default=0, metavar="N",
                   help="run the stand-in trainers at nice N (default 0): on a cluster they "
                        "run on other nodes, here they share the runner's cores")
    r.add_argument("--seed", type=int, default=1, help="the config's seed (default 1)")
    r.add_argument("--kill-at", type=int, default=0, metavar="K",
                   help="SIGKILL the runner once K trials exist, then time `resume` (default: never)")
    r.add_argument("--inherit-weights", action="store_true",
                   help="tuner.inheritWeights: true: only a finished trial is a parent, so "
                        "until the first result every slot gets the start network (NNI's rule; "
                        "the stand-in ignores morph.json)")
    r.add_argument("--class-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="a tuner.classArgs entry (repeatable)")
    r.add_argument("--extra-yaml", metavar="FILE",
                   help="lines appended to the config (a backend's section)")
    r.add_argument("--runner", metavar="PATH",
                   help="the aah-runner to measure (default: the build's)")
    r.add_argument("--work", metavar="DIR",
                   help="the work directory (default: a new one under /tmp)")
    r.add_argument("--keep", action="store_true",
                   help="keep the work directory (for `analyze`); it is removed by default")
    r.add_argument("--timeout", type=float, default=7200,
                   help="seconds before the runner is killed and what settled by then is measured (default 7200)")
    r.add_argument("--out", required=True, metavar="FILE", help="the result's JSON")
    t = sub.add_parser("table", help="markdown rows of docs/scale.md")
    t.add_argument("results", nargs="+", metavar="RESULT", help="JSON files of `run`")
    z = sub.add_parser("analyze", help="recompute a kept result's journal figures")
    z.add_argument("result", metavar="RESULT", help="the JSON of a `run --keep`")
    a = ap.parse_args()
    if a.cmd == "run":
        return run(a)
    if a.cmd == "analyze":
        return analyze(a)
    return table(a.results)


if __name__ == "__main__":
    sys.exit(main())
