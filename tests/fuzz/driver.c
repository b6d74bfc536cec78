/* driver.c: a plain main() that feeds each file named on the command line
 * to LLVMFuzzerTestOneInput once: the regression runner when clang's
 * libFuzzer runtime is not installed (built with $(CC) and ASan/UBSan). A
 * crash is a sanitizer abort, as under libFuzzer. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t cap = 1 << 16, n = 0;
	unsigned char *buf = malloc(cap);
	for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
		n += r;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	if (!buf) {
		fprintf(stderr, "%s: out of memory\n", path);
		return -1;
	}
	fprintf(stderr, "Running: %s\n", path);
	LLVMFuzzerTestOneInput(buf, n);
	fprintf(stderr, "Executed %s\n", path);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int bad = 0;
	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++)
		if (argv[i][0] != '-' && run_file(argv[i]) < 0)
			bad = 1;
	return bad;
}
