/* config_int.h: what the files of the config module share (config.c the
 * loader, config_table.c the key-table reader): the reader's calls, for a
 * loader of another form of config.yml too. */
#ifndef AAH_CONFIG_INT_H
#define AAH_CONFIG_INT_H

#include "runner/config/config.h"

/* The file errors are reported against, and the config being read
 * (cfg->nni: an NNI v2 file's names for its keys; NULL: aah's own). */
struct config_ctx {
	const char *file;
	const struct aah_config *cfg;
};

/* "<file>:<line>:<col>: '<path>' <what><detail>"; returns -1. */
int config_fail_at(const struct config_ctx *c, unsigned line, unsigned col, const char *path,
		   const char *what, const char *detail);
/* Read mapping map (NULL: defaults only) through keys into base; prefix is
 * the dotted path of map, line:col where an absent required key is said. */
int config_parse_table(const struct config_ctx *c, const char *prefix, const struct ynode *map,
		       const struct cfg_key *keys, char *base, unsigned line, unsigned col);
/* Free what config_parse_table stored into base. */
void config_release_table(const struct cfg_key *keys, char *base);

#endif
