/* cmd_verify.c: `aah-runner verify <archive>`: recompute every digest of an
 * archive made by collect, check its signature, name what differs. */
#include "runner/archive/archive.h"
#include "runner/cmd/options.h"
#include "runner/cmd/report_cmds.h"
#include "util.h"

#include <stdio.h>

static const char usage[] = "aah-runner verify <archive> [--pubkey key.pub.pem]";

int cmd_verify(int argc, const char **argv)
{
	const char *pubkey = NULL;
	int quiet = 0;
	const struct option_spec opts[] = {
		{ "pubkey", 0, OPT_STRING, &pubkey, "PEM", "require a valid signature by this Ed25519 public key" },
		{ "quiet", 'q', OPT_FLAG, &quiet, NULL, "print only problems" },
		{ NULL },
	};
	const char *arg;
	int r = options_parse_one(argc, argv, opts, usage, "archive", &arg);
	if (r)
		return r > 0 ? 0 : 2;
	struct archive_verify_result res = ARCHIVE_VERIFY_RESULT_INIT;
	r = archive_verify(arg, pubkey, &res);
	if (r < 0) {
		archive_verify_result_release(&res);
		return 2;
	}
	fputs(strbuf_str(&res.problems), stdout);
	if (r == 0 && !quiet)
		printf("%s: OK, %zu members match the manifest, signature %s\n", arg, res.members,
		       res.signature == 1 ? "valid" : res.signature == 2 ? "present, not checked (pass --pubkey)" : "absent");
	if (r == 0 && !quiet)
		printf("note: the modes and times of members are not covered by MANIFEST; "
		       "extract with 'tar --no-same-permissions -m'\n");
	else if (r)
		printf("%s: FAILED: %zu differ, %zu missing, %zu added%s%s\n", arg, res.differ,
		       res.missing, res.added,
		       res.form ? ", not the bytes collect writes" : "",
		       pubkey && res.signature != 1 ? ", signature not valid" : "");
	archive_verify_result_release(&res);
	return r ? 1 : 0;
}
