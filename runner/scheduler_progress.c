/* scheduler_progress.c: the progress line (scheduler_progress.h). */
#include "runner/scheduler_progress.h"
#include "fileio.h"
#include "jsonfile.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static void fmt_duration(char *buf, size_t n, double sec)
{
	long t = (long)(sec + 0.5);
	if (t >= 3600)
		snprintf(buf, n, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

/* The trial a proposal was morphed from (arch.json meta.parent_trial), as
 * " from 000003", or "" when it has none (the start network, other tuners). */
static void parent_note(const struct experiment *e, unsigned seq, char *buf, size_t n)
{
	char *p = expdir_trial_file(e->dir, seq, EXPDIR_ARCH);
	cJSON *arch = NULL;
	buf[0] = '\0';
	int was_quiet = util_set_quiet(1);
	if (fileio_exists(p) && jsonfile_read(p, &arch) == 0) {
		const cJSON *meta = cJSON_GetObjectItemCaseSensitive(arch, "meta");
		const cJSON *pt = cJSON_GetObjectItemCaseSensitive(meta, "parent_trial");
		char id[EXPDIR_TRIAL_ID_SIZE];
		if (cJSON_IsNumber(pt) && pt->valuedouble >= 1 && pt->valuedouble <= EXPDIR_TRIAL_MAX)
			snprintf(buf, n, " from %s", expdir_trial_id((unsigned)pt->valuedouble, id));
	}
	util_set_quiet(was_quiet);
	cJSON_Delete(arch);
	free(p);
}

void scheduler_progress_line(const struct aah_config *cfg, const struct experiment *e,
			     const struct trial_rec *t, double elapsed)
{
	unsigned done = 0, running = 0;
	for (size_t i = 0; i < e->ntrials; i++) {
		if (expdir_state_final(e->trials[i].state))
			done++;
		else if (e->trials[i].state == TRIAL_RUNNING)
			running++;
	}
	char el[32], budget[32] = "unlimited";
	fmt_duration(el, sizeof(el), elapsed);
	if (cfg->max_exec_duration > 0)
		fmt_duration(budget, sizeof(budget), cfg->max_exec_duration);
	double best = experiment_best_accuracy(e);
	char acc[32] = "-", bestacc[32] = "-";
	if (t && !isnan(t->best_acc))
		snprintf(acc, sizeof(acc), "%.4f", t->best_acc);
	if (!isnan(best))
		snprintf(bestacc, sizeof(bestacc), "%.4f", best);
	char id[EXPDIR_TRIAL_ID_SIZE], parent[32];
	if (t) {
		parent_note(e, t->seq, parent, sizeof(parent));
		printf("trial %s %-13s acc %s%s", expdir_trial_id(t->seq, id),
		       expdir_state_name(t->state), acc, parent);
	} else
		printf("%-31s", "progress");
	printf(" | done %u/%ld, running %u | best %s | %s of %s\n", done, cfg->max_trial_num,
	       running, bestacc, el, budget);
	fflush(stdout);
}

void scheduler_progress_waiting(const struct experiment *e, unsigned seq,
				const struct aah_job_status *st, unsigned char *known)
{
	int held = st->state == AAH_JOB_PENDING && st->reason[0];
	if (!held && *known == PROGRESS_WAITING_NONE)
		return;
	if (expdir_waiting_set(e->dir, seq, held ? st->reason : NULL) < 0)
		warning("trial %u: status cannot tell that it waits: %s", seq, util_last_error());
	else
		*known = held ? PROGRESS_WAITING_WRITTEN : PROGRESS_WAITING_NONE;
}
