/* fuzz_result.c: a trial's result.json -> expdir_result_read. */
#include <string.h>

#include "fuzz.h"
#include "runner/store/expdir.h" /* expdir_result_read */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct expdir_result res;
	fuzz_write("result.json", data, size);
	if (expdir_result_read(fuzz_dir(), &res) == 1)
		(void)(strlen(res.precision) + strlen(res.stop_reason));
	return 0;
}
