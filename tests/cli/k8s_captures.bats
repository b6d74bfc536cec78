#!/usr/bin/env bats
# The captured kubectl answers the fake kubectl replays
# (tests/fixtures/k8s/kubectl/<case>/) cannot drift from the real format:
# each JSON answer validates against the strict schema of its kind (v1 List
# items one by one). NO API server runs here; the answers were written in the
# exact shape `kubectl get -o json` prints for a v1.32 API server.

load helpers

K8S=$AAH_ROOT/tests/fixtures/k8s

@test "every captured JSON answer validates against the strict schemas" {
	run /usr/bin/python3 "$K8S/k8s_check.py" --schema-only "$K8S"/kubectl/*/stdout.json
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c 'valid (strict schema; no API server)' <<<"$output")" -eq "$(ls "$K8S"/kubectl/*/stdout.json | wc -l)" ]
	[ "$(ls "$K8S"/kubectl/*/stdout.json | wc -l)" -ge 12 ]
}

@test "a drifted capture fails (unknown field, wrong type)" {
	WORK=$(mktemp -d)
	/usr/bin/python3 - "$K8S/kubectl/jobs-complete/stdout.json" "$WORK" <<-'EOF'
	import json, sys
	d = json.load(open(sys.argv[1]))
	a = json.loads(json.dumps(d)); a["items"][0]["status"]["readyPods"] = 2
	b = json.loads(json.dumps(d)); b["items"][0]["status"]["succeeded"] = "2"
	json.dump(a, open(sys.argv[2] + "/a.json", "w")); json.dump(b, open(sys.argv[2] + "/b.json", "w"))
	EOF
	for f in a b; do
		run /usr/bin/python3 "$K8S/k8s_check.py" --schema-only "$WORK/$f.json"
		[ "$status" -eq 1 ]
		[[ $output == *"schema: /status"* ]]
	done
	rm -rf "$WORK"
}

@test "every captured case is replayed by some test" {
	for c in "$K8S"/kubectl/*/; do
		name=$(basename "$c")
		grep -qw -- "$name" "$AAH_ROOT"/tests/cli/k8s_*.bats || { echo "unused capture $name"; false; }
	done
}
