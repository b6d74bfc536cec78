#!/usr/bin/env bats
# aah-trial on AIPerf-style ImageNet TFRecords: tests/fixtures/tfrecord/
# (train-0000k-of-00002: 40 Fashion-MNIST test images, validation-00000-of-00001:
# the next 20, as 28x28 JPEGs in tf.Example records written by
# tests/fixtures/tfrecord_write.py). Trains on them; a corrupt or truncated
# shard stops the trial with the file and the record named.

load helpers

setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/aah-tfrecord-bats.XXXXXX")
	DATA=$AAH_ROOT/tests/fixtures/tfrecord
	ARCH=$AAH_ROOT/tests/fixtures/arch/cnn2.json
}

teardown() {
	rm -rf "$T"
}

trial() { # trial DATA_DIR [args...]
	local d=$1
	shift
	aah-trial --trial_dir "$T/trial" --arch "$ARCH" --train_data_dir "$d" --warmup_1 1 \
		--threads 2 --batch_size 8 --monitor_interval 0 "$@"
}

@test "a trial trains on the train-* shards and validates on validation-*" {
	run trial "$DATA"
	[ "$status" -eq 0 ]
	[[ $output == *"40 train / 20 val images"* ]]
	[[ $output == *"epoch 1/1"* ]]
	[ "$(wc -l <"$T/trial/metrics.jsonl")" -eq 1 ]
}

@test "a flipped bit in a record's data names the file, the record and its offset" {
	cp -r "$DATA" "$T/data"
	f=$T/data/train-00001-of-00002
	# record 0's data starts at byte 12; flip a bit 300 bytes in
	/usr/bin/python3 -c "
import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[312] ^= 4; open(p, 'wb').write(b)" "$f"
	run trial "$T/data"
	[ "$status" -ne 0 ]
	[[ $output == *"'$f': record 0 at byte 0: the data's checksum does not match"* ]]
	[ ! -e "$T/trial/metrics.jsonl" ]
}

@test "a truncated shard is reported as truncated, with its last record" {
	cp -r "$DATA" "$T/data"
	f=$T/data/validation-00000-of-00001
	truncate -s -3 "$f"
	run trial "$T/data"
	[ "$status" -ne 0 ]
	[[ $output == *"'$f': record 19 at byte "*"a truncated file"* ]]
}
