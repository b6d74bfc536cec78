/* docker_hosts.c: docker.hosts (inline, or AIPerf's servers.json), the
 * pool's devices on their slots, and the health file `status` reads. */
#include "runner/backend/docker_hosts.h"
#include "fileio.h"
#include "jsonfile.h"
#include "runner/config/yamltree.h"
#include "strvec.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_HOSTS 4096
#define MAX_SLOTS 4096

struct src {
	const char *file;         /* named in errors */
	unsigned item;            /* 1-based */
};

static int fail(const struct src *s, const struct ynode *n, const char *key, const char *fmt,
		const char *what)
{
	return error("%s:%u:%u: 'docker.hosts[%u]%s%s': %s%s", s->file, n->line, n->col, s->item,
		     key ? "." : "", key ? key : "", fmt, what ? what : "");
}

static int word(const char *v, const char *extra)
{
	if (!*v)
		return 0;
	for (const char *c = v; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || strchr(extra, *c)))
			return 0;
	return 1;
}

/* gpus: "0,1,2" (AIPerf's CUDA_VISIBLE_DEVICES) or a list [0, 1, 2]. */
static int parse_gpus(const struct src *s, const struct ynode *n, const char *key,
		      struct docker_host *h)
{
	struct strvec v = STRVEC_INIT;
	int r = 0;
	if (n->kind == YNODE_SCALAR) {
		for (const char *p = n->value; *p;) {
			size_t len = strcspn(p, ",");
			char *one = xstrndup(p, len);
			strvec_push(&v, one);
			free(one);
			p += len;
			if (*p == ',' && *++p == '\0')
				strvec_push(&v, "");
		}
	} else if (n->kind == YNODE_SEQ) {
		for (size_t i = 0; i < n->n && r == 0; i++) {
			if (n->children[i]->kind != YNODE_SCALAR)
				r = fail(s, n->children[i], key, "each GPU must be a number or a name",
					 NULL);
			else
				strvec_push(&v, n->children[i]->value);
		}
	} else {
		r = fail(s, n, key, "must be a list of GPUs or a string like \"0,1,2,3\"", NULL);
	}
	if (r == 0 && (!v.n || v.n > MAX_SLOTS))
		r = fail(s, n, key, "must name 1 to 4096 GPUs", NULL);
	for (size_t i = 0; r == 0 && i < v.n; i++)
		if (!word(v.v[i], "-"))
			r = fail(s, n, key, "has a GPU that is not an index or a UUID: ", v.v[i]);
	if (r == 0) {
		h->slots = (unsigned)v.n;
		h->gpus = xcalloc(v.n + 1, sizeof(*h->gpus));   /* NULL-terminated */
		for (size_t i = 0; i < v.n; i++)
			h->gpus[i] = xstrdup(v.v[i]);
	}
	strvec_clear(&v);
	return r;
}

static int parse_uint(const struct src *s, const struct ynode *n, const char *key, long max,
		      unsigned *out)
{
	long v;
	char range[64];
	snprintf(range, sizeof(range), "must be an integer, 1 to %ld, got ", max);
	if (n->kind != YNODE_SCALAR || util_parse_long(n->value, 1, max, &v) < 0)
		return fail(s, n, key, range, n->kind == YNODE_SCALAR ? n->value : "a list or mapping");
	*out = (unsigned)v;
	return 0;
}

static int scalar(const struct src *s, const struct ynode *n, const char *key, const char *extra,
		  char **out)
{
	if (n->kind != YNODE_SCALAR || !word(n->value, extra))
		return fail(s, n, key, "must be letters, digits and any of ", extra);
	free(*out);
	*out = xstrdup(n->value);
	return 0;
}

static int parse_host(const struct src *s, const struct ynode *m, struct docker_host *h)
{
	const struct ynode *slots = NULL, *gpus = NULL;
	const char *gpus_key = NULL;
	int r = 0;
	if (m->kind != YNODE_MAP)
		return fail(s, m, NULL,
			    "must be a mapping: {address, user, port, slots or gpus} (or AIPerf's "
			    "{ip, CUDA_VISIBLE_DEVICES})", NULL);
	for (size_t i = 0; i < m->n && r == 0; i++) {
		const char *k = m->keys[i];
		const struct ynode *v = m->children[i];
		if (!strcmp(k, "address") || !strcmp(k, "ip"))
			r = scalar(s, v, k, ".-_", &h->name);
		else if (!strcmp(k, "user"))
			r = scalar(s, v, k, ".-_", &h->user);
		else if (!strcmp(k, "port"))
			r = parse_uint(s, v, k, 65535, &h->port);
		else if (!strcmp(k, "slots"))
			slots = v;
		else if (!strcmp(k, "gpus") || !strcmp(k, "CUDA_VISIBLE_DEVICES"))
			gpus = v, gpus_key = k;
		else if (strcmp(k, "tag") && strcmp(k, "status")) /* AIPerf's own bookkeeping */
			r = error("%s:%u:%u: 'docker.hosts[%u].%s' is not a known key (address or ip, "
				  "user, port, slots, gpus or CUDA_VISIBLE_DEVICES)",
				  s->file, m->key_line[i], m->key_col[i], s->item, k);
	}
	if (r == 0 && !h->name)
		r = fail(s, m, NULL, "needs an address (address:, or AIPerf's ip:)", NULL);
	if (r == 0 && gpus)
		r = parse_gpus(s, gpus, gpus_key, h);
	if (r == 0 && slots) {
		unsigned n;
		r = parse_uint(s, slots, "slots", MAX_SLOTS, &n);
		if (r == 0 && gpus && n != h->slots)
			r = fail(s, slots, "slots", "must be the number of its GPUs, or left out", NULL);
		if (r == 0)
			h->slots = n;
	}
	if (r == 0 && !h->slots)
		h->slots = 1;
	if (r == 0) {
		struct strbuf url = STRBUF_INIT;
		strbuf_addf(&url, "ssh://%s%s%s", h->user ? h->user : "", h->user ? "@" : "", h->name);
		if (h->port)
			strbuf_addf(&url, ":%u", h->port);
		h->url = strbuf_detach(&url, NULL);
	}
	return r;
}

int docker_hosts_parse(const struct aah_config *cfg, struct docker_hosts *hs)
{
	memset(hs, 0, sizeof(*hs));
	const struct ynode *n = ynode_get(config_section(cfg, "docker"), "hosts");
	struct ynode *file = NULL;
	char *path = NULL;
	struct src s = { cfg->path ? cfg->path : "config", 0 };
	int r = 0;
	if (!n)
		return 0;
	if (n->kind == YNODE_SCALAR) {
		path = n->value[0] == '/' ? xstrdup(n->value)
					  : xstrfmt("%s/%s", cfg->base_dir, n->value);
		if (!fileio_exists(path))
			r = error("%s:%u:%u: 'docker.hosts': no such file: %s", s.file, n->line, n->col,
				  path);
		else if (yamltree_load(path, &file) < 0)
			r = error("%s:%u:%u: 'docker.hosts': %s is not a JSON or YAML list of hosts",
				  s.file, n->line, n->col, path);
		else
			s.file = path, n = file;
	}
	if (r == 0 && (n->kind != YNODE_SEQ || !n->n || n->n > MAX_HOSTS))
		r = error("%s:%u:%u: 'docker.hosts' must be a list of 1 to %d hosts (or the path of "
			  "AIPerf's servers.json)", s.file, n->line, n->col, MAX_HOSTS);
	if (r == 0) {
		hs->h = xcalloc(n->n, sizeof(*hs->h));
		for (size_t i = 0; i < n->n && r == 0; i++) {
			s.item = (unsigned)i;
			strvec_init(&hs->h[i].kept);
			r = parse_host(&s, n->children[i], &hs->h[hs->n++]);
			for (unsigned k = 0; r == 0 && k + 1 < hs->n; k++)
				if (!strcmp(hs->h[k].name, hs->h[i].name))
					r = fail(&s, n->children[i], NULL, "lists a host listed before: ",
						 hs->h[i].name);
			if (r == 0)
				hs->slots += hs->h[i].slots;
		}
	}
	if (r == 0 && hs->slots > 65536)
		r = error("%s: 'docker.hosts' lend %u slots, more than a pool holds (65536)", s.file,
			  hs->slots);
	ynode_free(file);
	free(path);
	if (r < 0)
		docker_hosts_release(hs);
	return r;
}

void docker_hosts_release(struct docker_hosts *hs)
{
	for (unsigned i = 0; i < hs->n; i++) {
		struct docker_host *h = &hs->h[i];
		for (unsigned k = 0; h->gpus && h->gpus[k]; k++)
			free(h->gpus[k]);
		free(h->gpus);
		strvec_clear(&h->kept);
		free(h->name);
		free(h->user);
		free(h->url);
	}
	free(hs->h);
	memset(hs, 0, sizeof(*hs));
}

int docker_hosts_device(const struct docker_hosts *hs, unsigned d, unsigned *slot)
{
	unsigned k = 0;
	for (unsigned round = 0;; round++) {
		int any = 0;
		for (unsigned i = 0; i < hs->n; i++) {
			if (hs->h[i].slots <= round)
				continue;
			any = 1;
			if (k++ == d) {
				*slot = round;
				return (int)i;
			}
		}
		if (!any)
			return -1;
	}
}

struct docker_host *docker_hosts_find(const struct docker_hosts *hs, const char *name)
{
	for (unsigned i = 0; i < hs->n; i++)
		if (!strcmp(hs->h[i].name, name))
			return &hs->h[i];
	return NULL;
}

int docker_hosts_save(const struct docker_hosts *hs, const char *expdir)
{
	cJSON *doc = cJSON_CreateObject(), *list;
	cJSON_AddStringToObject(doc, "format", "aah-docker-hosts/1");
	list = cJSON_AddArrayToObject(doc, "hosts");
	for (unsigned i = 0; i < hs->n; i++) {
		const struct docker_host *h = &hs->h[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", h->name);
		cJSON_AddStringToObject(o, "url", h->url);
		cJSON_AddNumberToObject(o, "slots", h->slots);
		cJSON_AddStringToObject(o, "state",
					h->down ? "down" : h->failing_since ? "no-answer" : "up");
		if (h->since > 0)
			cJSON_AddNumberToObject(o, "since", h->since);
		if (h->down || h->failing_since)
			cJSON_AddStringToObject(o, "reason", h->reason);
		if (h->kept.n) {
			cJSON *kept = cJSON_AddArrayToObject(o, "kept");
			for (size_t k = 0; k < h->kept.n; k++)
				cJSON_AddItemToArray(kept, cJSON_CreateString(h->kept.v[k]));
		}
		cJSON_AddItemToArray(list, o);
	}
	char *path = xstrfmt("%s/docker_hosts.json", expdir);
	int r = jsonfile_write_flags(path, doc, FILEIO_NOSYNC);
	free(path);
	cJSON_Delete(doc);
	return r;
}

void docker_hosts_load_kept(struct docker_hosts *hs, const char *expdir)
{
	char *path = xstrfmt("%s/docker_hosts.json", expdir);
	cJSON *doc = NULL;
	util_set_quiet(1);
	int ok = fileio_exists(path) && jsonfile_read(path, &doc) == 0;
	util_set_quiet(0);
	const cJSON *list = ok ? cJSON_GetObjectItemCaseSensitive(doc, "hosts") : NULL, *h, *id;
	cJSON_ArrayForEach(h, list) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(h, "name");
		struct docker_host *mine =
			cJSON_IsString(name) ? docker_hosts_find(hs, name->valuestring) : NULL;
		const cJSON *kept = mine ? cJSON_GetObjectItemCaseSensitive(h, "kept") : NULL;
		cJSON_ArrayForEach(id, kept)
			if (cJSON_IsString(id) && word(id->valuestring, ""))
				strvec_push(&mine->kept, id->valuestring);
	}
	cJSON_Delete(doc);
	free(path);
}

void docker_hosts_status(const char *expdir, struct strbuf *sb)
{
	char *path = xstrfmt("%s/docker_hosts.json", expdir);
	cJSON *doc = NULL;
	util_set_quiet(1);
	int ok = fileio_exists(path) && jsonfile_read(path, &doc) == 0;
	util_set_quiet(0);
	const cJSON *list = ok ? cJSON_GetObjectItemCaseSensitive(doc, "hosts") : NULL, *h;
	unsigned down = 0, n = 0;
	cJSON_ArrayForEach(h, list) {
		n++;
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(h, "state");
		down += cJSON_IsString(st) && !strcmp(st->valuestring, "down");
	}
	if (n) {
		strbuf_addf(sb, "\ndocker hosts: %u, %u down\n", n, down);
		strbuf_addf(sb, "%-24s %-6s %-9s %-9s %s\n", "HOST", "SLOTS", "STATE", "SINCE", "REASON");
	}
	cJSON_ArrayForEach(h, list) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(h, "name"),
			    *slots = cJSON_GetObjectItemCaseSensitive(h, "slots"),
			    *state = cJSON_GetObjectItemCaseSensitive(h, "state"),
			    *since = cJSON_GetObjectItemCaseSensitive(h, "since"),
			    *why = cJSON_GetObjectItemCaseSensitive(h, "reason");
		char when[16] = "-";
		if (cJSON_IsNumber(since)) {
			time_t t = (time_t)since->valuedouble;
			struct tm tm;
			if (localtime_r(&t, &tm))
				strftime(when, sizeof(when), "%H:%M:%S", &tm);
		}
		strbuf_addf(sb, "%-24s %-6d %-9s %-9s %s\n",
			    cJSON_IsString(name) ? name->valuestring : "?",
			    cJSON_IsNumber(slots) ? slots->valueint : 0,
			    cJSON_IsString(state) ? state->valuestring : "?", when,
			    cJSON_IsString(why) ? why->valuestring : "");
	}
	cJSON_Delete(doc);
	free(path);
}
