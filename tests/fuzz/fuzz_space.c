/* fuzz_space.c: an NNI search_space.json -> space_parse, then sampling and
 * mapping every sampled value back to its coordinate, as the tuners do. */
#include <cjson/cJSON.h>

#include "fuzz.h"
#include "runner/tuner/space.h" /* space_parse, space_sample, space_coord */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
	if (!doc)
		return 0;
	struct space sp = SPACE_INIT;
	if (space_parse(&sp, doc) == 0) {
		struct trng r;
		trng_seed(&r, size, 1);
		cJSON *sample = space_sample(&sp, &r);
		for (size_t i = 0; i < sp.n; i++) {
			double x;
			space_coord(&sp.params[i], cJSON_GetObjectItemCaseSensitive(sample, sp.params[i].name), &x);
			cJSON_Delete(space_value(&sp.params[i], space_sample_coord(&sp.params[i], &r)));
		}
		cJSON_Delete(sample);
	}
	space_release(&sp);
	cJSON_Delete(doc);
	return 0;
}
