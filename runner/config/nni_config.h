/* nni_config.h: NNI's v2 experiment config (trialCommand, trainingService,
 * ...) read beside AIPerf's v1 form: every key mapped to aah's, or refused
 * with its file:line:col and why (docs/nni.md). The result is the tree of
 * aah's keys config.c reads as it reads a v1 file (each node where its v2
 * key was written) and the list of what became of each key, which `check`
 * prints and config.c's errors use to name keys as the user wrote them. */
#ifndef AAH_NNI_CONFIG_H
#define AAH_NNI_CONFIG_H

#include <stddef.h>

#include "runner/config/yamltree.h" /* struct ynode */
#include "strbuf.h"

struct nni_config_entry {
	char *written;            /* the key as the file writes it, dotted ("trainingService.platform") */
	unsigned line, col;
	char *aah;                /* aah's key it became ("trainingServicePlatform"); NULL: none */
	char *note;               /* what else to know (a value converted, a key with no effect);
				   * or NULL; owned */
};

struct nni_config {
	struct nni_config_entry *v; /* (n), in the file's order; owned */
	size_t n;
	struct ynode *search_space; /* searchSpace, the search space inline; or NULL; owned */
};

/* 1 when root (a config's top-level mapping) is NNI's v2 form: it has one
 * of v2's own keys (trialCommand, trainingService, searchSpaceFile,
 * maxTrialNumber, ... in any case and with or without underscores, as NNI
 * reads them). */
int nni_config_is_v2(const struct ynode *root);

/* Read the YAML file `path` into *root (yamltree_load), aah's tree: a v1
 * file as it is; a v2 file mapped by nni_config_translate (*out its
 * mapping; NULL for v1). On an error *root and *out are NULL. */
int nni_config_load(const char *path, const char *const *platforms, size_t nplatforms,
		    struct ynode **root, struct nni_config **out);

/* Map the v2 tree *root (replaced by aah's tree; freed) read from `file`,
 * for the platforms aah has (names[0..n): trainingService.platform takes
 * one of them, or is refused with what to use instead). *out: the mapping
 * (nni_config_free). Errors: "<file>:<line>:<col>: '<key>' ...". */
int nni_config_translate(const char *file, const char *const *platforms, size_t nplatforms,
			 struct ynode **root, struct nni_config **out);
void nni_config_free(struct nni_config *m);

/* The key as the user wrote it for aah's key `aah` ("trial.command" ->
 * "trialCommand"); aah itself when the file is not v2 (m NULL) or no v2
 * key stands for it. */
const char *nni_config_written(const struct nni_config *m, const char *aah);

/* The mapping, one line per key: "<file>:<line>:<col> <written> -> <aah
 * key> (note)", or "... <written>: <note>" for a key with no aah key. */
void nni_config_describe(const struct nni_config *m, const char *file, struct strbuf *sb);

#endif
