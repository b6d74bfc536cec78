/* inherit.h: weight inheritance. A child trial starts from its parent's
 * trained weights, mapped through the morphism record the tuner wrote
 * beside its arch.json (morph.json, aah-morph/1; docs/formats.md), so that
 * before its first step the child computes what the parent computed. */
#ifndef AAH_INHERIT_H
#define AAH_INHERIT_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "trialimg/model.h"

/* Fill child's parameters and batchnorm statistics (child allocated by
 * model_alloc, which initialised them from its seed) from parent through
 * record: inherited layers take the parent's values, channels a "wider"
 * replicated get their outgoing weights divided among the copies (Net2Net,
 * the copies perturbed by +-noise of their share, which keeps the sum),
 * "identity" layers pass their input through, "zero" layers add nothing,
 * "random" layers keep their initialisation. Errors name the layer. */
int inherit_map(struct model *child, const struct model *parent, const cJSON *record,
		uint64_t seed, float noise);

/* The trainer's step: when trial_dir has a morph.json, read the parent's
 * arch.json and checkpoint (a sibling trial directory) and map them into
 * m. Returns 1 when m inherited (parent_id gets the parent trial's id), 0
 * when there is no record or the parent has no checkpoint (a warning says
 * so: the child trains from its own initialisation), -1 on a bad record. */
int inherit_from_parent(struct model *m, const char *trial_dir, uint64_t seed,
			char parent_id[16]);

/* What inherit_from_parent would answer, without touching any weights: a
 * trial resumed from its own checkpoint still started from its parent's. */
int inherit_parent_id(const char *trial_dir, char parent_id[16]);

#endif
