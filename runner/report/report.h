/* report.h: an experiment as the report sees it (loaded from the experiment
 * directory), AIPerf's score over time, the validity rules, and the outputs
 * built from them (terminal summary, results.json, report.html, Prometheus
 * text). */
#ifndef AAH_REPORT_H
#define AAH_REPORT_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "runner/store/expdir.h" /* enum trial_state, struct expdir_epoch */
#include "strbuf.h"

struct report_trial {
	char id[32];                    /* expdir_trial_id(seq) */
	unsigned seq;
	char place[EXPDIR_PLACE_SIZE];  /* its last launch's place (expdir.h); "": the trial dir */
	enum trial_state state;         /* TRIAL_UNKNOWN: a directory the journal does not name */
	int slot;                       /* from trial_submitted; -1 unknown */
	double submitted, finished;     /* journal timestamps; 0 unknown */
	double started;                 /* first trial_submitted (it has its model); 0 never */
	double img_fwd, img_bwd;        /* FLOPs per image (the journal, else arch.json); 0: no arch */
	int classes;                    /* num_classes, from the same; 0 without an arch */
	struct expdir_epoch *epochs;    /* (nepochs), metrics.jsonl order */
	size_t nepochs;
	double best_acc;                /* max val_acc over epochs, or result.json's */
	double result_acc;              /* an NNI trial's FINAL result: the score counts it as
					 * known at its last epoch's end (NaN: none) */
	double flops;                   /* last cumulative FLOPs seen */
	char precision[16];             /* result.json "precision"; "" unknown */
	char backend[16];               /* result.json "backend"; "" unknown */
	char device[96];                /* result.json "device_names"' first; "" none */
	char inherited_from[16];        /* result.json: the parent whose weights it started from */
	int on_gpu;                     /* result.json devices name a GPU */
	char reason[160];               /* journal reason or result stop_reason */
};

/* One resource-monitor sample (device_info/<host>.jsonl lines, aah-monitor/1). */
struct report_util {
	double ts;
	double cpu;     /* mean CPU busy percent over cores */
	double mem;     /* memory used percent */
	double gpu;     /* mean GPU utilisation percent; -1 when no GPU data */
};

/* The device pool as an experiment saw it (runner/report/pool.c, from
 * <workdir>/pool/ledger.jsonl): every training that held devices of the
 * pool during the experiment's life, what it held over time, and each
 * change, by kind. */
enum report_pool_kind {
	REPORT_POOL_START,      /* first devices */
	REPORT_POOL_GROW,
	REPORT_POOL_SHRINK,
	REPORT_POOL_PREEMPT,    /* its share went to 0: it stops at a step boundary */
	REPORT_POOL_RESUME,     /* devices again after a preemption or a retry */
	REPORT_POOL_END,        /* it left the pool (finished, failed, stopped) */
	REPORT_POOL_NKINDS
};

struct report_pool_step {
	double ts;
	unsigned devices;       /* held from ts on */
};

struct report_pool_training {
	char *id;                       /* "<experiment>/<trial>" */
	int mine;                       /* a training of the reported experiment */
	long priority_first, priority_last;
	struct report_pool_step *steps; /* (nsteps), ts order */
	size_t nsteps;
};

struct report_pool_event {
	double ts;
	size_t training;                /* index into report_pool.t */
	enum report_pool_kind kind;
	unsigned from, to;              /* devices held before and after */
};

struct report_pool {
	unsigned devices;               /* the pool's size; 0: the experiment used none */
	double from, to;                /* the experiment's life; to: INFINITY while it is in the pool */
	struct report_pool_training *t; /* (n), in the order they joined the pool */
	size_t n;
	struct report_pool_event *ev;   /* (nev), within from..to, ledger order */
	size_t nev;
};

/* The pool of workdir as experiment_id (created at `created`) saw it; no
 * ledger, or no training of the experiment in it, leaves p->devices 0. */
int report_pool_load(struct report_pool *p, const char *workdir, const char *experiment_id,
		     double created);
void report_pool_release(struct report_pool *p);
const char *report_pool_kind_name(enum report_pool_kind kind);
/* The text report's Pool section (nothing without a pool). */
void report_pool_summary(struct strbuf *sb, const struct report_pool *p);

struct report_exp {
	char *dir;                      /* absolute experiment directory */
	char *workdir;                  /* the work directory holding it (expdir_workdir) */
	char id[32];
	char name[128];
	double created;                 /* experiment.json "created" */
	double start;                   /* AIPerf's clock: the earliest trial start, else created */
	struct report_trial *trials;    /* (ntrials), sorted by id */
	size_t ntrials;
	struct report_util *util;       /* (nutil), sorted by ts */
	size_t nutil;
	long best;                      /* index of the most accurate trial; -1 none */
	cJSON *best_arch;               /* that trial's arch.json, or NULL; owned */
	int done;                       /* journal has experiment_done */
	struct report_pool pool;        /* devices 0: no device pool */
};

/* Idle fraction of each slot from the experiment's creation to its last
 * trial_finished (running trials count as busy up to then): *n slots from
 * 0, the fractions malloc'd into *idle (NULL when no trial has a slot). */
void report_slot_idle(const struct report_exp *exp, double **idle, int *n);

struct report_options {
	double sample_first_h;   /* first sample point, hours (AIPerf 0.2) */
	double sample_step_h;    /* distance between sample points (AIPerf 0.1) */
	double min_duration_s;   /* AIPerf: at least 1 hour */
	double min_accuracy;     /* AIPerf: best accuracy above 70% */
	const char *min_precision; /* AIPerf: not below fp16 */
	double now;              /* 0: the clock; where running bars end */
	const char *rules;       /* report.rules: "readme" (NULL) or "report.py" */
	const char *charge;      /* report.epochCharge: "auto" (NULL), "aiperf", "images" */
	int gpu_fp32_ok;         /* AIPerf trains GPUs in mixed precision: a GPU trial in
				  * fp32 (or wider) fails the run unless this is set */
};
/* AIPerf's rules: the defaults of config.yml's report: keys, whose one
 * place is their key table (runner/config/config_keys.c); rules and charge
 * NULL (readme, auto). */
struct report_options report_options_aiperf(void);
#define REPORT_OPTIONS_INIT report_options_aiperf()
struct aah_config_report;
/* Fill what is still unset in opt (NAN numbers, NULL names) from a
 * config's report: section. */
void report_options_fill(struct report_options *opt, const struct aah_config_report *rep);

/* AIPerf's score.py charges every epoch of a trial as ImageNet's:
 * train_per_image x 1,280,000 + eval_per_image x 50,000. */
#define REPORT_AIPERF_TRAIN_IMAGES 1280000.0
#define REPORT_AIPERF_EVAL_IMAGES 50000.0

struct report_sample {
	double hours;       /* the sample point, hours after the start */
	double elapsed_s;   /* last epoch before the point minus the start */
	double flops;       /* FLOPs of every epoch finished before the point, as charged */
	double flops_images; /* the same, by the images the trainer counted */
	double score;       /* flops / elapsed_s, FLOPS */
	double regulated;   /* score * |ln(1 - best_acc)| */
	double best_acc;
	double error;       /* 100 - 100 * best_acc */
};

#define REPORT_MAX_RULES 8
/* Most sample points a report computes (a 100-day run at 0.024 h, about
 * 35 MB of report.html); a step that makes more is refused, not cut. */
#define REPORT_MAX_SAMPLES 100000

struct report_score {
	struct report_sample *samples;  /* (nsamples) */
	size_t nsamples;
	struct report_sample final;     /* last sample, or at the last epoch */
	int final_from_samples;         /* 0: no sample point was reached */
	double duration_s;              /* last epoch end minus the start */
	size_t nepochs;
	int valid;
	int no_score;                   /* epochs, none charged any FLOPs: trials that count none
					 * and have no arch (NNI trial code): accuracies, no Score */
	const char *rules;              /* the rule set used: "readme" or "report.py" */
	const char *charge;             /* how epochs were charged: "aiperf" or "images" */
	char failed[REPORT_MAX_RULES][160];  /* each failed rule, in words */
	size_t nfailed;
};

/* Load the experiment directory `dir`. Missing trial files are not errors (a
 * running experiment has them later); unreadable or invalid ones are. */
int report_load(const char *dir, struct report_exp *exp);
void report_exp_release(struct report_exp *exp);

/* Compute the samples, the final values and the validity. */
int report_score(const struct report_exp *exp, const struct report_options *opt,
		 struct report_score *out);
void report_score_release(struct report_score *s);

/* Rank of a precision name (higher is wider); -1 for an unknown name. */
int report_precision_rank(const char *name);

/* Outputs. Each appends to sb. */
void report_summary(struct strbuf *sb, const struct report_exp *exp,
		    const struct report_score *sc);
cJSON *report_results_json(const struct report_exp *exp, const struct report_options *opt,
			   const struct report_score *sc);
void report_html(struct strbuf *sb, const struct report_exp *exp,
		 const struct report_options *opt, const struct report_score *sc);
void report_prometheus(struct strbuf *sb, const struct report_exp *exp,
		       const struct report_score *sc);
/* report.html's tables (html_table.c): #trials, #arch (the best trial's
 * layers), #samples (the Score's sample points). */
void report_html_trials(struct strbuf *sb, const struct report_exp *exp);
void report_html_arch(struct strbuf *sb, const struct report_exp *exp);
void report_html_samples(struct strbuf *sb, const struct report_score *sc);

/* Why a run with epochs has no Score (sc->no_score), in words. */
extern const char report_no_score[];

/* The rule set and the epoch charge of sc, in words; the clock line of the
 * summary (AIPerf's start against the creation). */
const char *report_rules_name(const struct report_score *sc);
const char *report_charge_name(const struct report_score *sc);
void report_clock_line(struct strbuf *sb, const struct report_exp *exp);

/* "12.3 GFLOPS"-style value with an SI prefix. */
void report_si(struct strbuf *sb, double v, const char *unit);

#endif
