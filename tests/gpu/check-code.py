#!/usr/bin/env python3
"""check-code.py: is the compiled code of the cuda backend's kernel families
(kernels/cuda/cuda_<family>.cu) what it was written to be?

  check-code.py ptx    BUILD   the PTX and ptxas reports `make` keeps beside
                               each family's object (BUILD/obj/kernels/cuda/
                               cuda_<family>.o.ptx, .o.ptxas)
  check-code.py sass   BUILD   cuobjdump --dump-sass of those objects (sm_90),
                               where cuobjdump exists (the GPU machine)

Rules, each kernel by name:
  1. no stack frame and no spills (ptxas -v), for every architecture built;
  2. every vector instance (a template argument of 4 or 8 values a thread:
     the element-wise, batchnorm, pooling, reshape, cast and SGD kernels)
     reads global memory 16 bytes at a time: ld.global.v4 in PTX, LDG.E.128
     in SASS;
  3. no double-precision square root or division in a kernel that walks the
     values (every kernel but the per-channel and per-block finishes, and
     the sums whose last block finishes them, *_then_finish, whose f64
     runs once a channel): sqrt/div/rcp .f64 in PTX, MUFU.RSQ64H /
     MUFU.RCP64H in SASS;
  4. every vector instance of a per-channel sum that loads rows ahead
     (*_then_finish<T, W, A> with A > 1: cuk.cuh rows_ahead) holds all A
     rows' loads: (A - 1) x L more 128-bit loads than its one-row twin
     (A = 1), L >= 1 the loads of a row; the loop is unrolled, not left to
     load one row at a time.
Prints one line per kernel checked and exits 1 on any failure."""
import glob
import os
import re
import subprocess
import sys


def kernels_of(text, start):
    """{name: body} split at each kernel's start line."""
    out, name, body = {}, None, []
    for line in text.splitlines():
        m = start.match(line)
        if m:
            if name:
                out[name] = "\n".join(body)
            name, body = m.group(1), []
        elif name:
            body.append(line)
    if name:
        out[name] = "\n".join(body)
    return out


PTX_ENTRY = re.compile(r"^\.(?:visible|weak)\s+\.entry\s+(\S+?)\s*\(")
SASS_FN = re.compile(r"^\s*Function\s*:\s*(\S+)")
VEC_LOAD = {"ptx": re.compile(r"\bld\.global(?:\.nc)?(?:\.\w+)*\.v4\.(?:u32|b32|f32|s32)"),
            "sass": re.compile(r"\bLDG\.E\.128\b|\bLDG\.E\.(?:\w+\.)*128\b")}
F64_SLOW = {"ptx": re.compile(r"\b(?:sqrt|div|rcp)(?:\.\w+)*\.f64\b|\brsqrt\.approx(?:\.\w+)*\.f64\b"),
            "sass": re.compile(r"\bMUFU\.(?:RSQ64H|RCP64H)\b")}
# a first integer template argument of 4 or 8: the vector instance (Li4E /
# Li8E in the name; a sum's rows ahead, its second, may be 4 too)
VECTOR = re.compile(r"^[^L]*(?:L[^i][^L]*)*Li[48]E")
# a sum's vector instance loading rows ahead: W of 4 or 8, then A > 1
AHEAD = re.compile(r"(then_finish.*?Li[48]E)Li(\d+)E")


def ahead_fails(name, ks, mode):
    """Rule 4 for kernel name among ks (name -> body): [] or its failure."""
    m = AHEAD.search(name)
    if not m or int(m.group(2)) < 2 or not VECTOR.search(name):
        return []
    a = int(m.group(2))
    twin = name[:m.start(2) - 2] + "Li1E" + name[m.end(2) + 1:]
    if twin not in ks:
        return [f"{name}: loads {a} rows ahead, but its one-row twin {twin} is not built"]
    extra = len(VEC_LOAD[mode].findall(ks[name])) - len(VEC_LOAD[mode].findall(ks[twin]))
    if extra < a - 1 or extra % (a - 1):
        return [f"{name}: loads {a} rows ahead, but holds {extra} more 128-bit loads than its "
                f"one-row twin (want a multiple of {a - 1})"]
    return []


def stack_report(path):
    """[(kernel, arch, stack, spill stores, spill loads)] from ptxas -v."""
    out, name, arch = [], None, None
    for line in open(path, errors="replace"):
        m = re.search(r"Compiling entry function '([^']+)' for '(sm_\d+)'", line)
        if m:
            name, arch = m.group(1), m.group(2)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name:
            out.append((name, arch, int(m.group(1)), int(m.group(2)), int(m.group(3))))
            name = None
    return out


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("ptx", "sass"):
        sys.exit(__doc__)
    mode, build = sys.argv[1], sys.argv[2]
    # the families' objects: those of kernels/cuda/*.cu
    objs = sorted(o for o in glob.glob(os.path.join(build, "obj/kernels/cuda/cuda_*.o"))
                  if os.path.exists(os.path.join("kernels/cuda", os.path.basename(o)[:-2] + ".cu")))
    if not objs:
        print(f"check-code: no kernel family objects under {build}/obj/kernels/cuda (a build without CUDA?)")
        return 1
    fails, checked = [], 0
    for obj in objs:
        fam = os.path.basename(obj)[:-2]
        rep = obj + ".ptxas"
        if not os.path.exists(rep):
            fails.append(f"{fam}: no ptxas report {rep} (make keeps it beside the object)")
            continue
        for name, arch, stack, st, ld in stack_report(rep):
            if stack or st or ld:
                fails.append(f"{fam}: {name} ({arch}): {stack} bytes stack frame, {st}/{ld} bytes spilled")
        if mode == "ptx":
            path = obj + ".ptx"
            if not os.path.exists(path):
                fails.append(f"{fam}: no PTX {path}")
                continue
            ks = kernels_of(open(path, errors="replace").read(), PTX_ENTRY)
        else:
            sass = subprocess.run(["cuobjdump", "--dump-sass", "--gpu-architecture", "sm_90", obj],
                                  capture_output=True, text=True)
            if sass.returncode:
                fails.append(f"{fam}: cuobjdump failed: {sass.stderr.strip()[:200]}")
                continue
            ks = kernels_of(sass.stdout, SASS_FN)
        if not ks:
            fails.append(f"{fam}: no kernels found in its {mode}")
        for name, body in sorted(ks.items()):
            checked += 1
            notes = []
            if VECTOR.search(name):
                if VEC_LOAD[mode].search(body):
                    notes.append("128-bit loads")
                else:
                    fails.append(f"{fam}: {name}: a vector instance without a 128-bit global load")
            bad = ahead_fails(name, ks, mode)
            fails += [f"{fam}: {b}" for b in bad]
            if not bad and AHEAD.search(name) and int(AHEAD.search(name).group(2)) > 1:
                notes.append(f"{AHEAD.search(name).group(2)} rows' loads")
            if "finish" not in name:
                bad = sorted(set(F64_SLOW[mode].findall(body)))
                if bad:
                    fails.append(f"{fam}: {name}: double-precision {', '.join(bad)} in a kernel over values")
                else:
                    notes.append("no f64 sqrt/div")
            print(f"ok {fam}: {name}: {', '.join(notes)}")
    for f in fails:
        print(f"FAILED: {f}")
    print(f"check-code ({mode}): {checked} kernels, {len(fails)} failures")
    return 1 if fails or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
