#!/usr/bin/env python3
"""ncu-top.py CSV [N]: where one training step's GPU time goes, from Nsight
Compute's CSV (--csv --print-units base, metrics gpu__time_duration.sum,
dram__bytes_read.sum, dram__bytes_write.sum; tests/gpu/lease.sh): the last
step of the run is the longest tail of the kernel sequence that repeats;
prints its kernel count and time, then the N kernels that take the most as
ms, share, calls, GB (DRAM read + written) and GB/s."""
import collections
import csv
import sys


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    try:
        lines = [l for l in open(path, errors="replace") if l.startswith('"')]
    except OSError as e:
        print(f"ncu: no profile ({e})")
        return 1
    launches = collections.OrderedDict()   # (id, name) -> {metric: value}
    for r in csv.DictReader(lines):
        key = (r.get("ID"), r.get("Kernel Name", "?"))
        try:
            v = float(r.get("Metric Value", "0").replace(",", ""))
        except ValueError:
            continue
        launches.setdefault(key, {})[r.get("Metric Name")] = v
    seq = [(name, m.get("gpu__time_duration.sum", 0.0),
            m.get("dram__bytes_read.sum", 0.0) + m.get("dram__bytes_write.sum", 0.0))
           for (_, name), m in launches.items()]
    if not seq:
        print("ncu: the profile holds no kernel")
        return 1
    names = [n for n, _, _ in seq]
    n, step = len(names), 0
    for p in range(n // 2, 0, -1):   # the longest tail that repeats: one step
        if names[n - p:] == names[n - 2 * p:n - p]:
            step = p
            break
    last = seq[n - step:] if step else seq
    total = sum(t for _, t, _ in last)
    moved = sum(b for _, _, b in last)
    by = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for name, t, b in last:
        by[name][0] += 1
        by[name][1] += t
        by[name][2] += b
    what = "one step" if step else "the whole run (no repeating step found)"
    print(f"{len(last)} kernels in {what}: {total / 1e6:.2f} ms of kernel time, "
          f"{moved / 1e9:.2f} GB of DRAM traffic ({moved / total:.0f} GB/s over it)" if total else
          f"{len(last)} kernels, no time measured")
    print(f"{'ms':>8} {'share':>6} {'calls':>6} {'GB':>8} {'GB/s':>7}  kernel")
    for name, (c, t, b) in sorted(by.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"{t / 1e6:8.2f} {100 * t / total:5.1f}% {c:6d} {b / 1e9:8.3f} {b / t if t else 0:7.0f}  {name[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
