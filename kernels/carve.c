/* carve.c: regions of one allocation (see carve.h). */
#include "kernels/carve.h"

#include <stdint.h>

#include "util.h"

int carve_init(struct carve *c, size_t align)
{
	if (!align || (align & (align - 1)))
		return error("carve alignment %zu: must be a power of two", align);
	*c = (struct carve){ .align = align };
	return 0;
}

int carve_add(struct carve *c, const char *name, size_t bytes)
{
	if (c->n == CARVE_MAX)
		return error("carving region '%s': the layout holds %d regions at most", name,
			     CARVE_MAX);
	size_t at = (c->total + c->align - 1) & ~(c->align - 1);
	if (at < c->total || bytes > SIZE_MAX - at)
		return error("carving region '%s' of %zu bytes: the block would pass SIZE_MAX", name,
			     bytes);
	c->r[c->n].name = name;
	c->r[c->n].bytes = bytes;
	c->r[c->n].offset = at;
	c->total = at + bytes;
	return c->n++;
}

void *carve_at(const struct carve *c, void *base, int i)
{
	return (char *)base + c->r[i].offset;
}
