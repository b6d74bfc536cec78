/* morph_record.h: the morphism record (aah-morph/1, morph.json beside a
 * child's arch.json): which parent trial the child starts from, the
 * morphisms in order, the layers each added with how to start them, and
 * which parent layer every other layer inherits. The trainer maps the
 * parent's checkpoint through it (trialimg/inherit.c). */
#ifndef AAH_TUNER_MORPH_RECORD_H
#define AAH_TUNER_MORPH_RECORD_H

#include <cjson/cJSON.h>

#include "graph.h"

/* steps[0..n-1]: the graphs after each morphism (kinds[k] made steps[k]),
 * each a copy of the one before with layers appended, so a layer index
 * below parent->nlayers is the parent's layer of that index. parent_arch
 * is the parent's arch.json (its layer k is parent layer k); parent_place
 * the place of its last launch (runner/store/expdir.h), where its
 * checkpoint is: named as "parent_dir" from the child's trial directory
 * when it is not the parent's trial directory itself (NULL or ""). */
cJSON *morph_record(const struct tgraph *parent, const cJSON *parent_arch, unsigned parent_seq,
		    const char *parent_place, const struct tgraph *const *steps, const int *kinds,
		    int n);

/* The init names of the format, by enum tg_init. */
const char *morph_init_name(int init);

#endif
