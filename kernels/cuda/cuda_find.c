/* cuda_find.c: which convolutions cuDNN's algorithms are measured for
 * (cudnnFind*) rather than taken from its heuristics, and the file that
 * keeps what was measured, so that the next trial on the same kind of GPU
 * (the same name, the same cuDNN) does not measure again.
 *
 * AAH_CUDA_FIND: "1" measures every convolution, "0" none; unset, those
 * whose pass costs at least CUDA_FIND_FLOPS at the batch (ResNet-50's
 * every layer at batch 256, none of the quick start's small nets): a
 * measurement runs each algorithm once or more, about as long as a few
 * dozen passes of that layer, which a trial of thousands of steps repays
 * and a net whose passes take microseconds does not.
 *
 * AAH_CUDA_ALGO_CACHE names the file (aah-trial: cache/cudnn-algos under
 * the work directory, shared by the runs there; unset: nothing is kept):
 * one line per measured pass, "aah-cudnn-algos/1 KEY ALGO MATH WORKSPACE",
 * appended under an flock, the last line of a key winning. KEY holds the
 * device's name, cuDNN's version and the pass's shapes and types. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h> /* flock */
#include <unistd.h>

#include "kernels/cuda/cuda_ctx.h"

#define FIND_FORMAT "aah-cudnn-algos/1"

int cuda_find_wanted(double flops)
{
	const char *v = getenv("AAH_CUDA_FIND");
	if (v && !strcmp(v, "1"))
		return 1;
	if (v && !strcmp(v, "0"))
		return 0;
	return flops >= CUDA_FIND_FLOPS;
}

/* The device's part of every key: its name (spaces as '_') and cuDNN's version. */
static void device_key(struct cuda_ctx *c, char *out, size_t size)
{
	struct cudaDeviceProp p;
	if (cudaGetDeviceProperties(&p, c->device) != cudaSuccess)
		snprintf(p.name, sizeof(p.name), "device%d", c->device);
	snprintf(out, size, "%.150s:cudnn%zu", p.name, cudnnGetVersion());
	for (char *q = out; *q; q++)
		if (*q == ' ' || *q == '\t')
			*q = '_';
}

/* The file's lines into c->found, once. */
static void load(struct cuda_ctx *c)
{
	const char *path = getenv("AAH_CUDA_ALGO_CACHE");
	c->found_loaded = 1;
	if (!path || !*path)
		return;
	FILE *f = fopen(path, "r");
	if (!f)
		return;     /* none yet */
	char line[512], key[400];
	int algo, math;
	size_t ws;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, FIND_FORMAT " %399s %d %d %zu", key, &algo, &math, &ws) != 4)
			continue;   /* another version's, or a torn line: measured again */
		int k = 0;
		while (k < c->nfound && strcmp(c->found[k].key, key))
			k++;
		if (k == c->nfound) {
			if (c->nfound == CUDA_MAX_FOUND)
				break;
			c->nfound++;
		}
		snprintf(c->found[k].key, sizeof(c->found[k].key), "%s", key);
		c->found[k].algo = algo;
		c->found[k].math = math;
		c->found[k].ws = ws;
	}
	fclose(f);
}

int cuda_find_lookup(struct ops_ctx *ctx, const char *shape, struct cuda_found *out)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	char key[400], dev[200];
	if (!c->found_loaded)
		load(c);
	device_key(c, dev, sizeof(dev));
	snprintf(key, sizeof(key), "%s|%s", dev, shape);
	for (int k = 0; k < c->nfound; k++)
		if (!strcmp(c->found[k].key, key)) {
			*out = c->found[k];
			return 1;
		}
	return 0;
}

void cuda_find_store(struct ops_ctx *ctx, const char *shape, const struct cuda_found *f)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	char dev[200];
	const char *path = getenv("AAH_CUDA_ALGO_CACHE");
	device_key(c, dev, sizeof(dev));
	if (c->nfound < CUDA_MAX_FOUND) {
		struct cuda_found *e = &c->found[c->nfound++];
		*e = *f;
		snprintf(e->key, sizeof(e->key), "%s|%s", dev, shape);
	}
	if (!path || !*path)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		warning("cannot keep cuDNN's measured algorithms in '%s': %s", path, strerror(errno));
		return;
	}
	char line[512];
	int n = snprintf(line, sizeof(line), FIND_FORMAT " %s|%s %d %d %zu\n", dev, shape, f->algo,
			 f->math, f->ws);
	if (flock(fd, LOCK_EX) == 0) {
		if (n > 0 && (size_t)n < sizeof(line) && write(fd, line, (size_t)n) != n)
			warning("cannot write '%s': %s", path, strerror(errno));
		flock(fd, LOCK_UN);
	}
	close(fd);
}
