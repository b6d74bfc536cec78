/* fuzz_metrics.c: a trial's metrics.jsonl -> expdir_metrics_read. */
#include <stdlib.h>

#include "fuzz.h"
#include "runner/store/expdir.h" /* expdir_metrics_read */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct expdir_epoch *ep = NULL;
	size_t n = 0;
	fuzz_write("metrics.jsonl", data, size);
	if (expdir_metrics_read(fuzz_dir(), &ep, &n) == 0)
		for (size_t i = 0; i < n; i++)
			(void)(ep[i].epoch + ep[i].val_acc);
	free(ep);
	return 0;
}
