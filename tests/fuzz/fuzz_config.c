/* fuzz_config.c: config.yml -> config_load (yamltree, the key tables, the
 * semantic checks) and every backend's own section, as `check` loads it. */
#include <stdlib.h>

#include "fuzz.h"
#include "runner/backend/backend.h" /* backend_config_load, backend_validate_config */
#include "runner/config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aah_config cfg;
	if (backend_config_load(fuzz_write("config.yml", data, size), &cfg) < 0)
		return 0;
	backend_validate_config(&cfg);
	char *space = config_search_space_file(&cfg);
	free(space);
	config_release(&cfg);
	return 0;
}
