/* fuzz.c: the scratch directory and quiet library of fuzz.h. */
#include "fuzz.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h" /* util_set_quiet */

static char scratch[256];
static char path_buf[512];

static void remove_scratch(void)
{
	/* The targets write only plain files directly in scratch. */
	static const char *const names[] = {
		"config.yml", "space.json", "arch.json", "journal.jsonl",
		"result.json", "metrics.jsonl", "archive", "pub.pem",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path_buf, sizeof(path_buf), "%s/%s", scratch, names[i]);
		unlink(path_buf);
	}
	rmdir(scratch);
}

void fuzz_init(void)
{
	if (scratch[0])
		return;
	util_set_quiet(1);
	const char *tmp = getenv("TMPDIR");
	/* /dev/shm keeps the per-input file writes off the disk. */
	if (!tmp || !*tmp)
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(scratch, sizeof(scratch), "%s/aah-fuzz.XXXXXX", tmp);
	if (!mkdtemp(scratch)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	atexit(remove_scratch);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_init();
	return 0;
}

const char *fuzz_dir(void)
{
	fuzz_init();
	return scratch;
}

const char *fuzz_write(const char *name, const uint8_t *data, size_t size)
{
	snprintf(path_buf, sizeof(path_buf), "%s/%s", fuzz_dir(), name);
	int fd = open(path_buf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(path_buf);
		abort();
	}
	for (size_t off = 0; off < size;) {
		ssize_t w = write(fd, data + off, size - off);
		if (w <= 0) {
			perror(path_buf);
			abort();
		}
		off += (size_t)w;
	}
	close(fd);
	return path_buf;
}
