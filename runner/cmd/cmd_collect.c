/* cmd_collect.c: `aah-runner collect <experiment>`: every log of an
 * experiment in one archive with a SHA-256 manifest, optionally signed. */
#include "runner/archive/archive.h"
#include "runner/cmd/options.h"
#include "runner/cmd/report_cmds.h"
#include "runner/config/workdir.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"aah-runner collect <experiment id or directory> [-o file.tar.zst] [--sign key.pem]";

int cmd_collect(int argc, const char **argv)
{
	const char *workdir = NULL, *out = NULL, *key = NULL;
	int quiet = 0;
	const struct option_spec opts[] = {
		{ "workdir", 0, OPT_STRING, &workdir, "DIR", "work directory (default $AAH_WORKDIR or ./aah-work)" },
		{ "output", 'o', OPT_STRING, &out, "FILE", "archive to write: .tar.zst, .tar.gz or .tar (default <experiment>/<id>-logs.tar.zst)" },
		{ "sign", 0, OPT_STRING, &key, "KEY.pem", "sign the manifest with this Ed25519 private key" },
		{ "quiet", 'q', OPT_FLAG, &quiet, NULL, "print nothing on success" },
		{ NULL },
	};
	const char *arg;
	int r = options_parse_one(argc, argv, opts, usage, "experiment", &arg);
	if (r)
		return r > 0 ? 0 : 2;
	char *dir;
	if (workdir_experiment_dir(workdir, arg, &dir) < 0)
		return 1;
	const char *base = strrchr(dir, '/');
	char *path = out ? xstrdup(out) : xstrfmt("%s/%s-logs.tar.zst", dir, base ? base + 1 : dir);
	struct archive_collect_stats st;
	r = archive_collect(dir, path, key, &st) < 0 ? 1 : 0;
	if (r == 0 && !quiet) {
		printf("%s: %zu files, %llu bytes%s", path, st.files, (unsigned long long)st.bytes,
		       key ? ", signed" : "");
		if (st.archives)
			printf(", %zu earlier archive%s left out", st.archives,
			       st.archives == 1 ? "" : "s");
		if (st.superseded)
			printf(", %zu entr%s of launches that no longer count left out",
			       st.superseded, st.superseded == 1 ? "y" : "ies");
		printf("%s\n", st.skipped ? " (some entries left out, see warnings)" : "");
	}
	free(path);
	free(dir);
	return r;
}
