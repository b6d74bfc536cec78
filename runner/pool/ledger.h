/* ledger.h: the device pool's ledger, shared by every experiment (and every
 * runner process) of a work directory: <workdir>/pool/ledger.jsonl, an
 * append-only journal (aah-ledger/1) changed only under an flock of
 * <workdir>/pool/ledger.lock. Each change (a training joins, leaves, or
 * changes priority) is journaled with the allocation it causes before any
 * runner acts on it; a runner journals when a training runs with its new
 * share. A runner killed at any instant leaves the lock free and the
 * journal whole (a torn last line is cut off by the next writer): the next
 * reader replays it to the same shares. */
#ifndef AAH_LEDGER_H
#define AAH_LEDGER_H

#include <stddef.h>

struct ledger_training {
	char *id;                 /* "<experiment>/<trial>" */
	long priority;            /* its own, or an override set by `priority` */
	unsigned min, max;
	unsigned long arrival;    /* journal seq of its join */
	unsigned share;           /* devices of the last journaled allocation */
	unsigned applied;         /* devices it last ran with; 0 = not started */
	unsigned *ids;            /* (applied) which of the pool's devices, 0-based */
};

struct ledger_override {
	char *id;                 /* an experiment id, or a training id */
	long priority;
};

struct ledger {
	char *journal;            /* <workdir>/pool/ledger.jsonl */
	char *lockpath;           /* <workdir>/pool/ledger.lock */
	unsigned devices;         /* the pool, fixed by its first user; 0 = none yet */
	struct ledger_training *t;
	size_t n;
	struct ledger_override *prio;
	size_t nprio;
	unsigned long next_seq;
	unsigned long allocations; /* alloc events replayed */
};

#define LEDGER_PRIORITY_MAX 1000000

/* Point l at the ledger of workdir (nothing is read or created yet). */
void ledger_init(struct ledger *l, const char *workdir);
void ledger_release(struct ledger *l);

/* Replay the journal (under the lock) into l. A missing journal is empty. */
int ledger_read(struct ledger *l);

/* Training id joins a pool of `devices` (which must match the pool's size
 * once fixed) with its priority (an override in the ledger wins) and
 * min/max; the shares are recomputed and journaled. Joining again is a
 * no-op. */
int ledger_join(struct ledger *l, unsigned devices, const char *id, long priority,
		unsigned min, unsigned max);
/* Training id leaves; the others' shares are recomputed. */
int ledger_leave(struct ledger *l, const char *id);
/* Set the priority of a training, or of every training (present and to
 * come) of an experiment; the shares are recomputed. Returns the number of
 * trainings it changed now. */
int ledger_set_priority(struct ledger *l, const char *id, long priority);
/* Training id now runs with `devices` (the lowest ids nobody else holds,
 * its own first). */
int ledger_applied(struct ledger *l, const char *id, unsigned devices);

/* Devices move at the shrinker's step boundary: a training may run on no
 * more than the pool less what the others hold (their last `applied`). */
unsigned ledger_free_for(const struct ledger *l, const char *id);
/* Before training id is (re)launched: under the lock, it takes its share
 * when that many devices are free for it, else it keeps what it holds (or
 * waits with 0); a share of 0 gives its devices back. What it gets is
 * journaled (`applied`, with the device ids) when it changed. *got: the
 * devices it may run on now; 0 = it waits. */
int ledger_claim(struct ledger *l, const char *id, unsigned *got);
/* Which devices training id runs on, chosen by the caller under the lock:
 * pick sees the ledger as it is now, taken[d] set for each device another
 * training holds, and writes the t->applied ids into ids (its own may stay
 * its own). It returns 0 (placed), 1 (no fit now: nothing changes) or -1.
 * Ids other than those it holds are journaled as its `applied` ids. *ids
 * (the caller frees it) and *n get them. A training that holds no
 * devices gets 0 and *n = 0. */
typedef int ledger_pick_fn(const struct ledger *l, const struct ledger_training *t,
			   const char *taken, unsigned *ids, void *arg);
int ledger_place(struct ledger *l, const char *id, ledger_pick_fn *pick, void *arg,
		 unsigned **ids, unsigned *n);
/* The device ids t holds, as "0-3,6" ("-" for none). The caller frees it. */
char *ledger_ids_text(const struct ledger_training *t);

/* Replay the journal (under the lock) one line at a time: after each line
 * is applied, fn sees l as that line leaves it, with the line's event
 * ("pool", "join", ..., NULL for a line this version skips), ts and
 * training (NULL when the line names none). What the report draws the
 * pool's history from. A non-zero return from fn stops the replay and is
 * returned. */
typedef int ledger_history_fn(const struct ledger *l, const char *event, double ts,
			      const char *training, void *arg);
int ledger_history(struct ledger *l, ledger_history_fn *fn, void *arg);

/* The training of that id in l as last read, or NULL. */
const struct ledger_training *ledger_find(const struct ledger *l, const char *id);

#endif
