#!/usr/bin/env bats
# AIPerf's start graph (issue 17): tuner.initialArch takes an NNI graph JSON
# (AIPerf's own resnet50.json, tests/fixtures/aiperf/) as it takes an
# aah-arch/1 file, and the tuner's default ImageNet start is that same graph:
# ResNet-50 v1, the stride on the first 1x1 conv of a downsampling unit.

load helpers

setup() { setup_workdir; }
teardown() { teardown_workdir; }

# first_arch CONFIG: create an experiment from CONFIG, propose trial 1 and
# print the path of its arch.json.
first_arch() {
	run aah-runner create -c "$1" --no-run
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local id
	id=$(basename "$(ls -td "$AAH_WORKDIR"/experiments/*/ | head -1)")
	run aah-runner propose --experiment "$id" --trial 1
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	echo "$AAH_WORKDIR/experiments/$id/trials/000001/arch.json"
}

# nm_config FILE [MORE_CLASS_ARGS]: a NetworkMorphism config for 224x224x3
# images and 1000 classes, tuner.initialArch $INITIAL when set.
nm_config() {
	TUNER=NetworkMorphism write_config "$1"
	local start="  classArgs: { input_width: 224, input_channel: 3, n_output_node: 1000${2:-} }"
	if [ -n "${INITIAL:-}" ]; then start="$start\n  initialArch: $INITIAL"; fi
	sed -i "s|^tuner:\$|tuner:\n$start|" "$1"
}

@test "AIPerf's resnet50.json starts the search, and the default ImageNet start is the same graph" {
	INITIAL=$AAH_ROOT/tests/fixtures/aiperf/resnet50.json nm_config nni.yml
	run aah-runner check nni.yml
	echo "$output"
	[ "$status" -eq 0 ]
	from_file=$(first_arch nni.yml)
	nm_config default.yml
	builtin=$(first_arch default.yml)
	nm_config v15.yml ", start_model: resnet50-v1.5"
	v15=$(first_arch v15.yml)
	python3 - "$from_file" "$builtin" "$v15" <<'PY'
import json, sys
def convs(path):
    d = json.load(open(path))
    assert d["format"] == "aah-arch/1" and d["num_classes"] == 1000, d.keys()
    return [(l["kernel"], l.get("stride", 1)) for l in d["layers"] if l["type"] == "conv2d"], len(d["layers"])
f, b, v = convs(sys.argv[1]), convs(sys.argv[2]), convs(sys.argv[3])
assert f == b, "the default start differs from resnet50.json"
assert f[1] == 174 and len(f[0]) == 53, f[1]
# v1: three 1x1 main-path convs and three 1x1 shortcuts stride 2, no 3x3 does
assert f[0].count((1, 2)) == 6 and f[0].count((3, 2)) == 0, f[0]
# v1.5 keeps its name: the 3x3 strides instead
assert v[0].count((3, 2)) == 3 and v[0].count((1, 2)) == 3, v[0]
PY
}

@test "a broken NNI graph as tuner.initialArch is refused naming the key, the file and the layer" {
	sed 's/"StubConv2d", 0, 1, 3, 64, 7, 2, 3/"StubConv2d", 0, 1, 4, 64, 7, 2, 3/' \
		"$AAH_ROOT/tests/fixtures/aiperf/resnet50.json" > bad.json
	! cmp -s bad.json "$AAH_ROOT/tests/fixtures/aiperf/resnet50.json"
	INITIAL=bad.json nm_config c.yml
	run aah-runner check c.yml
	echo "$output"
	[ "$status" -eq 2 ]
	[[ $output == *"'tuner.initialArch'"*"bad.json: layer 0: input_channel 4, but node 0 has 3 channels"* ]]
}
