/* kubernetes_yaml.c: the Kubernetes backend's documents as text: YAML in
 * kubectl's layout (`aah-runner render`) and one JSON value (what
 * `kubectl create -f -` reads). Apart from kubernetes_spec.c, which
 * builds the documents, because it would pass 800 lines with this, and
 * this knows nothing of trials: it writes any cJSON tree. */
#include "runner/backend/kubernetes.h"
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Plain YAML only for strings no YAML 1.1 or 1.2 reader takes as anything
 * but that string; everything else double-quoted. */
static int yaml_plain_ok(const char *s)
{
	static const char *const words[] = { "y", "yes", "n", "no", "true", "false", "on",
					     "off", "null", NULL };
	if (!isalpha((unsigned char)s[0]) && s[0] != '/')
		return 0;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._/-", *p))
			return 0;
	for (const char *const *w = words; *w; w++)
		if (!strcasecmp(s, *w))
			return 0;
	return 1;
}

static void yaml_string(struct strbuf *sb, const char *s)
{
	if (yaml_plain_ok(s)) {
		strbuf_addstr(sb, s);
		return;
	}
	strbuf_addch(sb, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			strbuf_addf(sb, "\\%c", *p);
		else if (*p == '\n')
			strbuf_addstr(sb, "\\n");
		else if (*p == '\t')
			strbuf_addstr(sb, "\\t");
		else if (*p < 0x20 || *p == 0x7f)
			strbuf_addf(sb, "\\x%02x", *p);
		else
			strbuf_addch(sb, (char)*p);
	}
	strbuf_addch(sb, '"');
}

static void yaml_scalar(struct strbuf *sb, const cJSON *v)
{
	if (cJSON_IsString(v))
		yaml_string(sb, v->valuestring);
	else if (cJSON_IsBool(v))
		strbuf_addstr(sb, cJSON_IsTrue(v) ? "true" : "false");
	else if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
		 fabs(v->valuedouble) < 1e15)
		strbuf_addf(sb, "%.0f", v->valuedouble);
	else if (cJSON_IsNumber(v))
		strbuf_addf(sb, "%.17g", v->valuedouble);
	else if (cJSON_IsObject(v))
		strbuf_addstr(sb, "{}");
	else if (cJSON_IsArray(v))
		strbuf_addstr(sb, "[]");
	else
		strbuf_addstr(sb, "null");
}

static int yaml_nested(const cJSON *v)
{
	return (cJSON_IsObject(v) || cJSON_IsArray(v)) && v->child;
}

static void yaml_node(struct strbuf *sb, const cJSON *v, int indent, int inline_first);

static void pad(struct strbuf *sb, int n)
{
	for (int i = 0; i < n; i++)
		strbuf_addch(sb, ' ');
}

/* An object's members at `indent`; the first one continues the current
 * line when inline_first (after "- "). Lists hang at their key's indent. */
static void yaml_object(struct strbuf *sb, const cJSON *o, int indent, int inline_first)
{
	const cJSON *m;
	int first = 1;
	cJSON_ArrayForEach(m, o) {
		if (!(first && inline_first))
			pad(sb, indent);
		first = 0;
		yaml_string(sb, m->string);
		strbuf_addch(sb, ':');
		if (yaml_nested(m)) {
			strbuf_addch(sb, '\n');
			yaml_node(sb, m, cJSON_IsArray(m) ? indent : indent + 2, 0);
		} else {
			strbuf_addch(sb, ' ');
			yaml_scalar(sb, m);
			strbuf_addch(sb, '\n');
		}
	}
}

static void yaml_node(struct strbuf *sb, const cJSON *v, int indent, int inline_first)
{
	if (cJSON_IsObject(v)) {
		yaml_object(sb, v, indent, inline_first);
		return;
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, v) {
		pad(sb, indent);
		strbuf_addstr(sb, "- ");
		if (cJSON_IsObject(it) && it->child) {
			yaml_object(sb, it, indent + 2, 1);
		} else if (cJSON_IsArray(it) && it->child) {
			strbuf_addch(sb, '\n');
			yaml_node(sb, it, indent + 2, 0);
		} else {
			yaml_scalar(sb, it);
			strbuf_addch(sb, '\n');
		}
	}
}

void kubernetes_yaml_emit(struct strbuf *out, const cJSON *docs)
{
	const cJSON *d;
	int first = 1;
	cJSON_ArrayForEach(d, docs) {
		if (!first)
			strbuf_addstr(out, "---\n");
		first = 0;
		yaml_node(out, d, 0, 0);
	}
}

char *kubernetes_json_emit(const cJSON *docs)
{
	cJSON *copy;
	if (cJSON_GetArraySize(docs) == 1) {
		copy = cJSON_Duplicate(cJSON_GetArrayItem(docs, 0), 1);
	} else {
		copy = cJSON_CreateObject();
		cJSON_AddStringToObject(copy, "apiVersion", "v1");
		cJSON_AddStringToObject(copy, "kind", "List");
		cJSON_AddItemToObject(copy, "items", cJSON_Duplicate(docs, 1));
	}
	char *s = cJSON_Print(copy);
	cJSON_Delete(copy);
	char *out = xstrfmt("%s\n", s);
	cJSON_free(s);
	return out;
}
