/* loss_scale.c: dynamic loss scaling (see loss_scale.h). */
#include "kernels/loss_scale.h"

#include <math.h>

#include "util.h"

int loss_scale_init(struct loss_scale *s, float initial, int interval)
{
	if (!(initial >= 1.0f && initial <= 16777216.0f))
		return error("initial loss scale %g: must be from 1 to 2^24", (double)initial);
	if (interval <= 0)
		return error("loss scale growth interval %d: must be a positive number of steps",
			     interval);
	*s = (struct loss_scale){
		.scale = initial,
		.growth = 2.0f,
		.backoff = 0.5f,
		.min_scale = 1.0f,
		.max_scale = 16777216.0f,
		.interval = interval,
	};
	return 0;
}

int loss_scale_finite(const float *g, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (!isfinite(g[i]))
			return 0;
	return 1;
}

int loss_scale_update(struct loss_scale *s, int finite)
{
	s->steps++;
	if (!finite) {
		s->skipped++;
		s->good = 0;
		s->scale = fmaxf(s->scale * s->backoff, s->min_scale);
		return 0;
	}
	if (++s->good >= s->interval) {
		s->good = 0;
		s->scale = fminf(s->scale * s->growth, s->max_scale);
	}
	return 1;
}
