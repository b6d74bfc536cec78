/* fuzz_nnirec.c: what an NNI trial reports -> nnirec_read_frames (its
 * .nni/metrics) and nnirec_read_lines (its log), running and ended; every
 * record taken must hold an accuracy, the bytes taken never pass the
 * input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "runner/nni/nnirec.h" /* nnirec_read_frames, nnirec_read_lines */

static void check(const struct nnirec_list *l, size_t used, size_t size)
{
	if (used > size) {
		fprintf(stderr, "%zu bytes taken of %zu\n", used, size);
		abort();
	}
	for (size_t i = 0; i < l->n; i++)
		if (!(l->v[i].value >= 0 && l->v[i].value <= 1) || !l->v[i].value_json) {
			fprintf(stderr, "record %zu holds %g\n", i, l->v[i].value);
			abort();
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct nnirec_trial who = { "000001", 0 };
	const char *buf = (const char *)data;
	for (int ended = 0; ended < 2; ended++) {
		struct nnirec_list l = NNIREC_LIST_INIT;
		size_t used = 0;
		unsigned long lines = 0;
		nnirec_read_frames("metrics", buf, size, 0, ended, &who, &l, &used);
		check(&l, used, size);
		nnirec_list_release(&l);
		nnirec_read_lines("trial.log", buf, size, 1, ended, &who, &l, &used, &lines);
		check(&l, used, size);
		nnirec_list_release(&l);
	}
	return 0;
}
