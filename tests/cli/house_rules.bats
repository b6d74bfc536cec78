#!/usr/bin/env bats
# The tree's own rules (issue 29), checked on the sources as they are:
# the libraries depend one way (no include circle between them, so the
# Makefile links the runner's without --start-group), no two modules of a
# room include each other, no .c file past 800 lines in the rooms the style
# guide counts, and every source path docs/ names exists.

setup() { cd "$AAH_ROOT"; }

@test "libraries depend one way: store and tuner include nothing of the runner above them" {
	/usr/bin/python3 - <<'PY'
import glob, re, sys
# room -> the runner/ prefixes its sources may include
allowed = {
    "runner/store": ["runner/store/"],
    "runner/tuner": ["runner/tuner/", "runner/store/"],
    "common": [],
    "kernels": ["kernels/"],
    "trialimg": ["trialimg/", "kernels/"],
}
inc = re.compile(r'#include "([^"]+)"')
bad = []
n = 0
for room, ok in allowed.items():
    for path in glob.glob(room + "/**/*.[ch]", recursive=True) + glob.glob(room + "/**/*.cu", recursive=True):
        n += 1
        for target in inc.findall(open(path).read()):
            if "/" not in target:
                continue          # common/ headers and the room's own by name
            if not any(target.startswith(p) for p in ok):
                bad.append(f"{path} includes {target}")
print(f"{n} files checked")
for b in bad:
    print(b)
sys.exit(1 if bad or n < 100 else 0)
PY
}

@test "no two modules include each other" {
	/usr/bin/python3 - <<'PY'
import glob, os, re, sys
inc = re.compile(r'#include "([^"]+)"')
uses = {}
for path in glob.glob("runner/**/*.c", recursive=True) + glob.glob("trialimg/**/*.c", recursive=True) + \
        glob.glob("common/*.c") + glob.glob("kernels/**/*.c", recursive=True):
    mod = path[:-2]
    deps = set()
    for t in inc.findall(open(path).read()):
        if t.endswith(".h"):
            deps.add(t[:-2] if "/" in t else os.path.join(os.path.dirname(path), t[:-2]))
    deps.discard(mod)
    uses[mod] = deps
circles = sorted({tuple(sorted((a, b))) for a, ds in uses.items() for b in ds
                  if a in uses.get(b, set())})
for a, b in circles:
    print(f"{a}.c and {b}.c include each other's headers")
print(f"{len(uses)} modules checked")
sys.exit(1 if circles or len(uses) < 100 else 0)
PY
}

@test "no .c file over 800 lines in runner/, trialimg/, kernels/, common/" {
	long=$(find runner trialimg kernels common -name '*.c' -exec wc -l {} + | awk '$2 != "total" && $1 > 800')
	[ -z "$long" ] || { echo "over 800 lines: $long"; false; }
}

@test "every source path docs/ and the README name exists" {
	# runner/, trialimg/, kernels/, common/ and tests/ paths; a glob or {a,b} counts when it matches
	/usr/bin/python3 - <<'PY'
import glob, os, re, sys
# aah's own source rooms (scripts/ and examples/ paths in docs/ are often
# AIPerf's, in its repository)
pat = re.compile(r'(?<![\w./-])((?:runner|trialimg|kernels|common|tests)/[\w./*{},-]*\w)')
missing, n = [], 0
for doc in sorted(glob.glob("docs/*.md")) + ["README.md"]:
    for line_no, line in enumerate(open(doc), 1):
        for m in pat.finditer(line):
            if line[m.end():m.end() + 1] == "<":
                continue     # a pattern: runner/cmd/cmd_<name>.c
            p = m.group(1).rstrip(".")
            n += 1
            if "{" in p:     # runner/store/expdir.{c,h}
                stem, alts = p.split("{", 1)
                alts = alts.split("}", 1)[0].split(",")
                cands = [stem + a for a in alts]
            else:
                cands = [p]
            for c in cands:
                if not (glob.glob(c) or glob.glob(c + ".*") or os.path.exists(c)):
                    missing.append(f"{doc}:{line_no}: {c}")
print(f"{n} paths checked")
for m in missing:
    print(m)
sys.exit(1 if missing or n < 100 else 0)
PY
}

@test "the runner names a trial's files through expdir, and rebuilds no work directory by hand" {
	# enum expdir_file (runner/store/expdir.c) is the one table of their names
	files='arch\.json|params\.json|morph\.json|result\.json|metrics\.jsonl|launch\.json|rank_table\.json|hostfile|trial\.log'
	hits=$(grep -rnE "\"%s/($files)\"" runner --include=*.c --include=*.h | grep -v '^runner/store/' || true)
	[ -z "$hits" ] || { echo "by hand: $hits"; false; }
	hits=$(grep -rn '/\.\./\.\.' runner --include=*.c --include=*.h || true)
	[ -z "$hits" ] || { echo "by hand: $hits"; false; }
}
