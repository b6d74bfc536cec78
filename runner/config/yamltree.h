/* yamltree.h: a YAML document (libyaml) as a small tree of scalars, maps and
 * sequences that remembers where every node came from (line, column). */
#ifndef AAH_YAMLTREE_H
#define AAH_YAMLTREE_H

#include <cjson/cJSON.h>
#include <stddef.h>

enum ynode_kind { YNODE_SCALAR, YNODE_MAP, YNODE_SEQ };

struct ynode {
	enum ynode_kind kind;
	unsigned line, col;     /* 1-based position in the file */
	char *value;            /* SCALAR: the text */
	int plain;              /* SCALAR: unquoted (so "null", "true" are keywords) */
	char **keys;            /* MAP: key i names children[i] */
	unsigned *key_line, *key_col;
	struct ynode **children;/* MAP, SEQ */
	size_t n;
};

/* Limits that keep a hostile file from costing more than it is worth. */
#define YAMLTREE_MAX_BYTES ((size_t)1 << 20)
#define YAMLTREE_MAX_DEPTH 32
#define YAMLTREE_MAX_NODES 100000

/* Parse the single YAML document in `text`; `file` names it in errors
 * ("file:line:col: ..."). Aliases and multiple documents are refused. The
 * caller frees *out with ynode_free. */
int yamltree_parse(const char *file, const char *text, size_t len, struct ynode **out);
/* Read and parse a file, refusing files over YAMLTREE_MAX_BYTES. */
int yamltree_load(const char *file, struct ynode **out);
void ynode_free(struct ynode *n);
/* A deep copy, positions included. The caller frees it with ynode_free. */
struct ynode *ynode_dup(const struct ynode *n);

/* Nodes made in code, each at a file position (line, col: where what it
 * stands for was written). The caller owns them (ynode_free); a child
 * added to a map is the map's. */
struct ynode *ynode_new_map(unsigned line, unsigned col);
struct ynode *ynode_new_scalar(const char *value, int plain, unsigned line, unsigned col);
void ynode_map_add(struct ynode *map, const char *key, unsigned line, unsigned col,
		   struct ynode *child);

/* The child of a map under `key`, or NULL (also when n is not a map). */
const struct ynode *ynode_get(const struct ynode *n, const char *key);
/* Convert a node to JSON (scalars typed the YAML 1.2 core-schema way). */
cJSON *ynode_to_json(const struct ynode *n);

#endif
