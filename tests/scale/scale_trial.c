/* scale_trial.c: aah-scale-trial, the stand-in trainer of the scale harness
 * (tests/scale/, docs/scale.md). It keeps aah-trial's contract (the
 * arguments and variables of docs/launch.md, metrics.jsonl, result.json, a
 * checkpoint, --resume, the exit statuses of docs/trainer.md) and trains
 * nothing: each epoch it sleeps the time a model of AIPerf's trials gives
 * the network of its arch.json (FLOPs per image x ImageNet's images / the
 * slot's speed), divided by the time compression the harness sets, and
 * reports the accuracy of a learning-curve model of that network. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"     /* arch_load: FLOPs per image of the network */
#include "fileio.h"
#include "jsonfile.h"
#include "strbuf.h"
#include "util.h"

/* ResNet-50 v1 at 224x224x3, 1000 classes (docs/tuner.md): the network
 * when the trial has no arch.json (tuners other than NetworkMorphism). */
#define R50_FWD 7.81e9
#define R50_BWD 15.62e9

struct opts {
	/* the contract */
	const char *trial_dir, *train_url, *init_method;
	long rank, world;
	int resume;
	/* AIPerf's epoch budget, as aah-trial (docs/trainer.md) */
	long epochs, warmup[3], slave, patience, seed;
	/* the model */
	double compress;       /* model seconds per real second */
	double slot_flops;     /* FLOP/s one slot trains at */
	double train_images, val_images;
	long fsync;            /* 0: files are written without fsync (docs/scale.md) */
};

enum kind { K_STR, K_LONG, K_DOUBLE, K_FLAG };

struct opt_spec {
	const char *name, *env;
	enum kind kind;
	void *dst;
	double min, max;
	const char *help;
};

static void usage(const struct opt_spec *spec)
{
	printf("usage: aah-scale-trial [--trial_dir DIR] [options] [--name=value ...]\n"
	       "The stand-in trainer of the scale harness (docs/scale.md): aah-trial's contract,\n"
	       "a modelled sleep instead of training. Arguments it does not know are reported\n"
	       "and ignored, as aah-trial does.\n\n");
	for (const struct opt_spec *s = spec; s->name; s++)
		printf("  %-16s %-22s %s\n", s->name, s->env ? s->env : "", s->help);
}

/* Set one option from text; errors name it and its range. */
static int set_opt(const struct opt_spec *s, const char *v, const char *from)
{
	if (s->kind == K_STR) {
		*(const char **)s->dst = v;
		return 0;
	}
	double d;
	if (util_parse_double(v, &d) < 0 || !(d >= s->min && d <= s->max) ||
	    (s->kind == K_LONG && d != floor(d)))
		return error("%s %s '%s': must be a%s number from %g to %g", from, s->name, v,
			     s->kind == K_LONG ? " whole" : "", s->min, s->max);
	if (s->kind == K_LONG)
		*(long *)s->dst = (long)d;
	else
		*(double *)s->dst = d;
	return 0;
}

/* 0, 1 (--help) or -1 (a bad value: exit 2). */
static int parse(struct opts *o, int argc, char **argv)
{
	const struct opt_spec spec[] = {
		{ "--trial_dir", "AAH_TRIAL_DIR", K_STR, &o->trial_dir, 0, 0, "where this launch writes" },
		{ "--train_url", NULL, K_STR, &o->train_url, 0, 0, "the trial dir when no other names it" },
		{ "--data_url", NULL, K_STR, NULL, 0, 0, "accepted; no data is read" },
		{ "--init_method", NULL, K_STR, &o->init_method, 0, 0, "tcp://host:port of rank 0" },
		{ "--rank", "RANK_ID", K_LONG, &o->rank, 0, 65535, "this rank" },
		{ "--world_size", "RANK_SIZE", K_LONG, &o->world, 1, 65536, "ranks of the trial" },
		{ "--resume", NULL, K_FLAG, &o->resume, 0, 0, "go on from checkpoint/" },
		{ "--elastic", NULL, K_FLAG, NULL, 0, 0, "accepted; the stand-in never resizes" },
		{ "--epochs", NULL, K_LONG, &o->epochs, 1, 100000, "budget after the warm-up rounds (60)" },
		{ "--warmup_1", NULL, K_LONG, &o->warmup[0], 1, 100000, "budget of round 0 (15)" },
		{ "--warmup_2", NULL, K_LONG, &o->warmup[1], 1, 100000, "budget of round 1 (30)" },
		{ "--warmup_3", NULL, K_LONG, &o->warmup[2], 1, 100000, "budget of round 2 (45)" },
		{ "--slave", "AAH_SLAVE", K_LONG, &o->slave, 1, 1e6, "trials per round (2)" },
		{ "--patience", NULL, K_LONG, &o->patience, 0, 100000, "0: AIPerf's min(6+2*round, 20)" },
		{ "--seed", "AAH_SEED", K_LONG, &o->seed, 0, 4294967295.0, "seed of the noise (1)" },
		{ "--compress", "AAH_SCALE_COMPRESS", K_DOUBLE, &o->compress, 1e-3, 1e9,
		  "model seconds per real second (1)" },
		{ "--slot_flops", "AAH_SCALE_SLOT_FLOPS", K_DOUBLE, &o->slot_flops, 1, 1e20,
		  "FLOP/s of one slot (5e13: an 8-GPU node)" },
		{ "--train_images", NULL, K_DOUBLE, &o->train_images, 0, 1e12, "per epoch (1281167)" },
		{ "--val_images", NULL, K_DOUBLE, &o->val_images, 0, 1e12, "per epoch (50000)" },
		{ "--fsync", "AAH_SCALE_FSYNC", K_LONG, &o->fsync, 0, 1, "1: files reach the disk (1)" },
		{ NULL, NULL, K_STR, NULL, 0, 0, NULL },
	};
	for (const struct opt_spec *s = spec; s->name; s++) {
		const char *v = s->env ? getenv(s->env) : NULL;
		if (v && *v && s->dst && set_opt(s, v, s->env) < 0)
			return -1;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		size_t len = eq ? (size_t)(eq - a) : strlen(a);
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(spec);
			return 1;
		}
		const struct opt_spec *s = spec;
		while (s->name && !(strlen(s->name) == len && !strncmp(s->name, a, len)))
			s++;
		if (!s->name) {   /* hyperparameters (--name=value) and what launchers add */
			if (strncmp(a, "--", 2) || !eq)
				warning("ignoring unknown argument '%s'", a);
			continue;
		}
		if (s->kind == K_FLAG) {
			if (s->dst)
				*(int *)s->dst = 1;
			continue;
		}
		const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
		if (!v)
			return error("%s needs a value", s->name);
		if (s->dst && set_opt(s, v, "argument") < 0)
			return -1;
	}
	const char *rid = getenv("RANK_ID");
	if (rid && o->rank >= 0 && strtol(rid, NULL, 10) != o->rank)
		return error("--rank %ld but RANK_ID=%s: the launch contract disagrees with itself",
			     o->rank, rid);
	if (!o->trial_dir)
		o->trial_dir = o->train_url;
	if (!o->trial_dir)
		return error("no trial directory: give --trial_dir, AAH_TRIAL_DIR or --train_url");
	if (o->rank < 0)
		o->rank = 0;
	if (o->rank >= o->world)
		return error("--rank %ld is not below --world_size %ld", o->rank, o->world);
	return 0;
}

/* ---- the model ------------------------------------------------------------ */

static uint64_t mix(uint64_t x)   /* splitmix64's finaliser */
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* A standard normal drawn from key alone (Box-Muller). */
static double normal(uint64_t key)
{
	double u1 = ((double)(mix(key) >> 11) + 0.5) / 9007199254740992.0;
	double u2 = ((double)(mix(key ^ 0x5bd1e995u) >> 11) + 0.5) / 9007199254740992.0;
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

struct net {
	double fwd, bwd;       /* FLOPs per image, AIPerf's rules (common/arch) */
	uint64_t key;          /* the network's structure: its layers, not its file */
	int layers;
};

static int load_net(struct net *n, const char *trial_dir)
{
	char *path = xstrfmt("%s/arch.json", trial_dir);
	*n = (struct net){ R50_FWD, R50_BWD, 0x52353021u, 0 };
	int r = 0;
	if (fileio_exists(path)) {
		struct arch a = ARCH_INIT;
		r = arch_load(&a, path);
		if (r == 0) {
			n->fwd = a.flops_fwd;
			n->bwd = a.flops_bwd;
			n->layers = a.n_layers;
			uint64_t h = 1469598103934665603ull;
			for (int i = 0; i < a.n_layers; i++) {
				const struct arch_layer *l = &a.layers[a.order[i]];
				int v[5] = { (int)l->op.type, l->n_in, l->out.h, l->out.w, l->out.c };
				for (size_t k = 0; k < ARRAY_SIZE(v); k++)
					h = (h ^ (uint64_t)(unsigned)v[k]) * 1099511628211ull;
			}
			n->key = h;
		}
		arch_release(&a);
	}
	free(path);
	return r;
}

/* The accuracy the network approaches with training: more FLOPs per image
 * help with diminishing returns (ResNet-50 0.73, twice its FLOPs 0.79),
 * and each structure has its own luck (sd 0.015, the same every time). */
static double acc_limit(const struct net *n)
{
	double a = 0.80 - 0.50 * exp(-n->fwd / 4e9) + 0.015 * normal(n->key);
	return a < 0.01 ? 0.01 : a > 0.95 ? 0.95 : a;
}

/* Validation accuracy after epoch e: the limit approached with a time
 * constant that grows with the network (6 epochs for ResNet-50), and a
 * little noise per epoch (sd 0.003), the same on every run of this trial. */
static double acc_at(const struct net *n, const struct opts *o, long seq, long e)
{
	double tau = 6.0 * pow(n->fwd / R50_FWD, 0.3);
	double a = acc_limit(n) * (1.0 - exp(-(double)e / tau));
	a += 0.003 * normal(mix((uint64_t)o->seed) ^ mix((uint64_t)seq << 20 ^ (uint64_t)e));
	return a < 0.001 ? 0.001 : a > 0.999 ? 0.999 : a;
}

/* ---- the trial's files ------------------------------------------------------ */

struct state {
	long epoch, best_epoch;
	double best, last;
	double train_flops, eval_flops, wall_before;
};

static unsigned wflags(const struct opts *o)
{
	return o->fsync ? 0 : FILEIO_NOSYNC;
}

static char *path_in(const struct opts *o, const char *name)
{
	return xstrfmt("%s/%s", o->trial_dir, name);
}

static int write_json(const struct opts *o, const char *name, cJSON *doc)
{
	char *p = path_in(o, name);
	int r = jsonfile_write_flags(p, doc, wflags(o));
	free(p);
	cJSON_Delete(doc);
	return r;
}

static int save_checkpoint(const struct opts *o, const struct state *s)
{
	char *dir = path_in(o, "checkpoint");
	int r = fileio_mkdir_p(dir, 0755);
	free(dir);
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "format", "aah-scale-checkpoint/1");
	cJSON_AddNumberToObject(c, "epoch", (double)s->epoch);
	cJSON_AddNumberToObject(c, "best_epoch", (double)s->best_epoch);
	cJSON_AddNumberToObject(c, "best_val_acc", s->best);
	cJSON_AddNumberToObject(c, "val_acc", s->last);
	cJSON_AddNumberToObject(c, "train_flops", s->train_flops);
	cJSON_AddNumberToObject(c, "eval_flops", s->eval_flops);
	cJSON_AddNumberToObject(c, "wall_seconds", s->wall_before);
	if (r < 0) {
		cJSON_Delete(c);
		return -1;
	}
	return write_json(o, "checkpoint/state.json", c);
}

/* --resume: the state after the checkpoint's epoch, and metrics.jsonl cut
 * back to it (a kill between the two reruns that epoch, as aah-trial). */
static int load_checkpoint(const struct opts *o, struct state *s)
{
	char *p = path_in(o, "checkpoint/state.json");
	cJSON *c = NULL;
	int r = fileio_exists(p) ? jsonfile_read(p, &c) : 0;
	if (r == 0 && c) {
		if (jsonfile_check_format(p, c, "aah-scale-checkpoint", 1) < 0 ||
		    json_get_int(p, c, "epoch", 0, 0, 1000000, &s->epoch) < 0 ||
		    json_get_int(p, c, "best_epoch", 0, 0, 1000000, &s->best_epoch) < 0 ||
		    json_get_number(p, c, "best_val_acc", 0, &s->best) < 0 ||
		    json_get_number(p, c, "val_acc", 0, &s->last) < 0 ||
		    json_get_number(p, c, "train_flops", 0, &s->train_flops) < 0 ||
		    json_get_number(p, c, "eval_flops", 0, &s->eval_flops) < 0 ||
		    json_get_number(p, c, "wall_seconds", 0, &s->wall_before) < 0)
			r = -1;
	}
	cJSON_Delete(c);
	free(p);
	if (r < 0)
		return -1;
	/* the whole lines of epochs up to the checkpoint's */
	p = path_in(o, "metrics.jsonl");
	char *text = NULL;
	size_t len = 0;
	if (fileio_exists(p) && fileio_read(p, 0, &text, &len) == 0) {
		struct strbuf keep = STRBUF_INIT;
		for (char *line = text, *nl; (nl = memchr(line, '\n', len - (size_t)(line - text)));
		     line = nl + 1) {
			cJSON *m = cJSON_ParseWithLength(line, (size_t)(nl - line));
			const cJSON *e = cJSON_GetObjectItemCaseSensitive(m, "epoch");
			if (cJSON_IsNumber(e) && e->valuedouble <= (double)s->epoch)
				strbuf_add(&keep, line, (size_t)(nl + 1 - line));
			cJSON_Delete(m);
		}
		r = fileio_write_atomic_flags(p, keep.buf, keep.len, wflags(o));
		strbuf_release(&keep);
	}
	free(text);
	free(p);
	return r;
}

static int write_metrics(const struct opts *o, const struct state *s, double acc,
			 double epoch_s, double model_s)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "format", "aah-metrics/1");
	cJSON_AddNumberToObject(m, "epoch", (double)s->epoch);
	cJSON_AddNumberToObject(m, "train_loss", -log(acc > 0.05 ? acc : 0.05) + 0.1);
	cJSON_AddNumberToObject(m, "train_acc", acc + 0.05 < 1 ? acc + 0.05 : 1);
	cJSON_AddNumberToObject(m, "val_loss", -log(acc));
	cJSON_AddNumberToObject(m, "val_acc", acc);
	cJSON_AddNumberToObject(m, "lr", 0.1);
	cJSON_AddNumberToObject(m, "images_per_sec", model_s > 0 ? o->train_images / model_s : 0);
	cJSON_AddNumberToObject(m, "epoch_seconds", epoch_s);
	cJSON_AddNumberToObject(m, "train_flops", s->train_flops);
	cJSON_AddNumberToObject(m, "eval_flops", s->eval_flops);
	cJSON_AddNumberToObject(m, "timestamp", util_now());
	cJSON_AddNumberToObject(m, "rank", 0);
	cJSON_AddStringToObject(m, "precision", "fp16");
	char *p = path_in(o, "metrics.jsonl");
	int r = jsonfile_append_flags(p, m, wflags(o));
	free(p);
	cJSON_Delete(m);
	return r;
}

static int write_result(const struct opts *o, const struct state *s, const char *status,
			const char *reason)
{
	cJSON *r = cJSON_CreateObject();
	const char *devices[] = { "sim:0" };
	cJSON_AddStringToObject(r, "format", "aah-result/1");
	cJSON_AddStringToObject(r, "status", status);
	cJSON_AddStringToObject(r, "stop_reason", reason);
	cJSON_AddNumberToObject(r, "best_val_acc", s->best);
	cJSON_AddNumberToObject(r, "best_epoch", (double)s->best_epoch);
	cJSON_AddNumberToObject(r, "final_val_acc", s->last);
	cJSON_AddNumberToObject(r, "epochs_run", (double)s->epoch);
	cJSON_AddNumberToObject(r, "train_flops", s->train_flops);
	cJSON_AddNumberToObject(r, "eval_flops", s->eval_flops);
	cJSON_AddNumberToObject(r, "total_flops", s->train_flops + s->eval_flops);
	cJSON_AddNumberToObject(r, "wall_seconds", s->wall_before);
	cJSON_AddStringToObject(r, "precision", "fp16");
	cJSON_AddItemToObject(r, "devices", cJSON_CreateStringArray(devices, 1));
	cJSON_AddNumberToObject(r, "world_size", (double)o->world);
	return write_json(o, "result.json", r);
}

/* ---- running ---------------------------------------------------------------- */

/* Sleep, or return 1 at once on SIGTERM or SIGINT (blocked, so waited for). */
static int sleep_or_signal(double seconds, const sigset_t *set)
{
	double until = util_monotonic() + seconds;
	for (double left = seconds; left > 0; left = until - util_monotonic()) {
		struct timespec ts = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
		int sig = sigtimedwait(set, NULL, &ts);
		if (sig == SIGTERM || sig == SIGINT)
			return 1;
		if (sig < 0 && errno != EAGAIN && errno != EINTR)
			break;
	}
	return 0;
}

/* What the harness reads from trial.log: how long this process ran before
 * main (with tuner.placement: trial, the proposer it was exec'd from) and
 * what it read and wrote by then (/proc/self/io survives exec). */
static void probe_line(const struct opts *o, long seq, long attempt)
{
	char *stat = NULL, *io = NULL, *up = NULL;
	double since = -1;
	long long rchar = -1, wchar = -1;
	int was = util_set_quiet(1);
	if (fileio_read("/proc/self/stat", 4096, &stat, NULL) == 0 &&
	    fileio_read("/proc/uptime", 256, &up, NULL) == 0) {
		char *p = strrchr(stat, ')');
		unsigned long long start = 0;
		for (int field = 2; p && *p && field < 22; p++)
			field += *p == ' ';
		if (p && sscanf(p, "%llu", &start) == 1)
			since = strtod(up, NULL) - (double)start / (double)sysconf(_SC_CLK_TCK);
	}
	if (fileio_read("/proc/self/io", 4096, &io, NULL) == 0) {
		const char *r = strstr(io, "rchar: "), *w = strstr(io, "wchar: ");
		if (r)
			rchar = strtoll(r + 7, NULL, 10);
		if (w)
			wchar = strtoll(w + 7, NULL, 10);
	}
	util_set_quiet(was);
	printf("aah-scale-trial: trial %ld attempt %ld rank %ld of %ld: before_main_s=%.3f "
	       "before_main_rchar=%lld before_main_wchar=%lld start=%.3f\n",
	       seq, attempt, o->rank, o->world, since, rchar, wchar, util_now());
	fflush(stdout);
	free(stat);
	free(io);
	free(up);
}

static long env_long(const char *name, long def)
{
	const char *v = getenv(name);
	long x;
	return v && util_parse_long(v, 1, 999999999, &x) == 0 ? x : def;
}

int main(int argc, char **argv)
{
	struct opts o = { .rank = -1, .world = 1, .epochs = 60, .warmup = { 15, 30, 45 },
			  .slave = 2, .seed = 1, .compress = 1, .slot_flops = 5e13,
			  .train_images = 1281167, .val_images = 50000, .fsync = 1 };
	util_set_progname("aah-scale-trial");
	int pr = parse(&o, argc, argv);
	if (pr)
		return pr > 0 ? 0 : 2;
	long seq = env_long("AAH_TRIAL_SEQ", 1), attempt = env_long("AAH_ATTEMPT", 1);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	probe_line(&o, seq, attempt);

	struct net n;
	struct state s = { .best = 0, .last = 0 };
	int r = load_net(&n, o.trial_dir);
	if (r == 0 && o.resume && o.rank == 0)
		r = load_checkpoint(&o, &s);
	if (r < 0) {
		char *why = xstrfmt("error: %s", util_last_error());
		if (o.rank == 0)
			write_result(&o, &s, "failed", why);
		free(why);
		return 1;
	}
	long round = (seq - 1) / o.slave;
	long budget = round < 3 ? o.warmup[round] : o.epochs;
	long patience = o.patience ? o.patience : (6 + 2 * round < 20 ? 6 + 2 * round : 20);
	double model_s = ((n.fwd + n.bwd) * o.train_images + n.fwd * o.val_images) / o.slot_flops;
	double sleep_s = model_s / o.compress;
	printf("aah-scale-trial: %d layers, %.4g + %.4g FLOPs per image; round %ld: %ld epochs of "
	       "%.1f s (model), %.3f s each here; from epoch %ld\n",
	       n.layers, n.fwd, n.bwd, round, budget, model_s, sleep_s, s.epoch);
	fflush(stdout);
	const char *status = "succeeded", *reason = "budget";
	while (s.epoch < budget) {
		double t0 = util_monotonic();
		if (sleep_or_signal(sleep_s, &set)) {
			if (o.rank == 0)
				write_result(&o, &s, "failed", "canceled");
			fprintf(stderr, "aah-scale-trial: canceled\n");
			return 1;
		}
		if (o.rank != 0) {
			s.epoch++;
			continue;
		}
		s.epoch++;
		double acc = acc_at(&n, &o, seq, s.epoch), took = util_monotonic() - t0;
		s.train_flops += (n.fwd + n.bwd) * o.train_images;
		s.eval_flops += n.fwd * o.val_images;
		s.wall_before += took;
		s.last = acc;
		if (acc > s.best) {
			s.best = acc;
			s.best_epoch = s.epoch;
		}
		if (write_metrics(&o, &s, acc, took, model_s) < 0 || save_checkpoint(&o, &s) < 0) {
			char *why = xstrfmt("error: %s", util_last_error());
			write_result(&o, &s, "failed", why);
			free(why);
			return 1;
		}
		if (s.epoch - s.best_epoch >= patience && s.epoch < budget) {
			status = "early_stopped";
			reason = "early_stop";
			break;
		}
	}
	if (o.rank == 0 && write_result(&o, &s, status, reason) < 0)
		return 1;
	printf("aah-scale-trial: %s after %ld epochs, best %.4f; end=%.3f\n", status, s.epoch, s.best,
	       util_now());
	return 0;
}
