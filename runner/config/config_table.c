/* config_table.c: a YAML mapping read through a key table (config.h's
 * struct cfg_key): each value checked against its type and range, absent
 * keys given their default, every error at file:line:col naming the key. */
#include "runner/config/config.h"
#include "runner/config/config_int.h"
#include "strbuf.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int config_parse_duration(const char *s, double *out)
{
	char *end;
	double mult = 1;
	if (!s || !*s)
		return -1;
	double v = strtod(s, &end);
	if (end == s || !isfinite(v) || v < 0)
		return -1;
	if (*end) {
		switch (*end) {
		case 's': mult = 1; break;
		case 'm': mult = 60; break;
		case 'h': mult = 3600; break;
		case 'd': mult = 86400; break;
		default: return -1;
		}
		if (end[1])
			return -1;
	}
	*out = v * mult;
	return 0;
}

int config_fail_at(const struct config_ctx *c, unsigned line, unsigned col, const char *path,
		   const char *fmt, const char *detail)
{
	return error("%s:%u:%u: '%s' %s%s", c->file, line, col,
		     c->cfg ? nni_config_written(c->cfg->nni, path) : path, fmt, detail ? detail : "");
}

static const char *nearest_key(const struct cfg_key *keys, const char *name)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	for (const struct cfg_key *k = keys; k->name; k++) {
		size_t d = util_edit_distance(name, k->name);
		if (strcasecmp(name, k->name) == 0)
			d = 0;
		if (d < best_d) {
			best_d = d;
			best = k->name;
		}
	}
	size_t len = strlen(name);
	return best && best_d <= (len > 6 ? 3 : 2) ? best : NULL;
}

static int is_null(const struct ynode *n)
{
	return n->kind == YNODE_SCALAR && n->plain &&
	       (!*n->value || !strcmp(n->value, "null") || !strcmp(n->value, "~"));
}

static int set_value(const struct config_ctx *c, const char *path, const struct cfg_key *k,
		     const struct ynode *n, char *base);

/* How much of a key's `def` is a value: "VALUE" or "VALUE (note)"; a def
 * that opens with "(" is a note alone (no value), and so is an empty
 * collection "{}" or "[]" (free-form keys are NULL when empty). 0: none. */
static size_t default_len(const struct cfg_key *k)
{
	if (!k->def || k->def[0] == '(')
		return 0;
	const char *note = strstr(k->def, " (");
	size_t len = note ? (size_t)(note - k->def) : strlen(k->def);
	if (len == 2 && (!strncmp(k->def, "{}", 2) || !strncmp(k->def, "[]", 2)))
		return 0;
	return len;
}

/* A key's default value as a node, as if written in the file, or NULL
 * when it has none. The caller frees it. */
static struct ynode *default_node(const char *path, const struct cfg_key *k)
{
	size_t len = default_len(k);
	struct ynode *n = NULL;
	if (len && yamltree_parse(path, k->def, len, &n) < 0)
		BUG("the default of '%s' (\"%s\") is not YAML", path, k->def);
	return n;
}

/* An absent key takes its default: the one place defaults are applied. */
static int apply_default(const struct config_ctx *c, const char *path, const struct cfg_key *k,
			 char *base, unsigned line, unsigned col)
{
	if (k->type == CFG_SECTION)
		return config_parse_table(c, path, NULL, k->section, base + k->offset, line, col);
	struct ynode *n = default_node(path, k);
	if (!n)
		return 0;
	if (k->type == CFG_ANY) {
		*(const struct ynode **)(base + k->offset) = n;
		return 0;
	}
	if (set_value(c, path, k, n, base) < 0)
		BUG("the default of '%s' (\"%s\") is not a valid value", path, k->def);
	ynode_free(n);
	return 0;
}

int config_parse_table(const struct config_ctx *c, const char *prefix, const struct ynode *map,
		       const struct cfg_key *keys, char *base, unsigned line, unsigned col)
{
	if (map && map->kind != YNODE_MAP)
		return config_fail_at(c, map->line, map->col, prefix, "must be a mapping of keys", NULL);
	for (size_t i = 0; map && i < map->n; i++) {
		const struct cfg_key *k = keys;
		while (k->name && strcmp(k->name, map->keys[i]))
			k++;
		char *path = *prefix ? xstrfmt("%s.%s", prefix, map->keys[i]) : xstrdup(map->keys[i]);
		if (!k->name) {
			const char *near = nearest_key(keys, map->keys[i]);
			char *hint = near ? xstrfmt(" (did you mean '%s'?)", near)
					  : xstrdup(" (see docs/config.md)");
			config_fail_at(c, map->key_line[i], map->key_col[i], path, "is not a known key", hint);
			free(hint);
			free(path);
			return -1;
		}
		int r = set_value(c, path, k, map->children[i], base);
		free(path);
		if (r < 0)
			return -1;
	}
	for (const struct cfg_key *k = keys; k->name; k++) {
		if (ynode_get(map, k->name))
			continue;
		char *path = *prefix ? xstrfmt("%s.%s", prefix, k->name) : xstrdup(k->name);
		int r;
		if (k->rule && k->rule->required) {
			char *hint = xstrfmt(": %s", k->help ? k->help : "");
			r = config_fail_at(c, line, col, path, "is required", hint);
			free(hint);
		} else {
			r = apply_default(c, path, k, base, line, col);
		}
		free(path);
		if (r < 0)
			return -1;
	}
	return 0;
}

const struct cfg_rule cfg_required = { .required = 1 };

/* One end of a range as the user writes it: durations with the largest
 * unit that divides them (0, 0.01s, 1m, 365d), other numbers plainly. */
static void add_limit(struct strbuf *sb, const struct cfg_key *k, double v)
{
	static const struct { double secs; const char *unit; } units[] = {
		{ CFG_DAY, "d" }, { 3600, "h" }, { 60, "m" },
	};
	if (k->type == CFG_NUM && v >= 1e6) {   /* 1e12, not 1000000000000 */
		int e = (int)floor(log10(v));
		strbuf_addf(sb, "%.15ge%d", v / pow(10, e), e);
		return;
	}
	if (k->type != CFG_DURATION || v == 0) {
		strbuf_addf(sb, "%.15g", v);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (fmod(v, units[i].secs) == 0) {
			strbuf_addf(sb, "%.15g%s", v / units[i].secs, units[i].unit);
			return;
		}
	strbuf_addf(sb, "%.15gs", v);
}

static void add_range(struct strbuf *sb, const struct cfg_key *k)
{
	add_limit(sb, k, k->rule->min);
	strbuf_addstr(sb, " to ");
	add_limit(sb, k, k->rule->max);
}

char *config_describe_type(const struct cfg_key *k)
{
	static const char *const names[] = {
		[CFG_STR] = "string", [CFG_INT] = "integer", [CFG_NUM] = "number",
		[CFG_BOOL] = "bool", [CFG_DURATION] = "duration", [CFG_ENUM] = "choice",
		[CFG_SECTION] = "section", [CFG_ANY] = "mapping", [CFG_PLATFORM] = "choice",
	};
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, names[k->type]);
	if (k->rule && !k->rule->required) {
		strbuf_addstr(&sb, ", ");
		add_range(&sb, k);
	}
	for (const char *const *w = k->type == CFG_INT ? k->choices : NULL; w && *w; w++)
		strbuf_addf(&sb, ", or %s", *w);
	return strbuf_detach(&sb, NULL);
}

/* A number (an integer's digits when it overflows a long: text) against
 * the key's range. */
static int check_range(const struct config_ctx *c, const char *path, const struct cfg_key *k,
		       const struct ynode *n, double v, int overflow)
{
	if (!k->rule || k->rule->required)
		BUG("number key '%s' has no range", path);
	if (!overflow && v >= k->rule->min && v <= k->rule->max)
		return 0;
	/* the plainest fact first: a count of 0, a negative size */
	const char *lead = overflow || v > k->rule->min ? "must be"
			   : k->rule->min > 0 && v <= 0 ? "must be greater than 0,"
			   : v < 0 ? "must not be negative," : "must be";
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, " between ");
	add_limit(&sb, k, k->rule->min);
	strbuf_addstr(&sb, " and ");
	add_limit(&sb, k, k->rule->max);
	strbuf_addf(&sb, ", got %s", n->value);
	config_fail_at(c, n->line, n->col, path, lead, sb.buf);
	strbuf_release(&sb);
	return -1;
}

/* An integer too large for a long is a range error, not a type error. */
static int integer_overflows(const char *s)
{
	s += *s == '-' || *s == '+';
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static int set_value(const struct config_ctx *c, const char *path, const struct cfg_key *k,
		     const struct ynode *n, char *base)
{
	void *dst = base + k->offset;
	double d;
	long l;

	if (k->type == CFG_SECTION)
		return config_parse_table(c, path, is_null(n) ? NULL : n, k->section, dst, n->line, n->col);
	if (k->type == CFG_ANY) {
		/* The struct owns a copy; null takes the default. */
		const struct ynode **slot = dst;
		ynode_free((struct ynode *)*slot);
		*slot = is_null(n) ? default_node(path, k) : ynode_dup(n);
		return 0;
	}
	if (n->kind != YNODE_SCALAR)
		return config_fail_at(c, n->line, n->col, path, "must be a single value, not a list or mapping",
			       NULL);
	if (is_null(n) && k->type != CFG_STR)
		return config_fail_at(c, n->line, n->col, path, "needs a value", NULL);

	switch (k->type) {
	case CFG_STR:
	case CFG_ENUM:
		if (k->type == CFG_ENUM) {
			const char *const *ch = k->choices;
			while (*ch && strcmp(*ch, n->value))
				ch++;
			if (!*ch) {
				struct strbuf sb = STRBUF_INIT;
				strbuf_addf(&sb, "'%s'; expected one of:", n->value);
				for (ch = k->choices; *ch; ch++)
					strbuf_addf(&sb, " %s", *ch);
				config_fail_at(c, n->line, n->col, path, "has an unknown value ", sb.buf);
				strbuf_release(&sb);
				return -1;
			}
		}
		free(*(char **)dst);
		*(char **)dst = xstrdup(n->value);
		return 0;
	case CFG_INT:
		/* an integer's words (pool.devices: quota) are stored as -1, -2, ... */
		for (const char *const *w = k->choices; w && *w; w++)
			if (n->plain && !strcmp(*w, n->value)) {
				*(long *)dst = -1 - (long)(w - k->choices);
				return 0;
			}
		if (n->plain && util_parse_long(n->value, LONG_MIN, LONG_MAX, &l) < 0 &&
		    integer_overflows(n->value))
			return check_range(c, path, k, n, 0, 1);
		if (!n->plain || util_parse_long(n->value, LONG_MIN, LONG_MAX, &l) < 0) {
			if (k->choices) {
				char *what = config_describe_type(k);
				config_fail_at(c, n->line, n->col, path, "must be an ", what);
				free(what);
				return -1;
			}
			return config_fail_at(c, n->line, n->col, path, "must be an integer, got ", n->value);
		}
		if (check_range(c, path, k, n, (double)l, 0) < 0)
			return -1;
		*(long *)dst = l;
		return 0;
	case CFG_NUM:
		if (!n->plain || util_parse_double(n->value, &d) < 0)
			return config_fail_at(c, n->line, n->col, path, "must be a number, got ", n->value);
		if (check_range(c, path, k, n, d, 0) < 0)
			return -1;
		*(double *)dst = d;
		return 0;
	case CFG_DURATION:
		if (n->value[0] == '-')
			return config_fail_at(c, n->line, n->col, path, "must not be negative, got ", n->value);
		if (config_parse_duration(n->value, &d) < 0)
			return config_fail_at(c, n->line, n->col, path,
				       "must be a duration like 90s, 15m, 72h or 2d, got ", n->value);
		if (check_range(c, path, k, n, d, 0) < 0)
			return -1;
		*(double *)dst = d;
		return 0;
	case CFG_BOOL:
		if (!strcmp(n->value, "true") || !strcmp(n->value, "True"))
			*(int *)dst = 1;
		else if (!strcmp(n->value, "false") || !strcmp(n->value, "False"))
			*(int *)dst = 0;
		else
			return config_fail_at(c, n->line, n->col, path, "must be true or false, got ", n->value);
		return 0;
	default:
		BUG("unhandled config type %d", k->type);
	}
}

void config_release_table(const struct cfg_key *keys, char *base)
{
	for (const struct cfg_key *k = keys; k->name; k++) {
		void *dst = base + k->offset;
		if (k->type == CFG_STR || k->type == CFG_ENUM || k->type == CFG_PLATFORM) {
			free(*(char **)dst);
			*(char **)dst = NULL;
		} else if (k->type == CFG_ANY) {
			ynode_free((struct ynode *)*(const struct ynode **)dst);
			*(const struct ynode **)dst = NULL;
		} else if (k->type == CFG_SECTION) {
			config_release_table(k->section, dst);
		}
	}
}

int config_parse_section(const struct aah_config *cfg, const char *section,
			 const struct ynode *node, const struct cfg_key *keys, void *out)
{
	struct config_ctx c = { .file = cfg->path, .cfg = cfg };
	return config_parse_table(&c, section, node, keys, out, node ? node->line : 1, node ? node->col : 1);
}

void config_release_section(const struct cfg_key *keys, void *out)
{
	config_release_table(keys, out);
}

void config_walk_keys(const struct cfg_key *keys, const char *prefix,
		      void (*fn)(const char *path, const struct cfg_key *key, void *arg), void *arg)
{
	for (const struct cfg_key *k = keys; k->name; k++) {
		char *path = *prefix ? xstrfmt("%s.%s", prefix, k->name) : xstrdup(k->name);
		if (k->type == CFG_SECTION)
			config_walk_keys(k->section, path, fn, arg);
		else
			fn(path, k, arg);
		free(path);
	}
}
