/* loss_scale.h: dynamic loss scaling for fp16 training, a small state
 * machine independent of any backend.
 *
 * fp16 gradients underflow below 2^-24; multiplying the loss by a scale S
 * before the backward pass shifts them into range, and the optimiser
 * divides by S again (fp32 master weights). S is kept as large as works:
 * a step whose gradients hold an inf or a NaN is skipped and S is halved;
 * after `interval` good steps in a row S doubles. */
#ifndef AAH_LOSS_SCALE_H
#define AAH_LOSS_SCALE_H

#include <stddef.h>

struct loss_scale {
	float scale;        /* multiply the loss by this before backward */
	float growth;       /* scale *= growth after interval good steps (2) */
	float backoff;      /* scale *= backoff on a step with inf/NaN (0.5) */
	float min_scale;    /* bounds: 1 and 2^24 */
	float max_scale;
	int interval;       /* good steps in a row before growing */
	int good;           /* good steps since the scale last changed */
	long steps, skipped;
};

/* scale starts at initial (65536 is the usual start), interval > 0 good
 * steps between growths. Returns -1 (after error()) on a bad setting. */
int loss_scale_init(struct loss_scale *s, float initial, int interval);
/* 1 when every one of count values is finite. */
int loss_scale_finite(const float *g, size_t count);
/* After the backward pass: finite says whether the scaled gradients were
 * all finite. Returns 1 when the step is to be applied (gradients times
 * 1/scale as it was before this call: pass that to the optimiser), 0 when
 * it is skipped; moves the scale. */
int loss_scale_update(struct loss_scale *s, int finite);

#endif
