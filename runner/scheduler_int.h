/* scheduler_int.h: what the scheduler's files share (scheduler.c, the loop
 * and the carrying out of lifecycle.h's actions; scheduler_launch.c, a
 * trial's launch into a free slot): the running experiment's state. */
#ifndef AAH_SCHEDULER_INT_H
#define AAH_SCHEDULER_INT_H

#include <cjson/cJSON.h>

#include "runner/backend/backend.h"  /* struct aah_backend_ctx, struct aah_job_status */
#include "runner/nni/nnitrial.h"      /* struct nnitrial_watch */
#include "runner/scheduler.h"
#include "runner/scheduler_tuner.h"  /* struct scheduler_tuner */

struct slot {
	unsigned trial;           /* 0 = free */
	char *gpus;               /* devices of this slot (in a pool: those the ledger granted), or NULL */
};

/* When the loop's next poll round is due (scheduler.c). A round looks at
 * every running trial: tens of ms with thousands. It is due the poll
 * interval after the last one began, or at once (`soon`) when a child
 * ended (SIGCHLD) or the loop journaled since it last waited (a wave of
 * ends and submissions under way); never before not_before, three times
 * what the last one spent looking (its settling not counted), so that
 * looking takes at most a quarter of the loop and the rest is left to
 * settling and submitting (docs/scale.md). */
struct sched_rounds {
	double interval;          /* seconds between two rounds when none is due soon */
	double last;              /* util_monotonic() when the last round began */
	double not_before;        /* util_monotonic() before which no round begins */
};

/* util_monotonic() at which the next round is due. */
double sched_round_due(const struct sched_rounds *r, int soon);

struct sched {
	const struct aah_config *cfg;
	struct experiment *e;
	const struct scheduler_opts *opts;
	struct aah_backend_ctx bctx;
	struct scheduler_tuner tuner; /* master placement: its tuner */
	struct nnitrial_watch nni;    /* what each NNI trial has reported so far */
	struct slot *slots;
	unsigned nslots;
	unsigned created;         /* trials created so far (highest seq) */
	int stop;                 /* stops requested (SIGTERM, SIGINT): the first cancels every
				   * job and waits for them to end, a second ends the wait */
	int stop_canceled;        /* the stop's cancels went out */
	int stop_said;            /* the wait for the canceled jobs was told */
	int timeup;               /* maxExecDuration reached */
	double last_progress;     /* util_monotonic() of the last progress line */
	const char *workdir;      /* the experiments' parent, absolute (the experiment's) */
	unsigned settled_this_session;
	unsigned wait_seq;        /* the trial whose proposal a free slot waits for, 0: none */
	double wait_since;        /* util_now() when it began waiting */
	unsigned char *waiting;   /* (nwaiting) by seq - 1: scheduler_progress_waiting's memory */
	size_t nwaiting;
	/* A poll round's ends are journaled unsynced, then made durable by
	 * one fdatasync, and only then told to the tuner (scheduler.c) */
	int round;                /* in a poll round */
	int unsynced;             /* it journaled a line unsynced */
	unsigned *ended;          /* (nended of aended) the round's settled trials */
	size_t nended, aended;
	double settling;          /* seconds of the round spent carrying out ends */
	int child_ended;          /* a SIGCHLD came since the last round: one is due */
	/* trial.fitExecDuration: the largest result_floor_seconds of the
	 * trials settled this session (0: none said one); no trial starts with
	 * less time left (scheduler_launch.c), and that was said once */
	double result_floor;
	int late_said;
};

/* Seconds of the experiment's budget spent so far, this session's included. */
double sched_elapsed(const struct sched *s);
/* The fields every trial event starts with (the caller journals them). */
cJSON *sched_trial_fields(unsigned seq, unsigned attempt);
/* Trial seq's job st ended: decide and carry it out (scheduler.c). */
int sched_settle(struct sched *s, unsigned seq, const struct aah_job_status *st);
/* Launch queued or new trials into the free slots (scheduler_launch.c). */
int sched_fill_slots(struct sched *s);

#endif
