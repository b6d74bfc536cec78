/* slurm_conf.c: slurm.conf and gres.conf from a host list (slurm_conf.h). */
#include "runner/backend/slurm_conf.h"
#include "fileio.h"
#include "runner/config/yamltree.h" /* servers.json, with lines and columns */
#include "util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_NODES 65536
#define MAX_CPUS 1048576L
#define MAX_MEMORY (1L << 40)  /* MB */
#define MAX_GPUS 1024L

/* Where an entry's field is: "<file>:<line>" (a plain list) or
 * "<file>:<line>:<col>" and the entry's index (servers.json). */
struct src {
	const char *file;
	unsigned line, col;       /* col 0: a plain list */
	size_t item;
};

static int fail(const struct src *s, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(const struct src *s, const char *field, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->col)
		return error("%s:%u:%u: '[%zu]%s%s': %s", s->file, s->line, s->col, s->item,
			     field ? "." : "", field ? field : "", msg);
	if (!field)
		return error("%s:%u: %s", s->file, s->line, msg);
	return error("%s:%u: '%s': %s", s->file, s->line, field, msg);
}

/* A host name: letters, digits, '-', '_' and '.', starting with a letter or digit. */
static int host_word(const char *v)
{
	if (!isalnum((unsigned char)*v) || strlen(v) > 255)
		return 0;
	for (const char *c = v; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("-_.", *c))
			return 0;
	return 1;
}

/* An IPv4 or IPv6 address (its characters; the resolver checks the rest). */
static int ip_word(const char *v)
{
	size_t dots = 0;
	if (strchr(v, ':'))
		return strspn(v, "0123456789abcdefABCDEF:.") == strlen(v);
	for (const char *c = v; *c; c++)
		dots += *c == '.';
	return dots == 3 && strspn(v, "0123456789.") == strlen(v);
}

static int set_name(const struct src *s, const char *field, const char *v, char **out)
{
	if (!host_word(v))
		return fail(s, field, "must be a host name (letters, digits, '-', '_', '.'), got '%s'", v);
	free(*out);
	*out = xstrdup(v);
	return 0;
}

static int set_addr(const struct src *s, const char *field, const char *v, char **out)
{
	if (!ip_word(v) && !host_word(v))
		return fail(s, field, "must be an IP address or a host name, got '%s'", v);
	free(*out);
	*out = xstrdup(v);
	return 0;
}

static int set_long(const struct src *s, const char *field, const char *v, long min, long max,
		    long *out)
{
	if (util_parse_long(v, min, max, out) < 0)
		return fail(s, field, "must be an integer from %ld to %ld, got '%s'", min, max, v);
	return 0;
}

/* AIPerf's CUDA_VISIBLE_DEVICES, "0,1,2,3": its GPUs are counted. */
static int set_gpu_list(const struct src *s, const char *field, const char *v, long *out)
{
	long n = 0;
	for (const char *p = v; *p;) {
		size_t len = strcspn(p, ",");
		size_t ok = 0;
		while (ok < len && (isalnum((unsigned char)p[ok]) || p[ok] == '-'))
			ok++;
		if (!len || ok < len)
			return fail(s, field, "must list GPUs as \"0,1,2,3\", got '%s'", v);
		n++;
		p += len + (p[len] == ',');
	}
	if (n > MAX_GPUS)
		return fail(s, field, "lists more than %ld GPUs", MAX_GPUS);
	*out = n;
	return 0;
}

/* One "key=value" word of a plain list's line. */
static int plain_field(const struct src *s, const char *word, struct slurm_node *n)
{
	const char *eq = strchr(word, '=');
	size_t klen = (size_t)(eq - word);
	char key[16];
	if (klen >= sizeof(key))
		return fail(s, NULL, "unknown field '%.*s' (name=, address=, cpus=, memory=, gpus=)",
			    (int)klen, word);
	memcpy(key, word, klen);
	key[klen] = '\0';
	const char *v = eq + 1;
	if (!strcmp(key, "name"))
		return set_name(s, key, v, &n->name);
	if (!strcmp(key, "address"))
		return set_addr(s, key, v, &n->addr);
	if (!strcmp(key, "cpus"))
		return set_long(s, key, v, 1, MAX_CPUS, &n->cpus);
	if (!strcmp(key, "memory"))
		return set_long(s, key, v, 1, MAX_MEMORY, &n->memory);
	if (!strcmp(key, "gpus"))
		return set_long(s, key, v, 0, MAX_GPUS, &n->gpus);
	return fail(s, NULL, "unknown field '%s' (name=, address=, cpus=, memory=, gpus=)", key);
}

/* "NAME [ADDRESS] [key=value...]", or "ADDRESS [key=value...]". */
static int plain_line(const struct src *s, const char *line, struct slurm_node *n)
{
	struct strvec w = STRVEC_INIT;
	int r = 0, bare = 0;
	strvec_split(&w, line);
	for (size_t i = 0; i < w.n && r == 0; i++) {
		const char *word = w.v[i];
		if (strchr(word, '='))
			r = plain_field(s, word, n);
		else if (bare++ == 0 && ip_word(word))
			r = set_addr(s, "address", word, &n->addr);
		else if (bare == 1)
			r = set_name(s, "name", word, &n->name);
		else if (bare == 2 && !n->addr)
			r = set_addr(s, "address", word, &n->addr);
		else
			r = fail(s, NULL, "'%s' is one word too many (NAME [ADDRESS] [cpus=N] "
				 "[memory=MB] [gpus=N])", word);
	}
	strvec_clear(&w);
	return r;
}

static int read_plain(const char *path, const char *text, struct slurm_nodes *out)
{
	struct src s = { path, 0, 0, 0 };
	int r = 0;
	for (const char *p = text; *p && r == 0;) {
		size_t len = strcspn(p, "\n");
		char *line = xstrndup(p, len);
		line[strcspn(line, "#")] = '\0';
		s.line++;
		p += len + (p[len] == '\n');
		if (line[strspn(line, " \t\r")]) {
			if (out->n >= MAX_NODES) {
				r = fail(&s, NULL, "more than %d nodes", MAX_NODES);
			} else {
				struct slurm_node *n = &out->v[out->n++];
				n->gpus = -1;
				n->where = xstrfmt("%s:%u", path, s.line);
				r = plain_line(&s, line, n);
			}
		}
		free(line);
	}
	return r;
}

static int json_field(const struct src *s, const char *k, const struct ynode *v,
		      struct slurm_node *n)
{
	if (!strcmp(k, "tag") || !strcmp(k, "status") || !strcmp(k, "user") || !strcmp(k, "port"))
		return 0;   /* AIPerf's own bookkeeping, and its ssh */
	if (v->kind != YNODE_SCALAR)
		return fail(s, k, "must be a string or a number");
	if (!strcmp(k, "ip") || !strcmp(k, "address"))
		return set_addr(s, k, v->value, &n->addr);
	if (!strcmp(k, "name"))
		return set_name(s, k, v->value, &n->name);
	if (!strcmp(k, "cpus"))
		return set_long(s, k, v->value, 1, MAX_CPUS, &n->cpus);
	if (!strcmp(k, "memory"))
		return set_long(s, k, v->value, 1, MAX_MEMORY, &n->memory);
	if (!strcmp(k, "gpus"))
		return set_long(s, k, v->value, 0, MAX_GPUS, &n->gpus);
	if (!strcmp(k, "CUDA_VISIBLE_DEVICES"))
		return set_gpu_list(s, k, v->value, &n->gpus);
	return fail(s, k, "is not a known key (ip or address, name, cpus, memory, gpus or "
		    "CUDA_VISIBLE_DEVICES)");
}

static int read_json(const char *path, struct slurm_nodes *out)
{
	struct ynode *doc = NULL;
	struct src s = { path, 1, 1, 0 };
	if (yamltree_load(path, &doc) < 0)
		return error("%s: not a JSON list of hosts: %s", path, util_last_error());
	int r = 0;
	if (doc->kind != YNODE_SEQ || !doc->n || doc->n > MAX_NODES) {
		s.line = doc->line, s.col = doc->col;
		r = error("%s:%u:%u: must be a list of 1 to %d hosts", path, doc->line, doc->col,
			  MAX_NODES);
	}
	for (size_t i = 0; r == 0 && i < doc->n; i++) {
		const struct ynode *m = doc->children[i];
		struct slurm_node *n = &out->v[out->n++];
		n->gpus = -1;
		n->where = xstrfmt("%s:%u", path, m->line);
		s = (struct src){ path, m->line, m->col, i };
		if (m->kind != YNODE_MAP) {
			r = fail(&s, NULL, "must be an object like {\"ip\": \"10.0.0.11\", "
				 "\"CUDA_VISIBLE_DEVICES\": \"0,1,2,3\"}");
			break;
		}
		for (size_t k = 0; k < m->n && r == 0; k++) {
			s.line = m->key_line[k], s.col = m->key_col[k];
			r = json_field(&s, m->keys[k], m->children[k], n);
		}
		s.line = m->line, s.col = m->col;
		if (r == 0 && !n->name && !n->addr)
			r = fail(&s, NULL, "needs an ip (or address) or a name");
	}
	ynode_free(doc);
	return r;
}

/* No name or address twice. */
static int distinct(const struct slurm_nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++) {
		for (size_t k = 0; k < i; k++) {
			const struct slurm_node *a = &ns->v[k], *b = &ns->v[i];
			if (a->name && b->name && !strcasecmp(a->name, b->name))
				return error("%s: node '%s' is listed before, at %s", b->where, b->name,
					     a->where);
			if (a->addr && b->addr && !strcmp(a->addr, b->addr))
				return error("%s: address '%s' is listed before, at %s", b->where,
					     b->addr, a->where);
		}
	}
	return 0;
}

int slurm_nodes_read(const char *path, struct slurm_nodes *out)
{
	char *text = NULL;
	memset(out, 0, sizeof(*out));
	if (fileio_read(path, 0, &text, NULL) < 0)
		return -1;
	const char *first = text + strspn(text, " \t\r\n");
	size_t lines = 1;
	for (const char *c = text; *c; c++)
		lines += *c == '\n';
	out->v = xcalloc(lines < MAX_NODES ? lines + 1 : MAX_NODES + 1, sizeof(*out->v));
	int r = *first == '[' ? read_json(path, out) : read_plain(path, text, out);
	if (r == 0 && !out->n)
		r = error("%s: no node in it (one a line: NAME [ADDRESS] [cpus=N] [memory=MB] "
			  "[gpus=N], or AIPerf's servers.json)", path);
	if (r == 0)
		r = distinct(out);
	free(text);
	if (r < 0)
		slurm_nodes_release(out);
	return r;
}

void slurm_nodes_release(struct slurm_nodes *nodes)
{
	for (size_t i = 0; i < nodes->n; i++) {
		free(nodes->v[i].name);
		free(nodes->v[i].addr);
		free(nodes->v[i].where);
	}
	free(nodes->v);
	memset(nodes, 0, sizeof(*nodes));
}

/* "Key=value" of a `slurmd -C` line, or NULL; the caller frees it. */
static char *probed_value(const char *text, const char *key)
{
	size_t klen = strlen(key);
	for (const char *p = text; (p = strstr(p, key)); p += klen) {
		if ((p == text || isspace((unsigned char)p[-1])) && p[klen] == '=')
			return xstrndup(p + klen + 1, strcspn(p + klen + 1, " \t\r\n"));
	}
	return NULL;
}

int slurm_node_probed(struct slurm_node *n, const char *slurmd_c)
{
	char *name = probed_value(slurmd_c, "NodeName"), *cpus = probed_value(slurmd_c, "CPUs");
	char *mem = probed_value(slurmd_c, "RealMemory");
	const char *who = n->name ? n->name : n->addr;
	long v;
	int r = 0;
	if (!name || !cpus)
		r = error("%s: node '%s': slurmd -C printed no NodeName and CPUs: '%.80s'", n->where,
			  who, slurmd_c);
	else if (n->name && strcmp(n->name, name))
		r = error("%s: node '%s' calls itself '%s' (slurmd -C): slurmd finds its entry by "
			  "the hostname, so the list must name it '%s' (or the node be renamed)",
			  n->where, n->name, name, name);
	else if (!n->name && set_name(&(struct src){ n->where, 0, 0, 0 }, "name", name, &n->name) < 0)
		r = -1;
	if (r == 0 && !n->cpus && util_parse_long(cpus, 1, MAX_CPUS, &v) < 0)
		r = error("%s: node '%s': slurmd -C says CPUs=%s", n->where, who, cpus);
	else if (r == 0 && !n->cpus)
		n->cpus = v;
	if (r == 0 && !n->memory && mem && util_parse_long(mem, 1, MAX_MEMORY, &v) == 0)
		n->memory = v;
	free(name);
	free(cpus);
	free(mem);
	return r;
}

long slurm_count_gpus(const char *nvidia_smi_l)
{
	long n = 0;
	for (const char *p = nvidia_smi_l; *p;) {
		n += !strncmp(p, "GPU ", 4);
		p += strcspn(p, "\n");
		p += *p == '\n';
	}
	return n;
}

/* ---- the files ---------------------------------------------------------- */

/* Ours, in the order written: Debian's paths and daemons' users, munge,
 * one partition, the runner deciding about retries (ReturnToService=2
 * brings a node back when its slurmd registers again). */
static const char *const defaults[] = {
	"SlurmctldPort=6817",
	"SlurmdPort=6818",
	"SlurmUser=slurm",
	"AuthType=auth/munge",
	"CredType=cred/munge",
	"StateSaveLocation=/var/lib/slurm/slurmctld",
	"SlurmdSpoolDir=/var/lib/slurm/slurmd",
	"SlurmctldPidFile=/run/slurmctld.pid",
	"SlurmdPidFile=/run/slurmd.pid",
	"SlurmctldLogFile=/var/log/slurm/slurmctld.log",
	"SlurmdLogFile=/var/log/slurm/slurmd.log",
	"ProctrackType=proctrack/linuxproc",
	"TaskPlugin=task/affinity",
	"SelectType=select/cons_tres",
	"SelectTypeParameters=CR_Core",
	"SchedulerType=sched/backfill",
	"MpiDefault=none",
	"ReturnToService=2",
	"SlurmctldTimeout=120",
	"SlurmdTimeout=120",
	"KillWait=30",
	"MinJobAge=300",
	"JobAcctGatherType=jobacct_gather/none",
	"AccountingStorageType=accounting_storage/none",
	NULL,
};

/* Keys that come from the host list, not from --set. */
static const char *const node_keys[] = { "NodeName", "PartitionName", "NodeSet", "DownNodes" };

static size_t key_len(const char *setting)
{
	return strcspn(setting, "=");
}

/* Settings: ours with the user's in place of those of the same key
 * (Slurm's keys are case-blind), the user's others after. */
static int settings(const struct slurm_conf_opts *o, struct strvec *out)
{
	strvec_pushv(out, defaults);
	for (size_t i = 0; o->set && i < o->set->n; i++) {
		const char *s = o->set->v[i];
		size_t k = key_len(s), j;
		if (!k || !s[k] || strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") < k)
			return error("--set '%s': must be Key=Value (a slurm.conf setting)", s);
		for (const char *c = s + k + 1; *c; c++)
			if (iscntrl((unsigned char)*c))
				return error("--set '%.*s': the value has a control character", (int)k, s);
		for (j = 0; j < ARRAY_SIZE(node_keys); j++)
			if (strlen(node_keys[j]) == k && !strncasecmp(node_keys[j], s, k))
				return error("--set '%s': %s lines come from the host list", s,
					     node_keys[j]);
		for (j = 0; j < out->n; j++)
			if (key_len(out->v[j]) == k && !strncasecmp(out->v[j], s, k))
				break;
		if (j < out->n) {
			free(out->v[j]);
			out->v[j] = xstrdup(s);
		} else {
			strvec_push(out, s);
		}
	}
	return 0;
}

/* SlurmctldHost: --controller "NAME[=ADDRESS]", else the first node. */
static int controller(const struct slurm_conf_opts *o, const struct slurm_node *first,
		      struct strbuf *conf)
{
	const char *c = o->controller;
	if (!c) {
		strbuf_addf(conf, "SlurmctldHost=%s", first->name);
		if (first->addr)
			strbuf_addf(conf, "(%s)", first->addr);
		strbuf_addch(conf, '\n');
		return 0;
	}
	size_t nlen = strcspn(c, "=");
	char *name = xstrndup(c, nlen);
	const char *addr = c[nlen] ? c + nlen + 1 : NULL;
	int ok = host_word(name) && (!addr || ip_word(addr) || host_word(addr));
	if (ok && conf)
		strbuf_addf(conf, addr ? "SlurmctldHost=%s(%s)\n" : "SlurmctldHost=%s\n", name, addr);
	free(name);
	return ok ? 0 : error("--controller '%s': must be NAME or NAME=ADDRESS", c);
}

int slurm_conf_check(const struct slurm_conf_opts *o)
{
	struct strvec set = STRVEC_INIT;
	int r = 0;
	if (!host_word(o->cluster))
		r = error("--cluster '%s': must be a word (letters, digits, '-', '_', '.')", o->cluster);
	else if (!host_word(o->partition))
		r = error("--partition '%s': must be a word (letters, digits, '-', '_', '.')",
			  o->partition);
	else if (o->controller)
		r = controller(o, NULL, NULL);
	if (r == 0 && (!*o->gpu_file || strpbrk(o->gpu_file, " \t\n[]")))
		r = error("--gpu-file '%s': must be a path without blanks or brackets", o->gpu_file);
	if (r == 0)
		r = settings(o, &set);
	strvec_clear(&set);
	return r;
}

int slurm_conf_render(const struct slurm_conf_opts *o, const struct slurm_nodes *nodes,
		      struct strbuf *conf, struct strbuf *gres)
{
	struct strvec set = STRVEC_INIT;
	long gpus = 0, cpus = 0;
	if (!nodes->n)
		BUG("no nodes to write");
	for (size_t i = 0; i < nodes->n; i++) {
		const struct slurm_node *n = &nodes->v[i];
		if (!n->name || !n->cpus)
			BUG("node %zu has no name or CPUs", i);
		gpus += n->gpus > 0 ? n->gpus : 0;
		cpus += n->cpus;
	}
	if (slurm_conf_check(o) < 0 || settings(o, &set) < 0) {
		strvec_clear(&set);
		return -1;
	}
	strbuf_addf(conf, "# slurm.conf written by aah-runner slurm-conf from %s:\n"
			  "# %zu nodes, %ld CPUs, %ld GPUs. The same file on the controller and "
			  "every node.\n", o->source, nodes->n, cpus, gpus);
	strbuf_addf(conf, "ClusterName=%s\n", o->cluster);
	int r = controller(o, &nodes->v[0], conf);
	for (size_t i = 0; i < set.n; i++)
		strbuf_addf(conf, "%s\n", set.v[i]);
	if (gpus)
		strbuf_addstr(conf, "GresTypes=gpu\n");
	strbuf_addf(gres, "# gres.conf written by aah-runner slurm-conf from %s: each node's "
			  "GPUs, as device files.\n", o->source);
	for (size_t i = 0; i < nodes->n; i++) {
		const struct slurm_node *n = &nodes->v[i];
		strbuf_addf(conf, "NodeName=%s", n->name);
		if (n->addr)
			strbuf_addf(conf, " NodeAddr=%s", n->addr);
		strbuf_addf(conf, " CPUs=%ld", n->cpus);
		if (n->memory)
			strbuf_addf(conf, " RealMemory=%ld", n->memory);
		if (n->gpus > 0)
			strbuf_addf(conf, " Gres=gpu:%ld", n->gpus);
		strbuf_addstr(conf, " State=UNKNOWN\n");
		if (n->gpus == 1)
			strbuf_addf(gres, "NodeName=%s Name=gpu File=%s0\n", n->name, o->gpu_file);
		else if (n->gpus > 1)
			strbuf_addf(gres, "NodeName=%s Name=gpu File=%s[0-%ld]\n", n->name, o->gpu_file,
				    n->gpus - 1);
	}
	strbuf_addf(conf, "PartitionName=%s Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
		    o->partition);
	strvec_clear(&set);
	return r;
}
