/* space.c: NNI search_space.json parsing and sampling. */
#include "space.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const struct {
	const char *name;
	enum space_type type;
	int nargs;           /* required number of _value entries; 0 = choice */
} space_types[] = {
	{ "choice", SPACE_CHOICE, 0 },
	{ "randint", SPACE_RANDINT, 2 },
	{ "uniform", SPACE_UNIFORM, 2 },
	{ "quniform", SPACE_QUNIFORM, 3 },
	{ "loguniform", SPACE_LOGUNIFORM, 2 },
	{ "qloguniform", SPACE_QLOGUNIFORM, 3 },
	{ "normal", SPACE_NORMAL, 2 },
	{ "qnormal", SPACE_QNORMAL, 3 },
	{ "lognormal", SPACE_LOGNORMAL, 2 },
	{ "qlognormal", SPACE_QLOGNORMAL, 3 },
};

const char *space_type_name(enum space_type t)
{
	for (size_t i = 0; i < ARRAY_SIZE(space_types); i++)
		if (space_types[i].type == t)
			return space_types[i].name;
	return "?";
}

static int parse_param(struct space_param *p, const cJSON *item)
{
	const char *key = item->string;
	if (!cJSON_IsObject(item))
		return error("search space: '%s' must be an object with _type and _value", key);
	/* cJSON keeps both of a repeated key and reads the first: refuse it. */
	for (const cJSON *a = item->child; a; a = a->next)
		for (const cJSON *b = item->child; b != a; b = b->next)
			if (!strcmp(a->string, b->string))
				return error("search space: key '%s.%s' appears twice", key, a->string);
	const cJSON *jt = cJSON_GetObjectItemCaseSensitive(item, "_type");
	const cJSON *jv = cJSON_GetObjectItemCaseSensitive(item, "_value");
	if (!cJSON_IsString(jt))
		return error("search space: '%s' has no string '_type'", key);
	if (!cJSON_IsArray(jv))
		return error("search space: '%s' has no '_value' array", key);
	int nargs = -1;
	for (size_t i = 0; i < ARRAY_SIZE(space_types); i++)
		if (!strcmp(space_types[i].name, jt->valuestring)) {
			p->type = space_types[i].type;
			nargs = space_types[i].nargs;
		}
	if (nargs < 0)
		return error("search space: '%s' has unknown _type '%s' (known: choice, randint, "
			     "uniform, quniform, loguniform, qloguniform, normal, qnormal, lognormal, "
			     "qlognormal)", key, jt->valuestring);
	int n = cJSON_GetArraySize(jv);
	if (nargs == 0) {
		if (n < 1)
			return error("search space: choice '%s' needs at least one value", key);
		const cJSON *c;
		cJSON_ArrayForEach(c, jv)
			if (!cJSON_IsNumber(c) && !cJSON_IsString(c) && !cJSON_IsBool(c))
				return error("search space: choice '%s': only numbers, strings and "
					     "booleans are supported (nested spaces are not)", key);
		p->choices = cJSON_Duplicate(jv, 1);
		p->nchoices = n;
		return 0;
	}
	if (n != nargs)
		return error("search space: %s '%s' needs %d values in _value, got %d",
			     jt->valuestring, key, nargs, n);
	double v[3] = { 0, 0, 0 };
	for (int i = 0; i < n; i++) {
		const cJSON *e = cJSON_GetArrayItem(jv, i);
		if (!cJSON_IsNumber(e))
			return error("search space: '%s': _value[%d] is not a number", key, i);
		v[i] = e->valuedouble;
	}
	p->a = v[0];
	p->b = v[1];
	p->q = v[2];
	switch (p->type) {
	case SPACE_RANDINT:
		if (p->a != floor(p->a) || p->b != floor(p->b) || p->b <= p->a)
			return error("search space: randint '%s' needs integers lower < upper", key);
		break;
	case SPACE_UNIFORM:
	case SPACE_QUNIFORM:
		if (!(p->b >= p->a))
			return error("search space: %s '%s' needs low <= high", jt->valuestring, key);
		break;
	case SPACE_LOGUNIFORM:
	case SPACE_QLOGUNIFORM:
		if (!(p->a > 0 && p->b >= p->a))
			return error("search space: %s '%s' needs 0 < low <= high", jt->valuestring, key);
		break;
	default:  /* normal family: [mu, sigma(, q)] */
		if (!(p->b > 0))
			return error("search space: %s '%s' needs sigma > 0", jt->valuestring, key);
		break;
	}
	if ((p->type == SPACE_QUNIFORM || p->type == SPACE_QLOGUNIFORM ||
	     p->type == SPACE_QNORMAL || p->type == SPACE_QLOGNORMAL) && !(p->q > 0))
		return error("search space: %s '%s' needs q > 0", jt->valuestring, key);
	return 0;
}

int space_parse(struct space *sp, const cJSON *doc)
{
	sp->params = NULL;
	sp->n = 0;
	if (!doc)
		return 0;
	if (!cJSON_IsObject(doc))
		return error("search space must be a JSON object of {\"name\": {\"_type\", \"_value\"}}");
	size_t n = (size_t)cJSON_GetArraySize(doc);
	sp->params = xcalloc(n ? n : 1, sizeof(*sp->params));
	const cJSON *item;
	cJSON_ArrayForEach(item, doc) {
		struct space_param *p = &sp->params[sp->n];
		for (size_t i = 0; i < sp->n; i++)
			if (!strcmp(sp->params[i].name, item->string)) {
				space_release(sp);
				return error("search space: key '%s' appears twice", item->string);
			}
		p->name = xstrdup(item->string);
		sp->n++;
		if (parse_param(p, item) < 0) {
			space_release(sp);
			return -1;
		}
	}
	return 0;
}

void space_release(struct space *sp)
{
	for (size_t i = 0; i < sp->n; i++) {
		free(sp->params[i].name);
		cJSON_Delete(sp->params[i].choices);
	}
	free(sp->params);
	sp->params = NULL;
	sp->n = 0;
}

static int is_log(enum space_type t)
{
	return t == SPACE_LOGUNIFORM || t == SPACE_QLOGUNIFORM || t == SPACE_LOGNORMAL ||
	       t == SPACE_QLOGNORMAL;
}

static double quantise(const struct space_param *p, double v)
{
	if (p->q > 0) {
		v = round(v / p->q) * p->q;
		if (p->type == SPACE_QUNIFORM || p->type == SPACE_QLOGUNIFORM) {
			if (v < p->a)
				v = p->a;
			if (v > p->b)
				v = p->b;
		}
	}
	return v;
}

cJSON *space_value(const struct space_param *p, double x)
{
	switch (p->type) {
	case SPACE_CHOICE: {
		long i = lround(x);
		if (i < 0)
			i = 0;
		if (i >= p->nchoices)
			i = p->nchoices - 1;
		return cJSON_Duplicate(cJSON_GetArrayItem(p->choices, (int)i), 1);
	}
	case SPACE_RANDINT: {
		double v = floor(x);
		if (v < p->a)
			v = p->a;
		if (v > p->b - 1)
			v = p->b - 1;
		return cJSON_CreateNumber(v);
	}
	default:
		return cJSON_CreateNumber(quantise(p, is_log(p->type) ? exp(x) : x));
	}
}

int space_coord(const struct space_param *p, const cJSON *v, double *x)
{
	if (p->type == SPACE_CHOICE) {
		int i = 0;
		const cJSON *c;
		cJSON_ArrayForEach(c, p->choices) {
			if (cJSON_Compare(c, v, 1)) {
				*x = i;
				return 0;
			}
			i++;
		}
		return -1;
	}
	if (!cJSON_IsNumber(v))
		return -1;
	double d = v->valuedouble;
	if (is_log(p->type)) {
		if (!(d > 0))
			return -1;
		d = log(d);
	}
	*x = d;
	return 0;
}

double space_sample_coord(const struct space_param *p, struct trng *r)
{
	switch (p->type) {
	case SPACE_CHOICE:
		return (double)trng_below(r, (uint64_t)p->nchoices);
	case SPACE_RANDINT:
		return p->a + (double)trng_below(r, (uint64_t)(p->b - p->a));
	case SPACE_UNIFORM:
	case SPACE_QUNIFORM:
		return p->a + (p->b - p->a) * trng_uniform(r);
	case SPACE_LOGUNIFORM:
	case SPACE_QLOGUNIFORM:
		return log(p->a) + (log(p->b) - log(p->a)) * trng_uniform(r);
	case SPACE_NORMAL:
	case SPACE_QNORMAL:
	case SPACE_LOGNORMAL:
	case SPACE_QLOGNORMAL:
		return p->a + p->b * trng_normal(r);
	}
	return 0;
}

cJSON *space_sample(const struct space *sp, struct trng *r)
{
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; i < sp->n; i++)
		cJSON_AddItemToObject(o, sp->params[i].name,
				      space_value(&sp->params[i], space_sample_coord(&sp->params[i], r)));
	return o;
}
