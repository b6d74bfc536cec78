# Shared by the suites that run trials written for NNI on a backend
# (docker_nni.bats, k8s_nni.bats, slurm_backend.bats; docs/nni.md).

# nni_check_trial DIR EPOCHS: the trial in DIR got the tuner's proposal (the
# line "received: {...}" or "parameters: {...}" it printed), and each
# record it reported (.nni/metrics, or NNISDK_MEb lines in trial.log) is an
# epoch of metrics.jsonl in order, the final one its result.
nni_check_trial() {
	/usr/bin/python3 - "$1" "$2" <<-'PY'
	import json, re, sys
	t, n = sys.argv[1], int(sys.argv[2])
	proposed = json.load(open(t + "/params.json"))["parameters"]
	log = open(t + "/trial.log").read()
	got = re.search(r"^(?:received|parameters): (\{.*\})$", log, re.M)
	assert got and json.loads(got.group(1)) == proposed, (got, proposed)
	records = [json.loads(m) for m in re.findall(r"^NNISDK_MEb'(.*)'$", log, re.M)]
	if not records:
	    raw = open(t + "/.nni/metrics", "rb").read()
	    while raw:
	        size = int(raw[2:8])
	        records.append(json.loads(raw[8:8 + size]))
	        raw = raw[8 + size:]
	values = [float(r["value"]) for r in records if r["type"] == "PERIODICAL"]
	final = [float(r["value"]) for r in records if r["type"] == "FINAL"]
	lines = [json.loads(l) for l in open(t + "/metrics.jsonl")]
	close = lambda a, b: abs(a - b) <= 1e-12   # cJSON writes 15 digits where they read back close
	assert len(values) == n and len(lines) == n, (lines, values)
	assert [l["epoch"] for l in lines] == list(range(1, n + 1)) and all(l["source"] == "nni" for l in lines)
	assert all(close(l["val_acc"], v) for l, v in zip(lines, values)), (lines, values)
	assert close(json.load(open(t + "/result.json"))["best_val_acc"], final[0])
	PY
}
