/* pool.c: the device pool's history as an experiment saw it, replayed from
 * the work directory's ledger (runner/pool/ledger.h): the devices each training
 * ran on over time (its `applied` lines; 0 from its `leave`, or from an
 * `alloc` that gives it nothing while it runs), each change with its kind,
 * and the text report's Pool section. */
#include "runner/report/report.h"
#include "fileio.h" /* fileio_exists */
#include "runner/pool/ledger.h" /* ledger_history */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[REPORT_POOL_NKINDS] = {
	[REPORT_POOL_START] = "start",     [REPORT_POOL_GROW] = "grow",
	[REPORT_POOL_SHRINK] = "shrink",   [REPORT_POOL_PREEMPT] = "preempt",
	[REPORT_POOL_RESUME] = "resume",   [REPORT_POOL_END] = "end",
};

const char *report_pool_kind_name(enum report_pool_kind kind)
{
	return kind_names[kind];
}

/* Replay state: every training of the ledger, whatever the window. */
struct replay {
	struct report_pool *p;
	const char *exp_id;
	unsigned *held;           /* (p->n) devices each holds now */
	int *stopped;             /* (p->n) preempted or left: its next devices resume it */
	size_t alloc, ev_alloc;
};

static size_t training_index(struct replay *r, const char *id)
{
	struct report_pool *p = r->p;
	for (size_t i = p->n; i-- > 0;)   /* the trainings in the pool now joined last */
		if (!strcmp(p->t[i].id, id))
			return i;
	if (p->n == r->alloc) {
		r->alloc = r->alloc ? 2 * r->alloc : 8;
		p->t = xrealloc(p->t, r->alloc * sizeof(*p->t));
		r->held = xrealloc(r->held, r->alloc * sizeof(*r->held));
		r->stopped = xrealloc(r->stopped, r->alloc * sizeof(*r->stopped));
	}
	struct report_pool_training *t = &p->t[p->n];
	memset(t, 0, sizeof(*t));
	t->id = xstrdup(id);
	size_t n = strlen(r->exp_id);
	t->mine = !strncmp(id, r->exp_id, n) && id[n] == '/';
	r->held[p->n] = 0;
	r->stopped[p->n] = 0;
	return p->n++;
}

/* Training i holds `devices` from ts on: a step, and the event it makes. */
static void hold(struct replay *r, size_t i, double ts, unsigned devices,
		 enum report_pool_kind kind)
{
	struct report_pool *p = r->p;
	struct report_pool_training *t = &p->t[i];
	t->steps = xrealloc(t->steps, (t->nsteps + 1) * sizeof(*t->steps));
	t->steps[t->nsteps++] = (struct report_pool_step){ ts, devices };
	if (p->nev == r->ev_alloc) {
		r->ev_alloc = r->ev_alloc ? 2 * r->ev_alloc : 16;
		p->ev = xrealloc(p->ev, r->ev_alloc * sizeof(*p->ev));
	}
	p->ev[p->nev++] = (struct report_pool_event){ ts, i, kind, r->held[i], devices };
	r->held[i] = devices;
}

static int history_line(const struct ledger *l, const char *event, double ts,
			const char *training, void *arg)
{
	struct replay *r = arg;
	r->p->devices = l->devices;
	int priorities = event && (!strcmp(event, "join") || !strcmp(event, "priority"));
	for (size_t k = 0; priorities && k < l->n; k++) {
		size_t i = training_index(r, l->t[k].id);   /* may move r->p->t */
		struct report_pool_training *t = &r->p->t[i];
		if (!t->priority_first)
			t->priority_first = l->t[k].priority;
		t->priority_last = l->t[k].priority;
	}
	if (!event)
		return 0;
	if (!strcmp(event, "applied") && training) {
		const struct ledger_training *lt = ledger_find(l, training);
		size_t i = training_index(r, training);
		unsigned was = r->held[i], now = lt ? lt->applied : 0;
		if (now == was)
			return 0;
		enum report_pool_kind kind = was ? (now > was ? REPORT_POOL_GROW : REPORT_POOL_SHRINK)
					   : r->stopped[i] ? REPORT_POOL_RESUME : REPORT_POOL_START;
		r->stopped[i] = 0;
		hold(r, i, ts, now, kind);
	} else if (!strcmp(event, "leave") && training) {
		size_t i = training_index(r, training);
		if (r->held[i])
			hold(r, i, ts, 0, REPORT_POOL_END);
		r->stopped[i] = 1;
	} else if (!strcmp(event, "alloc")) {
		for (size_t k = 0; k < l->n; k++) {
			size_t i = training_index(r, l->t[k].id);
			if (r->held[i] && !l->t[k].share) {
				hold(r, i, ts, 0, REPORT_POOL_PREEMPT);
				r->stopped[i] = 1;
			}
		}
	}
	return 0;
}

/* Devices training t holds at ts. */
static unsigned held_at(const struct report_pool_training *t, double ts)
{
	unsigned d = 0;
	for (size_t k = 0; k < t->nsteps && t->steps[k].ts <= ts; k++)
		d = t->steps[k].devices;
	return d;
}

/* Keep the trainings that held devices within from..to and the events
 * there (to: the experiment's last change, or INFINITY while a training of
 * it is still in the pool, `running`); a pool none of the experiment's
 * trainings held devices of is none. */
static void keep_window(struct report_pool *p, int running)
{
	double last = -INFINITY;
	int any = 0;
	for (size_t i = 0; i < p->n; i++) {
		if (!p->t[i].mine || !p->t[i].nsteps)
			continue;
		any = 1;
		last = fmax(last, p->t[i].steps[p->t[i].nsteps - 1].ts);
	}
	if (!any) {
		report_pool_release(p);
		return;
	}
	p->to = running ? INFINITY : last;
	size_t *map = xcalloc(p->n, sizeof(*map)), n = 0;
	for (size_t i = 0; i < p->n; i++) {
		struct report_pool_training *t = &p->t[i];
		int inside = t->nsteps && held_at(t, p->from) > 0;
		for (size_t k = 0; k < t->nsteps; k++)
			inside |= t->steps[k].ts >= p->from && t->steps[k].ts <= p->to;
		if (!inside) {
			free(t->id);
			free(t->steps);
			map[i] = (size_t)-1;
			continue;
		}
		map[i] = n;
		p->t[n++] = *t;
	}
	p->n = n;
	size_t m = 0;
	for (size_t e = 0; e < p->nev; e++) {
		struct report_pool_event ev = p->ev[e];
		if (ev.ts < p->from || ev.ts > p->to || map[ev.training] == (size_t)-1)
			continue;
		ev.training = map[ev.training];
		p->ev[m++] = ev;
	}
	p->nev = m;
	free(map);
}

int report_pool_load(struct report_pool *p, const char *workdir, const char *experiment_id,
		     double created)
{
	memset(p, 0, sizeof(*p));
	p->from = created;
	char *journal = xstrfmt("%s/pool/ledger.jsonl", workdir);
	int exists = fileio_exists(journal);
	free(journal);
	if (!exists)
		return 0;
	struct ledger l;
	struct replay r = { .p = p, .exp_id = experiment_id };
	ledger_init(&l, workdir);
	int rc = ledger_history(&l, history_line, &r), running = 0;
	for (size_t k = 0; k < l.n; k++) {
		size_t i = training_index(&r, l.t[k].id);
		running |= p->t[i].mine;
	}
	ledger_release(&l);
	if (rc == 0)
		keep_window(p, running);
	else
		report_pool_release(p);
	free(r.held);
	free(r.stopped);
	return rc;
}

void report_pool_release(struct report_pool *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->t[i].id);
		free(p->t[i].steps);
	}
	free(p->t);
	free(p->ev);
	memset(p, 0, sizeof(*p));
}

static void priority_text(struct strbuf *sb, const struct report_pool_training *t)
{
	strbuf_addf(sb, "priority %ld", t->priority_first);
	if (t->priority_last != t->priority_first)
		strbuf_addf(sb, " -> %ld", t->priority_last);
}

void report_pool_summary(struct strbuf *sb, const struct report_pool *p)
{
	if (!p->devices)
		return;
	strbuf_addf(sb, "  Pool:                  %u devices, %zu trainings (* this experiment; "
		    "held: devices of each, in this order)\n", p->devices, p->n);
	unsigned *held = xcalloc(p->n ? p->n : 1, sizeof(*held));
	for (size_t i = 0; i < p->n; i++) {
		held[i] = held_at(&p->t[i], p->from);
		strbuf_addf(sb, "    %c %s, ", p->t[i].mine ? '*' : ' ', p->t[i].id);
		priority_text(sb, &p->t[i]);
		strbuf_addch(sb, '\n');
	}
	strbuf_addf(sb, "    %+9.1f s  when the experiment was created%*s held ", 0.0,
		    p->n ? (int)strlen(p->t[0].id) - 12 : 0, "");
	for (size_t i = 0; i < p->n; i++)
		strbuf_addf(sb, "%s%u", i ? "/" : "", held[i]);
	strbuf_addch(sb, '\n');
	for (size_t e = 0; e < p->nev; e++) {
		const struct report_pool_event *ev = &p->ev[e];
		held[ev->training] = ev->to;
		strbuf_addf(sb, "    %+9.1f s  %-8s %c %s  %u -> %u  held ", ev->ts - p->from,
			    report_pool_kind_name(ev->kind), p->t[ev->training].mine ? '*' : ' ',
			    p->t[ev->training].id, ev->from, ev->to);
		for (size_t i = 0; i < p->n; i++)
			strbuf_addf(sb, "%s%u", i ? "/" : "", held[i]);
		strbuf_addch(sb, '\n');
	}
	free(held);
}
