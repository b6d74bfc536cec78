/* checkpoint.c: a trial's checkpoint file: header and tensors (checkpoint.h). */
#include "trialimg/checkpoint.h"
#include "fileio.h"   /* fileio_write_atomic, fileio_read, fileio_mkdir_p */
#include "trialimg/model.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The length of the header that starts the len bytes at buf, by its
 * magic: 0 when they are no checkpoint this trainer reads. */
static size_t ckpt_header_len(const void *buf, size_t len)
{
	if (len >= CKPT_HEADER_2 && !memcmp(buf, CKPT_MAGIC, 8))
		return sizeof(struct ckpt_header);
	if (len >= CKPT_HEADER_2 && !memcmp(buf, CKPT_MAGIC_3, 8))
		return CKPT_HEADER_3;
	if (len >= CKPT_HEADER_2 && !memcmp(buf, CKPT_MAGIC_2, 8))
		return CKPT_HEADER_2;
	return 0;
}

int checkpoint_write(const char *dir, const char *path, const struct ckpt_header *hdr,
		     const struct model *m)
{
	struct ckpt_header h = *hdr;
	memcpy(h.magic, CKPT_MAGIC, sizeof(h.magic));
	size_t np = m->n_params * sizeof(float), ns = m->n_stats * sizeof(float);
	size_t len = sizeof(h) + 2 * np + ns;
	char *buf = xmalloc(len);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), m->params, np);
	memcpy(buf + sizeof(h) + np, m->velocity, np);
	memcpy(buf + sizeof(h) + 2 * np, m->stats, ns);
	int rc = fileio_mkdir_p(dir, 0755) || fileio_write_atomic(path, buf, len) ? -1 : 0;
	free(buf);
	return rc;
}

/* The checkpoint at `path` if it is one of this network's (header in *h,
 * zero past an older header's end; *data: where the tensors start),
 * else NULL with the error reported; `whose` names the network. */
static char *checkpoint_read(const char *path, const struct model *m, struct ckpt_header *h,
			     const char **data, const char *whose)
{
	char *buf;
	size_t len, np = m->n_params * sizeof(float), ns = m->n_stats * sizeof(float);
	if (fileio_read(path, sizeof(*h) + 2 * np + ns + 1, &buf, &len))
		return NULL;
	size_t hl = ckpt_header_len(buf, len);
	memset(h, 0, sizeof(*h));
	if (hl && len == hl + 2 * np + ns)
		memcpy(h, buf, hl);
	if (!hl || len != hl + 2 * np + ns || h->n_params != m->n_params ||
	    h->n_stats != m->n_stats) {
		free(buf);
		error("checkpoint '%s' does not belong to %s", path, whose);
		return NULL;
	}
	*data = buf + hl;
	return buf;
}

int checkpoint_load(const char *path, struct model *m, struct ckpt_header *h, const char *whose)
{
	size_t np = m->n_params * sizeof(float), ns = m->n_stats * sizeof(float);
	const char *data;
	char *buf = checkpoint_read(path, m, h, &data, whose);
	if (!buf)
		return -1;
	memcpy(m->params, data, np);
	memcpy(m->velocity, data + np, np);
	memcpy(m->stats, data + 2 * np, ns);
	free(buf);
	return 0;
}

int checkpoint_weights(const char *path, struct model *m)
{
	struct ckpt_header h;
	size_t np = m->n_params * sizeof(float), ns = m->n_stats * sizeof(float);
	const char *data;
	char *buf = checkpoint_read(path, m, &h, &data, "the network of its arch.json");
	if (!buf)
		return -1;
	memcpy(m->params, data, np);
	memcpy(m->stats, data + 2 * np, ns);
	free(buf);
	return 0;
}

int checkpoint_peek(const char *path, struct ckpt_header *h)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return error_errno("cannot open '%s'", path);
	size_t got = fread(h, 1, sizeof(*h), f);
	fclose(f);
	return ckpt_header_len(h, got) ? 1 : 0;
}
