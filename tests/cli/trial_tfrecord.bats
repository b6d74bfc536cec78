#!/usr/bin/env bats
# aah-trial on AIPerf-style ImageNet TFRecords: tests/fixtures/tfrecord/
# (train-0000k-of-00002: 40 Fashion-MNIST test images, validation-00000-of-00001:
# the next 20, as 28x28 JPEGs in tf.Example records written by
# tests/fixtures/tfrecord_write.py). Trains on them; a corrupt or truncated
# shard stops the trial with the file and the record named. The first open
# indexes each file beside it (trialimg/data/tfrindex.c); later trials read
# the index. Every test copies the fixtures: the trial writes beside them.

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
	cp -r "$DATA" "$T/data"
	run trial "$T/data"
	[ "$status" -eq 0 ]
	[[ $output == *"40 train / 20 val images"* ]]
	[[ $output == *"epoch 1/1"* ]]
	[ "$(wc -l <"$T/trial/metrics.jsonl")" -eq 1 ]
}

@test "the first trial indexes each file; the next reads the index, not the data" {
	cp -r "$DATA" "$T/data"
	run trial "$T/data"
	[ "$status" -eq 0 ]
	[[ $output == *"'$T/data': 2 file(s) indexed now (2 saved), 0 read from their index"* ]]
	[[ $output == *"'$T/data': 1 file(s) indexed now (1 saved), 0 read from their index"* ]]
	for f in train-00000-of-00002 train-00001-of-00002 validation-00000-of-00001; do
		head -c 21 "$T/data/$f.aah-index" | grep -qx 'aah-tfrecord-index/1 '
	done
	before=$(stat -c %i.%Y "$T/data/train-00001-of-00002.aah-index")
	# a bit flipped deep in the last record's JPEG, size and mtime kept: the
	# index is trusted, and the record's checksum names it when it is read
	f=$T/data/train-00001-of-00002
	touch -r "$f" "$T/stamp"
	/usr/bin/python3 -c "
import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[-40] ^= 4; open(p, 'wb').write(b)" "$f"
	touch -r "$T/stamp" "$f"
	rm -rf "$T/trial"
	run trial "$T/data"
	[ "$status" -ne 0 ]
	[[ $output != *"indexed now"* ]]
	[[ $output == *"'$f': record 19 at byte "*": the data's checksum does not match"* ]]
	[ "$(stat -c %i.%Y "$T/data/train-00001-of-00002.aah-index")" = "$before" ]
	# the data file changed (its mtime): the stale index is rebuilt, which
	# finds the corrupt record before the trial starts
	touch -d '2001-01-01' "$f"
	rm -rf "$T/trial"
	run trial "$T/data"
	[ "$status" -ne 0 ]
	[[ $output == *"the index '$f.aah-index' is stale"* ]]
	[[ $output == *"'$f': record 19 at byte "*": the data's checksum does not match"* ]]
	[ ! -e "$T/trial/metrics.jsonl" ]
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
