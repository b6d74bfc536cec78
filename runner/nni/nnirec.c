/* nnirec.c: NNI's trial records (nnirec.h): frames, log lines, and the
 * checks every record passes before its number counts. */
#include "runner/nni/nnirec.h"
#include "strbuf.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FRAME_HEAD 8              /* "ME" and six digits */
#define LOG_MARK "NNISDK_MEb'"

void nnirec_list_release(struct nnirec_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].value_json);
	free(l->v);
	l->v = NULL;
	l->n = l->alloc = 0;
}

static void list_add(struct nnirec_list *l, const struct nnirec *r)
{
	if (l->n == l->alloc) {
		l->alloc = l->alloc ? 2 * l->alloc : 16;
		l->v = xrealloc(l->v, l->alloc * sizeof(*l->v));
	}
	l->v[l->n++] = *r;
}

/* Up to 40 bytes of s as the error shows them, unprintable ones as '.'. */
static void add_excerpt(struct strbuf *sb, const char *s, size_t n)
{
	size_t k = n < 40 ? n : 40;
	strbuf_addch(sb, '\'');
	for (size_t i = 0; i < k; i++)
		strbuf_addch(sb, s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '.');
	strbuf_addstr(sb, k < n ? "...'" : "'");
}

/* The metric of "value": a number, or a dict's "default"; an accuracy in
 * [0,1]. */
static int decode_value(const char *where, const char *text, struct nnirec *rec)
{
	cJSON *v = cJSON_Parse(text);
	const cJSON *num = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "default") : v;
	int r = 0;
	if (!cJSON_IsNumber(num) || !isfinite(num->valuedouble))
		r = error("%s: 'value' is '%.80s', not a number (NNI takes a number, or a dict "
			  "whose 'default' is one)", where, text);
	else if (num->valuedouble < 0 || num->valuedouble > 1)
		r = error("%s: 'value' %g is outside [0, 1]: aah takes NNI's metric as the trial's "
			  "accuracy (AIPerf's Error and Regulated Score need one); report other "
			  "figures beside it, in a dict whose 'default' is the accuracy", where,
			  num->valuedouble);
	else
		rec->value = num->valuedouble;
	cJSON_Delete(v);
	return r;
}

static int decode_type(const char *where, const cJSON *doc, struct nnirec *rec)
{
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "type"));
	if (!type)
		return error("%s: no 'type' string", where);
	if (!strcmp(type, "PERIODICAL") || !strcmp(type, "FINAL")) {
		rec->type = !strcmp(type, "FINAL") ? NNIREC_FINAL : NNIREC_PERIODICAL;
		return 0;
	}
	if (!strcmp(type, "REQUEST_PARAMETER"))
		return error("%s: the trial asks for parameters (REQUEST_PARAMETER): its "
			     "parameter.cfg was not in NNI_SYS_DIR, or it wants a second set "
			     "(MULTI_PHASE trials are not run by aah)", where);
	return error("%s: 'type' is '%.40s', not PERIODICAL or FINAL", where, type);
}

/* One record's JSON, checked against the trial it must come from. */
static int decode(const char *where, const char *json, size_t n, const struct nnirec_trial *who,
		  struct nnirec *rec)
{
	const char *end = NULL;
	cJSON *doc = cJSON_ParseWithLengthOpts(json, n, &end, 0);
	int r = -1;
	memset(rec, 0, sizeof(*rec));
	while (doc && end < json + n && strchr(" \t\r\n", *end))
		end++;
	if (!doc || end != json + n || !cJSON_IsObject(doc)) {
		struct strbuf sb = STRBUF_INIT;
		add_excerpt(&sb, json, n);
		error("%s is not a JSON object: %s", where, sb.buf);
		strbuf_release(&sb);
		goto out;
	}
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(doc, "trial_job_id");
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(doc, "parameter_id");
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(doc, "sequence");
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(doc, "value");
	if (decode_type(where, doc, rec) < 0)
		goto out;
	if (!cJSON_IsString(id)) {
		error("%s: no 'trial_job_id' string", where);
	} else if (strcmp(id->valuestring, who->job_id)) {
		error("%s comes from trial '%.40s', not from this one ('%s')", where, id->valuestring,
		      who->job_id);
	} else if (cJSON_IsNull(pid)) {
		error("%s: 'parameter_id' is null: the trial reported before it called "
		      "nni.get_next_parameter()", where);
	} else if (!cJSON_IsNumber(pid)) {
		error("%s: 'parameter_id' is not a number", where);
	} else if (pid->valuedouble != (double)who->parameter_id) {
		error("%s is for parameter %g; this trial was given parameter %ld (parameter.cfg)",
		      where, pid->valuedouble, who->parameter_id);
	} else if (!cJSON_IsNumber(seq) || seq->valuedouble < 0 || seq->valuedouble > 1e9 ||
		   seq->valuedouble != floor(seq->valuedouble)) {
		error("%s: 'sequence' is not a count (0, 1, ...)", where);
	} else if (!cJSON_IsString(value)) {
		error("%s: 'value' is not a string of JSON (NNI's SDK sends the metric dumped)",
		      where);
	} else if (decode_value(where, value->valuestring, rec) == 0) {
		rec->sequence = (long)seq->valuedouble;
		rec->value_json = xstrdup(value->valuestring);
		r = 0;
	}
out:
	cJSON_Delete(doc);
	return r;
}

/* The length field of a frame: six ASCII digits. */
static int frame_len(const char *p, size_t *len)
{
	*len = 0;
	for (int i = 0; i < 6; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		*len = *len * 10 + (size_t)(p[i] - '0');
	}
	return 0;
}

int nnirec_read_frames(const char *file, const char *buf, size_t len, size_t base, int ended,
		       const struct nnirec_trial *who, struct nnirec_list *out, size_t *used)
{
	size_t off = 0;
	int r = 0;
	while (off < len && r == 0) {
		const char *p = buf + off;
		size_t left = len - off, n = 0;
		char *where = xstrfmt("'%s': the record at byte %zu", file, base + off);
		int head = left >= FRAME_HEAD;
		int head_ok = memcmp(p, "ME", left < 2 ? left : 2) == 0 &&
			      (!head || frame_len(p + 2, &n) == 0);
		for (size_t i = 2; !head && head_ok && i < left; i++)
			head_ok = p[i] >= '0' && p[i] <= '9';
		if (!head_ok) {
			struct strbuf sb = STRBUF_INIT;
			add_excerpt(&sb, p, left);
			r = error("%s does not start with ME and its length in six digits: %s "
				  "(the file is not what NNI's SDK writes)", where, sb.buf);
			strbuf_release(&sb);
		} else if (!head || left - FRAME_HEAD < n) {
			if (ended && head)   /* its writer is gone: the rest never comes */
				r = error("%s is cut short: its header says %zu bytes, %zu follow", where,
					  n, left - FRAME_HEAD);
			else if (ended)
				r = error("%s is cut short: %zu bytes of its 8-byte header", where, left);
			free(where);
			break;
		} else if (n == 0) {
			r = error("%s is empty (length 000000)", where);
		} else {
			struct nnirec rec;
			r = decode(where, p + FRAME_HEAD, n, who, &rec);
			if (r == 0) {
				list_add(out, &rec);
				off += FRAME_HEAD + n;
			}
		}
		free(where);
	}
	*used = off;
	return r;
}

int nnirec_read_lines(const char *file, const char *buf, size_t len, unsigned long line,
		      int ended, const struct nnirec_trial *who, struct nnirec_list *out,
		      size_t *used, unsigned long *lines)
{
	size_t off = 0;
	unsigned long k = 0;
	int r = 0;
	while (off < len && r == 0) {
		const char *p = buf + off, *nl = memchr(p, '\n', len - off);
		if (!nl && !ended)
			break;   /* the line is still being written */
		size_t n = nl ? (size_t)(nl - p) : len - off;
		const char *mark = memmem(p, n, LOG_MARK, strlen(LOG_MARK));
		if (mark) {
			char *where = xstrfmt("'%s' line %lu", file, line + k);
			const char *json = mark + strlen(LOG_MARK), *stop = p + n;
			while (stop > json && (stop[-1] == '\r' || stop[-1] == ' '))
				stop--;
			if (stop == json || stop[-1] != '\'') {
				r = error("%s: the NNISDK_MEb line has no closing quote (cut short)", where);
			} else {
				struct nnirec rec;
				r = decode(where, json, (size_t)(stop - 1 - json), who, &rec);
				if (r == 0)
					list_add(out, &rec);
			}
			free(where);
		}
		if (r == 0) {
			off += n + (nl != NULL);
			k++;
		}
	}
	*used = off;
	*lines = k;
	return r;
}
