#!/usr/bin/env bats
# Command-level tests of `aah-runner report|collect|verify|metrics`, driven
# the way a user runs them, on synthetic experiments written by
# tests/fixtures/report/make-experiment.sh.

setup() {
	W=$(mktemp -d "${BATS_TMPDIR:-/tmp}/aah-report-cli.XXXXXX")
	export AAH_WORKDIR=$W
	mkdir -p "$W/experiments"
	"$AAH_ROOT/tests/fixtures/report/make-experiment.sh" "$W/experiments" exp00001 12 5 3
	E=$W/experiments/exp00001
}

teardown() {
	if [ -n "${W:-}" ]; then rm -rf "$W"; fi
}

@test "report: summary, results.json and report.html" {
	run aah-runner report exp00001
	[ "$status" -eq 0 ]
	[[ $output == *"Final Score:"*"FLOPS"* ]]
	[[ $output == *"Final Regulated Score:"* ]]
	[[ $output == *"Trials:                12, 1 running, 10 succeeded, 1 failed"* ]]
	[[ $output == *"Best trial:"* ]]
	[[ $output == *"conv1"*"conv2d"* ]]
	[ -s "$E/report.html" ]
	/usr/bin/python3 - "$E/results.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "aah-results/1", d["format"]
assert d["trials_by_state"]["running"] == 1
assert len(d["trials"]) == 12
assert d["samples"], "no samples"
s = d["samples"][-1]
assert abs(s["score_flops"] - s["flops"] / s["elapsed_s"]) <= 1e-6 * s["score_flops"]
PY
}

@test "report: the rules decide Succeed or Failed, and --strict sets the exit status" {
	run aah-runner report exp00001 --strict
	[ "$status" -eq 3 ]
	[[ $output == *"Result:                Failed"* ]]
	[[ $output == *"min-duration"* ]]
	run aah-runner report "$E" --min-duration 600 --min-accuracy 0.5 --strict
	[ "$status" -eq 0 ]
	[[ $output == *"Result:                Succeed"* ]]
	grep -q 'id="verdict">Succeed<' "$E/report.html"
	run aah-runner report exp00001 --min-duration=600 --min-accuracy=0.5 --min-precision fp64 --strict
	[ "$status" -eq 3 ]
	[[ $output == *"min-precision: trial 000001 trained in fp32, below fp64"* ]]
}

@test "report: a trial that trained in fp32 on a GPU fails AIPerf's rule, named; bf16 there passes" {
	R=$E/trials/000002/result.json
	sed -i 's/"devices":\["cpu:2"\]/"devices":["cuda:0"],"backend":"cuda","device_names":["NVIDIA H100 80GB HBM3"]/' "$R"
	grep -q '"cuda:0"' "$R"
	run aah-runner report exp00001 --min-duration 600 --min-accuracy 0.5 --strict
	[ "$status" -eq 3 ]
	[[ $output == *"gpu-precision: trial 000002 trained in fp32 on a GPU; AIPerf's rule trains GPUs in mixed precision (bf16 or fp16)"* ]]
	run aah-runner report exp00001 --min-duration 600 --min-accuracy 0.5 --gpu-fp32 --strict
	[ "$status" -eq 0 ]
	sed -i 's/"precision":"fp32"/"precision":"bf16"/' "$R"
	run aah-runner report exp00001 --min-duration 600 --min-accuracy 0.5 --strict
	[ "$status" -eq 0 ]
	[[ $output == *"Result:                Succeed"* ]]
}

@test "report: options and errors" {
	run aah-runner report --help
	[ "$status" -eq 0 ]
	[[ $output == *"--sample-step"* ]]
	run aah-runner report nosuchexp
	[ "$status" -ne 0 ]
	[[ $output == *"no experiment 'nosuchexp'"* ]]
	run aah-runner report exp00001 --sample-step abc
	[ "$status" -eq 2 ]
	run aah-runner report exp00001 --bogus
	[ "$status" -eq 2 ]
	[[ $output == *"unknown option '--bogus'"* ]]
	run aah-runner report exp00001 -o "$W/out" -q --sample-first 0.05 --sample-step 0.05
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ -s "$W/out/report.html" ] && [ -s "$W/out/results.json" ]
}

@test "collect + verify: an honest archive verifies, sha256sum and openssl agree" {
	openssl genpkey -algorithm ed25519 -out "$W/key.pem"
	openssl pkey -in "$W/key.pem" -pubout -out "$W/key.pub"
	run aah-runner collect exp00001 --sign "$W/key.pem"
	[ "$status" -eq 0 ]
	[ -s "$E/exp00001-logs.tar.zst" ]
	run aah-runner verify "$E/exp00001-logs.tar.zst" --pubkey "$W/key.pub"
	[ "$status" -eq 0 ]
	[[ $output == *"OK"*"signature valid"* ]]
	mkdir "$W/x"
	tar --zstd -xf "$E/exp00001-logs.tar.zst" -C "$W/x"
	(cd "$W/x/exp00001" && sha256sum --quiet -c MANIFEST)
	openssl pkeyutl -verify -pubin -inkey "$W/key.pub" -rawin -in "$W/x/exp00001/MANIFEST" \
		-sigfile "$W/x/exp00001/MANIFEST.sig"
	# the archive does not contain itself
	! tar --zstd -tf "$E/exp00001-logs.tar.zst" | grep -q 'logs.tar'
}

@test "verify names a changed, an added and a removed member" {
	aah-runner collect exp00001 -o "$W/a.tar.gz" -q
	mkdir "$W/x"
	tar -xzf "$W/a.tar.gz" -C "$W/x"
	printf 'X' | dd of="$W/x/exp00001/trials/000002/metrics.jsonl" bs=1 seek=10 conv=notrunc status=none
	rm "$W/x/exp00001/trials/000004/arch.json"
	echo extra >"$W/x/exp00001/trials/000005/extra.txt"
	tar -czf "$W/b.tar.gz" -C "$W/x" exp00001
	run aah-runner verify "$W/b.tar.gz"
	[ "$status" -eq 1 ]
	[[ $output == *"differs: trials/000002/metrics.jsonl"* ]]
	[[ $output == *"missing: trials/000004/arch.json"* ]]
	[[ $output == *"added: trials/000005/extra.txt"* ]]
	[[ $output == *"FAILED: 1 differ, 1 missing, 1 added"* ]]
}

@test "verify refuses an archive with another one or garbage appended" {
	aah-runner collect exp00001 -o "$W/orig.tar.zst" -q
	cp -r "$E" "$W/forged"
	echo '{"accuracy":0.99}' >"$W/forged/trials/000001/result.json"
	aah-runner collect "$W/forged" -o "$W/forged.tar.zst" -q
	cat "$W/orig.tar.zst" "$W/forged.tar.zst" >"$W/x.tar.zst"
	run aah-runner verify "$W/x.tar.zst"
	[ "$status" -eq 1 ]
	[[ $output == *"form: data after the end of the compressed stream"* ]]
	[[ $output == *"FAILED"*"not the bytes collect writes"* ]]
	aah-runner collect exp00001 -o "$W/orig.tar" -q
	cp "$W/orig.tar" "$W/g.tar"
	echo garbage >>"$W/g.tar"
	run aah-runner verify "$W/g.tar"
	[ "$status" -eq 1 ]
	[[ $output == *"form: data after the end of the archive"* ]]
}

@test "verify: a wrong key or a missing signature fails" {
	openssl genpkey -algorithm ed25519 -out "$W/k1.pem"
	openssl genpkey -algorithm ed25519 -out "$W/k2.pem"
	openssl pkey -in "$W/k2.pem" -pubout -out "$W/k2.pub"
	aah-runner collect exp00001 -o "$W/s.tar.zst" --sign "$W/k1.pem" -q
	run aah-runner verify "$W/s.tar.zst" --pubkey "$W/k2.pub"
	[ "$status" -eq 1 ]
	[[ $output == *"signature"* ]]
	aah-runner collect exp00001 -o "$W/u.tar.zst" -q
	run aah-runner verify "$W/u.tar.zst" --pubkey "$W/k2.pub"
	[ "$status" -eq 1 ]
	[[ $output == *"unsigned"* ]]
	run aah-runner verify "$W/nonexistent.tar.zst"
	[ "$status" -eq 2 ]
}

@test "collect leaves earlier archives out and says so" {
	aah-runner collect exp00001 -o "$E/first.tar.gz" -q
	aah-runner collect exp00001 -q
	run aah-runner collect exp00001 -o "$E/third.tar"
	[ "$status" -eq 0 ]
	[[ $output == *"left out 'first.tar.gz': an earlier archive"* ]]
	[[ $output == *"2 earlier archives left out"* ]]
	! tar -tf "$E/third.tar" | grep -q -e '\.tar' -e '\.tgz' -e '\.tzst'
	run aah-runner verify "$E/third.tar"
	[ "$status" -eq 0 ]
}

@test "collect never follows a symbolic link out of the experiment" {
	echo secret >"$W/secret.txt"
	ln -s "$W/secret.txt" "$E/trials/000001/leak"
	ln -s "$W" "$E/trials/up"
	run aah-runner collect exp00001 -o "$W/a.tar"
	[ "$status" -eq 0 ]
	[[ $output == *"left out"* ]]
	! tar -tf "$W/a.tar" | grep -q -e leak -e 'trials/up'
	! tar -xOf "$W/a.tar" | grep -q secret
}

@test "metrics: Prometheus text exposition" {
	run aah-runner metrics exp00001
	[ "$status" -eq 0 ]
	[[ $output == *'aah_trials{experiment="exp00001",state="running"} 1'* ]]
	[[ $output == *'aah_trials{experiment="exp00001",state="succeeded"} 10'* ]]
	[[ $output == *'aah_trial_images_per_second{experiment="exp00001",trial="000012"}'* ]]
	# every sample line is name{labels} value; every metric has HELP and TYPE
	while IFS= read -r line; do
		[[ $line == "# HELP "* || $line == "# TYPE "* ]] && continue
		[[ $line =~ ^aah_[a-z_]+\{[a-z_]+=\"[^\"]*\"(,[a-z_]+=\"[^\"]*\")*\}\ [-+0-9.eE]+$ ]] || {
			echo "bad line: $line"; false; }
	done <<<"$output"
	[ "$(grep -c '^# TYPE' <<<"$output")" -eq "$(grep -c '^# HELP' <<<"$output")" ]
	run aah-runner metrics exp00001 -o "$W/aah.prom"
	[ "$status" -eq 0 ]
	grep -q '^aah_score_flops{experiment="exp00001"} ' "$W/aah.prom"
}

@test "metrics: every series the Grafana dashboard queries is exported" {
	run aah-runner metrics exp00001
	[ "$status" -eq 0 ]
	names=$(grep -o 'aah_[a-z_]*' "$AAH_ROOT/docs/grafana-dashboard.json" | sort -u)
	[ -n "$names" ]
	for n in $names; do
		grep -q "^$n{" <<<"$output" || { echo "dashboard uses $n, metrics does not export it"; false; }
	done
}

# Issue 13 #6: a sample step past its range is refused before anything is
# written (1e-9 h wrote a 364 MB report, 1e-10 h one with no sample).
@test "report, metrics: --sample-step and --sample-first out of range are refused" {
	for step in 1e-9 1e-10 0 -1 100000; do
		run aah-runner report exp00001 -o "$W/tiny" --sample-step "$step"
		[ "$status" -eq 2 ] || { echo "--sample-step $step: status $status: $output"; false; }
		[ "$output" = "aah-runner: error: report: --sample-step must be between 0.001 and 8760, got $step" ]
		[ ! -e "$W/tiny/report.html" ]
		run aah-runner metrics exp00001 --sample-step "$step"
		[ "$status" -eq 2 ]
		[[ $output == *"--sample-step must be between 0.001 and 8760, got $step"* ]]
	done
	run aah-runner report exp00001 --sample-first 1e-9
	[ "$status" -eq 2 ]
	[[ $output == *"--sample-first must be between 0.001 and 8760, got 1e-9"* ]]
	run aah-runner report exp00001 --min-accuracy 1.5
	[ "$status" -eq 2 ]
	[[ $output == *"--min-accuracy must be between 0 and 1, got 1.5"* ]]
	run aah-runner report --help
	[[ $output == *"--sample-step HOURS"*"[0.001 to 8760]"* ]]
}

@test "verify reads only what collect writes (tar, gzip, zstd) and never runs a decompressor" {
	# An lrzip header: libarchive's reader for it runs the 'lrzip' program.
	mkdir "$W/bin"
	printf '#!/bin/sh\ntouch "%s/ran"\ncat >/dev/null\n' "$W" >"$W/bin/lrzip"
	chmod +x "$W/bin/lrzip"
	{ printf 'LRZI\0\006'; head -c 100 /dev/zero; } >"$W/x.tar.lrz"
	PATH="$W/bin:$PATH" run aah-runner verify "$W/x.tar.lrz"
	echo "$output"
	[ "$status" -ne 0 ]
	[ ! -e "$W/ran" ]
	# An honest archive in another compression (xz) is not one collect wrote.
	aah-runner collect exp00001 -o "$W/a.tar" -q
	xz -k "$W/a.tar"
	run aah-runner verify "$W/a.tar.xz"
	echo "$output"
	[ "$status" -ne 0 ]
	for f in a.tar.gz a.tar.zst; do
		aah-runner collect exp00001 -o "$W/$f" -q
		aah-runner verify "$W/$f" -q
	done
	aah-runner verify "$W/a.tar" -q
}

# set_member_mode TAR MODE: rewrite the mode and the mtime (1 s) of the
# result.json member in its tar header, with a correct header checksum: the
# bytes the digests cover stay the same.
set_member_mode() {
	/usr/bin/python3 - "$1" "$2" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
off = 0
while off < len(b) and b[off]:
    name = b[off:off + 100].rstrip(b"\0").decode()
    size = int(b[off + 124:off + 136].rstrip(b"\0 ") or b"0", 8)
    if name.endswith("/result.json"):
        b[off + 100:off + 108] = b"%07o\0" % int(sys.argv[2], 8)
        b[off + 136:off + 148] = b"00000000001\0"
        b[off + 148:off + 156] = b"        "
        b[off + 148:off + 156] = b"%06o\0 " % sum(b[off:off + 512])
        open(sys.argv[1], "wb").write(b)
        sys.exit(0)
    off += 512 + (size + 511) // 512 * 512
sys.exit("no result.json member")
PY
}

@test "verify: member modes and mtimes are not covered by MANIFEST, and verify says so" {
	aah-runner collect exp00001 -o "$W/a.tar" -q
	cp "$W/a.tar" "$W/s.tar"
	set_member_mode "$W/a.tar" 0755
	tar -tvf "$W/a.tar" | grep 'result.json' | grep -q '^-rwxr-xr-x.* 1970-01-01'
	run aah-runner verify "$W/a.tar"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"OK,"*"members match the manifest"* ]]
	[[ $output == *"modes and times of members are not covered"* ]]
	# Only permission bits: collect never writes setuid, setgid or sticky,
	# and verify refuses them.
	set_member_mode "$W/s.tar" 4755
	run aah-runner verify "$W/s.tar"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"form: "* ]]
	chmod 4755 "$E/trials/000001/result.json"
	aah-runner collect exp00001 -o "$W/c.tar" -q
	tar -tvf "$W/c.tar" | grep '000001/result.json' | grep -q '^-rwxr-xr-x'
}
