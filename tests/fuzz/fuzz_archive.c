/* fuzz_archive.c: a log archive (any compression libarchive reads) ->
 * archive_verify with a public key, so the MANIFEST, the digests and the
 * signature check all see the input. The key is the public half of
 * tests/fuzz/seed-key.pem, which signed the signed seeds. */
#include <string.h>

#include "fuzz.h"
#include "runner/archive/archive.h" /* archive_verify */

static const char pubkey_pem[] =
	"-----BEGIN PUBLIC KEY-----\n"
	"MCowBQYDK2VwAyEAQd+g6GgMxZpRi0Gr5qn3cXa5i7nkSYAML1vHeMW2hsI=\n"
	"-----END PUBLIC KEY-----\n";
static char pubkey_path[512];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct archive_verify_result res = ARCHIVE_VERIFY_RESULT_INIT;
	if (!pubkey_path[0]) {
		const char *p = fuzz_write("pub.pem", (const uint8_t *)pubkey_pem, strlen(pubkey_pem));
		memcpy(pubkey_path, p, strlen(p) + 1);
	}
	archive_verify(fuzz_write("archive", data, size), pubkey_path, &res);
	archive_verify_result_release(&res);
	return 0;
}
