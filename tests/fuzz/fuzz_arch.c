/* fuzz_arch.c: an aah-arch/1 file -> arch_load (read, check, shapes,
 * FLOPs); an arch that loads must survive arch_to_json -> arch_parse. */
#include <stdio.h>
#include <stdlib.h>

#include "arch.h" /* arch_load, arch_parse, arch_to_json */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arch a;
	if (arch_load(&a, fuzz_write("arch.json", data, size)) < 0) {
		arch_release(&a);
		return 0;
	}
	cJSON *doc = arch_to_json(&a);
	struct arch b;
	if (arch_parse(&b, doc, "arch_to_json") < 0) {
		fprintf(stderr, "an arch that loads does not load again after arch_to_json\n");
		abort();
	}
	arch_release(&b);
	cJSON_Delete(doc);
	arch_release(&a);
	return 0;
}
