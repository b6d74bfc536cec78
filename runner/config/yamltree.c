/* yamltree.c: libyaml events -> a tree with positions, within limits. */
#include "runner/config/yamltree.h"
#include "fileio.h"
#include "strbuf.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct builder {
	const char *file;
	yaml_parser_t parser;
	size_t nodes;
};

static struct ynode *node_new(struct builder *b, enum ynode_kind kind, const yaml_mark_t *m)
{
	struct ynode *n = xcalloc(1, sizeof(*n));
	n->kind = kind;
	n->line = (unsigned)m->line + 1;
	n->col = (unsigned)m->column + 1;
	b->nodes++;
	return n;
}

void ynode_free(struct ynode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++) {
		ynode_free(n->children[i]);
		if (n->keys)
			free(n->keys[i]);
	}
	free(n->children);
	free(n->keys);
	free(n->key_line);
	free(n->key_col);
	free(n->value);
	free(n);
}

struct ynode *ynode_new_map(unsigned line, unsigned col)
{
	struct ynode *n = xcalloc(1, sizeof(*n));
	n->kind = YNODE_MAP;
	n->line = line;
	n->col = col;
	return n;
}

struct ynode *ynode_new_scalar(const char *value, int plain, unsigned line, unsigned col)
{
	struct ynode *n = xcalloc(1, sizeof(*n));
	n->kind = YNODE_SCALAR;
	n->value = xstrdup(value);
	n->plain = plain;
	n->line = line;
	n->col = col;
	return n;
}

void ynode_map_add(struct ynode *map, const char *key, unsigned line, unsigned col,
		   struct ynode *child)
{
	size_t k = map->n + 1;
	map->keys = xrealloc(map->keys, k * sizeof(*map->keys));
	map->key_line = xrealloc(map->key_line, k * sizeof(*map->key_line));
	map->key_col = xrealloc(map->key_col, k * sizeof(*map->key_col));
	map->children = xrealloc(map->children, k * sizeof(*map->children));
	map->keys[map->n] = xstrdup(key);
	map->key_line[map->n] = line;
	map->key_col[map->n] = col;
	map->children[map->n++] = child;
}

struct ynode *ynode_dup(const struct ynode *n)
{
	struct ynode *d = xcalloc(1, sizeof(*d));
	d->kind = n->kind;
	d->line = n->line;
	d->col = n->col;
	d->plain = n->plain;
	d->value = n->value ? xstrdup(n->value) : NULL;
	d->n = n->n;
	if (n->n) {
		d->children = xcalloc(n->n, sizeof(*d->children));
		for (size_t i = 0; i < n->n; i++)
			d->children[i] = ynode_dup(n->children[i]);
	}
	if (n->keys) {
		d->keys = xcalloc(n->n ? n->n : 1, sizeof(*d->keys));
		d->key_line = xcalloc(n->n ? n->n : 1, sizeof(*d->key_line));
		d->key_col = xcalloc(n->n ? n->n : 1, sizeof(*d->key_col));
		for (size_t i = 0; i < n->n; i++) {
			d->keys[i] = xstrdup(n->keys[i]);
			d->key_line[i] = n->key_line[i];
			d->key_col[i] = n->key_col[i];
		}
	}
	return d;
}

static void node_push(struct ynode *parent, struct ynode *child)
{
	parent->children = xrealloc(parent->children, (parent->n + 1) * sizeof(*parent->children));
	parent->children[parent->n++] = child;
}

static int next_event(struct builder *b, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&b->parser, ev)) {
		return error("%s:%zu:%zu: invalid YAML: %s", b->file,
			     b->parser.problem_mark.line + 1, b->parser.problem_mark.column + 1,
			     b->parser.problem ? b->parser.problem : "syntax error");
	}
	return 0;
}

/* Where a node sits, from the root: a chain of keys and sequence indexes
 * that errors print as "trial.env.A" or "tolerations[1].key". */
struct ypath {
	const struct ypath *up;   /* NULL at the root's children */
	const char *key;          /* a map's key, or NULL for a sequence item */
	size_t index;             /* a sequence item's index */
};

static void ypath_add(struct strbuf *sb, const struct ypath *p)
{
	if (!p)
		return;
	ypath_add(sb, p->up);
	if (!p->key)
		strbuf_addf(sb, "[%zu]", p->index);
	else if (sb->len)
		strbuf_addf(sb, ".%s", p->key);
	else
		strbuf_addstr(sb, p->key);
}

static int build_node(struct builder *b, yaml_event_t *ev, unsigned depth,
		      const struct ypath *path, struct ynode **out);

static int build_children(struct builder *b, struct ynode *n, unsigned depth,
			  const struct ypath *path)
{
	yaml_event_t ev;
	enum yaml_event_type_e end = n->kind == YNODE_MAP ? YAML_MAPPING_END_EVENT
							   : YAML_SEQUENCE_END_EVENT;
	for (;;) {
		if (next_event(b, &ev) < 0)
			return -1;
		if (ev.type == end) {
			yaml_event_delete(&ev);
			return 0;
		}
		if (n->kind == YNODE_MAP) {
			if (ev.type != YAML_SCALAR_EVENT) {
				int r = error("%s:%zu:%zu: mapping keys must be plain names", b->file,
					      ev.start_mark.line + 1, ev.start_mark.column + 1);
				yaml_event_delete(&ev);
				return r;
			}
			const char *key = (const char *)ev.data.scalar.value;
			for (size_t i = 0; i < n->n; i++) {
				if (!strcmp(n->keys[i], key)) {
					struct strbuf where = STRBUF_INIT;
					struct ypath here = { path, key, 0 };
					ypath_add(&where, &here);
					int r = error("%s:%zu:%zu: duplicate key '%s' (first at line %u)",
						      b->file, ev.start_mark.line + 1,
						      ev.start_mark.column + 1, strbuf_str(&where),
						      n->key_line[i]);
					strbuf_release(&where);
					yaml_event_delete(&ev);
					return r;
				}
			}
			n->keys = xrealloc(n->keys, (n->n + 1) * sizeof(*n->keys));
			n->key_line = xrealloc(n->key_line, (n->n + 1) * sizeof(*n->key_line));
			n->key_col = xrealloc(n->key_col, (n->n + 1) * sizeof(*n->key_col));
			n->keys[n->n] = xstrdup(key);
			n->key_line[n->n] = (unsigned)ev.start_mark.line + 1;
			n->key_col[n->n] = (unsigned)ev.start_mark.column + 1;
			yaml_event_delete(&ev);
			if (next_event(b, &ev) < 0) {
				free(n->keys[n->n]);
				return -1;
			}
		}
		struct ynode *child = NULL;
		struct ypath here = { path, n->kind == YNODE_MAP ? n->keys[n->n] : NULL, n->n };
		int r = build_node(b, &ev, depth + 1, &here, &child);
		yaml_event_delete(&ev);
		if (r < 0) {
			if (n->kind == YNODE_MAP)
				free(n->keys[n->n]);
			return -1;
		}
		node_push(n, child);
	}
}

static int build_node(struct builder *b, yaml_event_t *ev, unsigned depth,
		      const struct ypath *path, struct ynode **out)
{
	struct ynode *n;
	if (depth > YAMLTREE_MAX_DEPTH)
		return error("%s:%zu:%zu: nesting deeper than %d levels is refused", b->file,
			     ev->start_mark.line + 1, ev->start_mark.column + 1, YAMLTREE_MAX_DEPTH);
	if (b->nodes >= YAMLTREE_MAX_NODES)
		return error("%s:%zu:%zu: more than %d YAML nodes is refused", b->file,
			     ev->start_mark.line + 1, ev->start_mark.column + 1, YAMLTREE_MAX_NODES);
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		n = node_new(b, YNODE_SCALAR, &ev->start_mark);
		n->value = xstrndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
		n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		*out = n;
		return 0;
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT:
		n = node_new(b, ev->type == YAML_MAPPING_START_EVENT ? YNODE_MAP : YNODE_SEQ,
			     &ev->start_mark);
		if (build_children(b, n, depth, path) < 0) {
			ynode_free(n);
			return -1;
		}
		*out = n;
		return 0;
	case YAML_ALIAS_EVENT:
		return error("%s:%zu:%zu: YAML aliases (*name) are not supported", b->file,
			     ev->start_mark.line + 1, ev->start_mark.column + 1);
	default:
		return error("%s:%zu:%zu: unexpected YAML structure", b->file,
			     ev->start_mark.line + 1, ev->start_mark.column + 1);
	}
}

int yamltree_parse(const char *file, const char *text, size_t len, struct ynode **out)
{
	struct builder b = { .file = file };
	yaml_event_t ev;
	struct ynode *root = NULL;
	int r = -1;

	if (len > YAMLTREE_MAX_BYTES)
		return error("%s: file is %zu bytes, over the %zu-byte limit for a config", file, len,
			     YAMLTREE_MAX_BYTES);
	if (!yaml_parser_initialize(&b.parser))
		return error("cannot initialise the YAML parser");
	yaml_parser_set_input_string(&b.parser, (const unsigned char *)text, len);
	for (;;) {
		if (next_event(&b, &ev) < 0)
			goto out;
		yaml_event_type_t t = ev.type;
		if (t == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_END_EVENT) {
			yaml_event_delete(&ev);
			continue;
		}
		if (t == YAML_DOCUMENT_START_EVENT) {
			yaml_event_delete(&ev);
			if (root) {
				error("%s:%zu:%zu: only one YAML document is allowed", file,
				      ev.start_mark.line + 1, ev.start_mark.column + 1);
				goto out;
			}
			continue;
		}
		int rr = build_node(&b, &ev, 1, NULL, &root);
		yaml_event_delete(&ev);
		if (rr < 0)
			goto out;
	}
	if (!root) {
		error("%s: the file is empty", file);
		goto out;
	}
	*out = root;
	root = NULL;
	r = 0;
out:
	ynode_free(root);
	yaml_parser_delete(&b.parser);
	return r;
}

int yamltree_load(const char *file, struct ynode **out)
{
	char *text;
	size_t len;
	if (fileio_read(file, YAMLTREE_MAX_BYTES, &text, &len) < 0)
		return -1;
	int r = yamltree_parse(file, text, len, out);
	free(text);
	return r;
}

const struct ynode *ynode_get(const struct ynode *n, const char *key)
{
	if (!n || n->kind != YNODE_MAP)
		return NULL;
	for (size_t i = 0; i < n->n; i++)
		if (!strcmp(n->keys[i], key))
			return n->children[i];
	return NULL;
}

static cJSON *scalar_to_json(const struct ynode *n)
{
	const char *v = n->value;
	if (!n->plain)
		return cJSON_CreateString(v);
	if (!*v || !strcmp(v, "null") || !strcmp(v, "~") || !strcmp(v, "Null") || !strcmp(v, "NULL"))
		return cJSON_CreateNull();
	if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
		return cJSON_CreateTrue();
	if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
		return cJSON_CreateFalse();
	double d;
	if (util_parse_double(v, &d) == 0)
		return cJSON_CreateNumber(d);
	return cJSON_CreateString(v);
}

cJSON *ynode_to_json(const struct ynode *n)
{
	cJSON *out;
	if (!n)
		return cJSON_CreateNull();
	switch (n->kind) {
	case YNODE_SCALAR:
		return scalar_to_json(n);
	case YNODE_MAP:
		out = cJSON_CreateObject();
		for (size_t i = 0; i < n->n; i++)
			cJSON_AddItemToObject(out, n->keys[i], ynode_to_json(n->children[i]));
		return out;
	case YNODE_SEQ:
		out = cJSON_CreateArray();
		for (size_t i = 0; i < n->n; i++)
			cJSON_AddItemToArray(out, ynode_to_json(n->children[i]));
		return out;
	}
	return cJSON_CreateNull();
}
