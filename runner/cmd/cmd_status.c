/* cmd_status.c: `status` (one experiment's trials, --watch to follow),
 * `list` (every experiment) and `stop`. */
#include "runner/cmd/cmd.h"
#include "fileio.h" /* fileio_list_dir */
#include "runner/cmd/options.h"
#include "runner/config/workdir.h"
#include "runner/backend/backend.h" /* backend_find: the backend's own status */
#include "runner/pool/ledger.h" /* ledger_read: the device pool's shares */
#include "runner/pool/pooltrial.h" /* pooltrial_waiting: a Job its queue holds */
#include "runner/store/expdir.h" /* expdir_result_read: what a trial ran on */
#include "strbuf.h"
#include "strvec.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void fmt_span(char *buf, size_t n, double sec)
{
	if (sec < 0 || isnan(sec)) {
		snprintf(buf, n, "-");
		return;
	}
	long t = (long)(sec + 0.5);
	if (t >= 3600)
		snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
	else if (t >= 60)
		snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, n, "%lds", t);
}

static void fmt_clock(char *buf, size_t n, double ts)
{
	if (ts <= 0) {
		snprintf(buf, n, "-");
		return;
	}
	time_t t = (time_t)ts;
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(buf, n, "%H:%M:%S", &tm);
}

/* Under a trial that wrote its result: the backend, device and precision
 * it ran on (its last launch's result.json), "        ran on cuda: NVIDIA
 * H100 80GB HBM3, bf16". */
static void ran_on(struct strbuf *sb, const struct experiment *e, const struct trial_rec *t)
{
	struct expdir_result res;
	char *dir = expdir_place_dir(e->dir, t->seq, t->place);
	util_set_quiet(1);
	int r = expdir_result_read(dir, &res);
	util_set_quiet(0);
	free(dir);
	if (r <= 0 || !res.backend[0])
		return;
	strbuf_addf(sb, "        ran on %s%s%s%s%s\n", res.backend, res.device[0] ? ": " : "",
		    res.device, res.precision[0] ? ", " : "", res.precision);
}

static const char *experiment_state(const struct experiment *e)
{
	if (experiment_runner_pid(e))
		return "running";
	return e->done ? "done" : "stopped";
}

struct counts {
	unsigned done, running, waiting, succeeded, failed, held;
};

static struct counts count_trials(const struct experiment *e)
{
	struct counts c = { 0 };
	for (size_t i = 0; i < e->ntrials; i++) {
		enum trial_state s = e->trials[i].state;
		if (expdir_state_final(s))
			c.done++;
		if (s == TRIAL_RUNNING) {
			char *held = expdir_waiting_get(e->dir, e->trials[i].seq);
			if (held)
				c.held++;
			else
				c.running++;
			free(held);
		}
		if (s == TRIAL_QUEUED)
			c.waiting++;
		if (s == TRIAL_SUCCEEDED || s == TRIAL_EARLY_STOPPED)
			c.succeeded++;
		if (s == TRIAL_FAILED)
			c.failed++;
	}
	return c;
}

/* The trials table lists every trial, or with `last` > 0 the last `last`
 * and every earlier one not yet finished: at 10,000 trials a redraw of
 * every row would scroll the running ones away. */
static void render_status(struct strbuf *sb, const struct experiment *e,
			  const struct aah_config *cfg, long last)
{
	struct counts c = count_trials(e);
	double now = util_now();
	double elapsed = e->run_seconds;
	const char *state = experiment_state(e);
	/* no runner: its running trials are as the journal left them, until a
	 * resume settles them */
	int gone = strcmp(state, "running") != 0;
	if (!gone && e->session_start > 0)
		elapsed += now - e->session_start;
	else if (e->session_start > 0 && e->last_event_ts > e->session_start)
		elapsed += e->last_event_ts - e->session_start;
	char el[32], left[32] = "unlimited", acc[16] = "-";
	fmt_span(el, sizeof(el), elapsed);
	if (cfg->max_exec_duration > 0)
		fmt_span(left, sizeof(left), fmax(0, cfg->max_exec_duration - elapsed));
	double best = experiment_best_accuracy(e);
	if (!isnan(best))
		snprintf(acc, sizeof(acc), "%.4f", best);
	strbuf_addf(sb, "experiment %s (%s): %s\n", e->id, e->name ? e->name : "", state);
	strbuf_addf(sb, "trials: %u done (%u succeeded, %u failed), %u running, ", c.done,
		    c.succeeded, c.failed, c.running);
	if (c.held)
		strbuf_addf(sb, "%u waiting for admission, ", c.held);
	strbuf_addf(sb, "%u queued, %ld max\n", c.waiting, cfg->max_trial_num);
	strbuf_addf(sb, "best accuracy: %s   elapsed: %s   remaining budget: %s\n", acc, el, left);
	if (gone && c.running)
		strbuf_addf(sb, "the runner stopped with %u trial%s running, not settled since: "
			    "`aah-runner resume %s` settles them\n", c.running, c.running == 1 ? "" : "s",
			    e->id);
	strbuf_addf(sb, "\n");
	strbuf_addf(sb, "%-7s %-13s %-7s %-5s %-10s %-8s %-9s %-9s %s\n", "TRIAL", "STATE", "ATTEMPT",
		    "SLOT", "NODES", "STARTED", "DURATION", "BEST_ACC", "REASON");
	size_t first = last > 0 && e->ntrials > (size_t)last ? e->ntrials - (size_t)last : 0, hidden = 0;
	for (size_t i = 0; i < e->ntrials; i++) {
		const struct trial_rec *t = &e->trials[i];
		if (i < first && expdir_state_final(t->state)) {
			hidden++;
			continue;
		}
		char id[EXPDIR_TRIAL_ID_SIZE], started[16], dur[16], a[16] = "-", slot[16] = "-",
		     nodes[48];
		char *held = t->state == TRIAL_RUNNING ? expdir_waiting_get(e->dir, t->seq) : NULL;
		int unsettled = gone && t->state == TRIAL_RUNNING && !held;
		fmt_clock(started, sizeof(started), t->submitted);
		double end = -1;
		if (t->finished > 0)
			end = t->finished;
		else if (unsettled)   /* as long as the journal knew of it */
			end = e->last_event_ts;
		else if (t->state == TRIAL_RUNNING)
			end = now;
		fmt_span(dur, sizeof(dur), t->submitted > 0 && end > 0 ? end - t->submitted : -1);
		if (!isnan(t->best_acc))
			snprintf(a, sizeof(a), "%.4f", t->best_acc);
		if (t->slot >= 0)
			snprintf(slot, sizeof(slot), "%d", t->slot);
		snprintf(nodes, sizeof(nodes), "%ldx%ld", cfg->trial.nodes, cfg->trial.gpu_num);
		const char *why = t->reason ? t->reason : "";
		if (held)
			why = held;
		else if (unsettled)
			why = "not settled: the runner stopped";
		strbuf_addf(sb, "%-6s  %-13s %-7u %-5s %-10s %-8s %-9s %-9s %s\n",
			    expdir_trial_id(t->seq, id),
			    held ? "waiting" : expdir_state_name(t->state), t->attempt ? t->attempt : 1,
			    slot, nodes, started, dur, a, why);
		free(held);
		ran_on(sb, e, t);
		for (size_t k = 0; k < t->notes.n; k++)
			strbuf_addf(sb, "        note from %s\n", t->notes.v[k]);
		for (size_t k = 0; k < t->retries.n; k++)
			strbuf_addf(sb, "        retried after %s%s\n", t->retries.v[k],
				    cfg->trial.resume_on_retry ? " (resumed from its checkpoint)" : "");
	}
	if (hidden)
		strbuf_addf(sb, "(%zu earlier finished trial%s not listed: --last 0 lists every one)\n",
			    hidden, hidden == 1 ? "" : "s");
}

/* What the experiment's backend keeps of its own (docker.hosts: which
 * hosts are down, since when, and why). */
static void render_backend(struct strbuf *sb, const struct experiment *e,
			   const struct aah_config *cfg)
{
	const struct aah_backend *b = backend_find(cfg->platform);
	if (b && b->status)
		b->status(e->dir, sb);
}

/* The work directory's device pool: each training's priority and devices
 * (its share in the last allocation, and what it runs with: how many, and
 * which). */
static void render_pool(struct strbuf *sb, const struct experiment *e,
			const struct aah_config *cfg)
{
	if (!cfg->pool.devices)   /* no pool (quota: sized when run) */
		return;
	const char *wd = e->workdir;
	struct ledger l;
	ledger_init(&l, wd);
	if (ledger_read(&l) == 0) {
		strbuf_addf(sb, "\ndevice pool: %u devices, %zu training%s\n", l.devices, l.n,
			    l.n == 1 ? "" : "s");
		strbuf_addf(sb, "%-24s %-9s %-8s %s\n", "TRAINING", "PRIORITY", "DEVICES", "RUNNING_ON");
		for (size_t i = 0; i < l.n; i++) {
			char *ids = ledger_ids_text(&l.t[i]);
			char *waiting = l.t[i].applied ? pooltrial_waiting(wd, l.t[i].id) : NULL;
			strbuf_addf(sb, "%-24s %-9ld %-8u ", l.t[i].id, l.t[i].priority, l.t[i].share);
			if (waiting)   /* reserved for its Job, which its queue has not admitted */
				strbuf_addf(sb, "0, %u reserved (%s): waiting for admission\n",
					    l.t[i].applied, ids);
			else
				strbuf_addf(sb, "%u (%s)\n", l.t[i].applied, ids);
			free(waiting);
			free(ids);
		}
	}
	ledger_release(&l);
}

int cmd_status(int argc, const char **argv)
{
	const char *workdir = NULL, *arg;
	int watch = 0;
	double interval = 2;
	long count = 0, last = -1;
	const struct option_spec opts[] = {
		{ "workdir", 0, OPT_STRING, &workdir, "DIR", "where experiments live" },
		{ "watch", 'w', OPT_FLAG, &watch, NULL, "redraw until the experiment ends" },
		{ "interval", 0, OPT_DOUBLE, OPT_NUMBER(&interval, 0.1, 3600), "SEC", "seconds between redraws (2)" },
		{ "count", 0, OPT_LONG, OPT_NUMBER(&count, 1, 1000000), "N", "with --watch: stop after N redraws" },
		{ "last", 0, OPT_LONG, OPT_NUMBER(&last, 0, 1000000000), "N",
		  "list the last N trials and every earlier one not finished (0: all; default all, 40 with --watch)" },
		{ NULL },
	};
	int r = options_parse_one(argc, argv, opts, "aah-runner status <experiment> [--watch] [--last N]",
				  "experiment", &arg);
	if (r)
		return r > 0 ? 0 : 2;
	if (last < 0)
		last = watch ? 40 : 0;
	int rc = 0;
	for (long i = 0;; i++) {
		struct experiment e;
		struct aah_config cfg;
		if (cmd_open_experiment(workdir, arg, &e, &cfg) < 0) {
			rc = 1;
			break;
		}
		struct strbuf sb = STRBUF_INIT;
		render_status(&sb, &e, &cfg, last);
		render_backend(&sb, &e, &cfg);
		render_pool(&sb, &e, &cfg);
		int running = !strcmp(experiment_state(&e), "running");
		experiment_release(&e);
		config_release(&cfg);
		if (watch && isatty(1))
			fputs("\033[H\033[2J", stdout);
		fputs(sb.buf, stdout);
		fflush(stdout);
		strbuf_release(&sb);
		if (!watch || !running || (count && i + 1 >= count))
			break;
		struct timespec ts = { (time_t)interval, (long)((interval - (time_t)interval) * 1e9) };
		nanosleep(&ts, NULL);
		if (!isatty(1))
			fputs("\n", stdout);
	}
	return rc;
}

int cmd_list(int argc, const char **argv)
{
	const char *workdir = NULL, **rest;
	const struct option_spec opts[] = {
		{ "workdir", 0, OPT_STRING, &workdir, "DIR", "where experiments live" },
		{ NULL },
	};
	int n = options_parse(argc, argv, opts, "aah-runner list [--workdir DIR]", &rest);
	if (n < 0)
		return n == -2 ? 0 : 2;
	free(rest);
	char *wd = workdir ? fileio_absolute(workdir) : workdir_default();
	char *base = xstrfmt("%s/experiments", wd);
	struct strvec names = STRVEC_INIT;
	fileio_list_dir(base, NULL, NULL, &names);   /* none yet: an empty list */
	size_t count = names.n;
	printf("%-9s %-8s %-8s %-6s %-9s %-20s %s\n", "ID", "STATE", "TRIALS", "FAILED", "BEST_ACC",
	       "CREATED", "NAME");
	for (size_t i = 0; i < count; i++) {
		char *dir = xstrfmt("%s/%s", base, names.v[i]);
		struct experiment e;
		int was_quiet = util_set_quiet(1);
		int r = experiment_open(&e, dir);
		util_set_quiet(was_quiet);
		if (r == 0) {
			struct counts c = count_trials(&e);
			char acc[16] = "-", created[32];
			double best = experiment_best_accuracy(&e);
			if (!isnan(best))
				snprintf(acc, sizeof(acc), "%.4f", best);
			time_t t = (time_t)e.created;
			struct tm tm;
			localtime_r(&t, &tm);
			strftime(created, sizeof(created), "%Y-%m-%d %H:%M:%S", &tm);
			printf("%-9s %-8s %-8u %-6u %-9s %-20s %s\n", e.id, experiment_state(&e), c.done,
			       c.failed, acc, created, e.name ? e.name : "");
			experiment_release(&e);
		}
		free(dir);
	}
	if (!count)
		printf("(no experiments in %s)\n", base);
	strvec_clear(&names);
	free(base);
	free(wd);
	return 0;
}

int cmd_stop(int argc, const char **argv)
{
	const char *workdir = NULL, *arg;
	double timeout = 60;
	const struct option_spec opts[] = {
		{ "workdir", 0, OPT_STRING, &workdir, "DIR", "where experiments live" },
		{ "timeout", 0, OPT_DOUBLE, OPT_NUMBER(&timeout, 0, 86400), "SEC", "how long to wait for the runner (60)" },
		{ NULL },
	};
	int r = options_parse_one(argc, argv, opts, "aah-runner stop <experiment>", "experiment",
				  &arg);
	if (r)
		return r > 0 ? 0 : 2;
	struct experiment e;
	if (cmd_open_experiment(workdir, arg, &e, NULL) < 0)
		return 1;
	long pid = experiment_runner_pid(&e);
	int rc = 0;
	if (!pid) {
		printf("experiment %s is not running\n", e.id);
	} else if (kill((pid_t)pid, SIGTERM) < 0 && errno != ESRCH) {
		error_errno("cannot signal runner %ld", pid);
		rc = 1;
	} else {
		double until = util_monotonic() + timeout;
		while (experiment_runner_pid(&e) && util_monotonic() < until) {
			struct timespec ts = { 0, 100 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		if (experiment_runner_pid(&e)) {
			error("runner %ld did not stop within %.0fs", pid, timeout);
			rc = 1;
		} else {
			printf("experiment %s stopped\n", e.id);
		}
	}
	experiment_release(&e);
	return rc;
}
