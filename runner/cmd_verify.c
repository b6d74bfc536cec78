/* cmd_verify.c: `aah-runner verify <archive>`: recompute every digest of an
 * archive made by collect, check its signature, name what differs. */
#include "runner/archive.h"
#include "runner/report/cmdopt.h"
#include "runner/report/report_cmds.h"
#include "util.h"

#include <stdio.h>

static const char usage[] = "aah-runner verify <archive> [--pubkey key.pub.pem]";

int cmd_verify(int argc, const char **argv)
{
	const char *pubkey = NULL;
	int quiet = 0;
	const struct cmdopt opts[] = {
		{ "pubkey", 0, CMDOPT_STRING, &pubkey, "PEM", "require a valid signature by this Ed25519 public key" },
		{ "quiet", 'q', CMDOPT_FLAG, &quiet, NULL, "print only problems" },
	};
	const char *pos[1];
	size_t npos;
	int r = cmdopt_parse(usage, opts, sizeof(opts) / sizeof(opts[0]), argc, argv, pos, 1, &npos);
	if (r)
		return r > 0 ? 0 : 2;
	if (npos != 1) {
		error("which archive? (usage: %s)", usage);
		return 2;
	}
	struct archive_verify_result res = ARCHIVE_VERIFY_RESULT_INIT;
	r = archive_verify(pos[0], pubkey, &res);
	if (r < 0) {
		archive_verify_result_release(&res);
		return 2;
	}
	fputs(strbuf_str(&res.problems), stdout);
	if (r == 0 && !quiet)
		printf("%s: OK, %zu members match the manifest, signature %s\n", pos[0], res.members,
		       res.signature == 1 ? "valid" : res.signature == 2 ? "present, not checked (pass --pubkey)" : "absent");
	else if (r)
		printf("%s: FAILED: %zu differ, %zu missing, %zu added%s\n", pos[0], res.differ,
		       res.missing, res.added,
		       pubkey && res.signature != 1 ? ", signature not valid" : "");
	archive_verify_result_release(&res);
	return r ? 1 : 0;
}
