/* ledger.c: the device pool's journal: replay, locked appends, shares. */
#include "runner/pool/ledger.h"
#include "fileio.h"
#include "jsonfile.h"
#include "runner/pool/devpool.h"
#include "strbuf.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void ledger_init(struct ledger *l, const char *workdir)
{
	memset(l, 0, sizeof(*l));
	l->journal = xstrfmt("%s/pool/ledger.jsonl", workdir);
	l->lockpath = xstrfmt("%s/pool/ledger.lock", workdir);
}

static void clear_state(struct ledger *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->t[i].id);
		free(l->t[i].ids);
	}
	for (size_t i = 0; i < l->nprio; i++)
		free(l->prio[i].id);
	free(l->t);
	free(l->prio);
	l->t = NULL;
	l->prio = NULL;
	l->n = l->nprio = 0;
	l->devices = 0;
	l->next_seq = 0;
	l->allocations = 0;
}

void ledger_release(struct ledger *l)
{
	clear_state(l);
	free(l->journal);
	free(l->lockpath);
	memset(l, 0, sizeof(*l));
}

static struct ledger_training *find(const struct ledger *l, const char *id)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->t[i].id, id))
			return &l->t[i];
	return NULL;
}

const struct ledger_training *ledger_find(const struct ledger *l, const char *id)
{
	return find(l, id);
}

/* Does override id cover training tid: the same id, or its experiment. */
static int covers(const char *id, const char *tid)
{
	size_t n = strlen(id);
	return !strncmp(id, tid, n) && (tid[n] == '\0' || tid[n] == '/');
}

/* The override of training tid, the most specific one (its own over its
 * experiment's), or 0. */
static long override_for(const struct ledger *l, const char *tid)
{
	long p = 0;
	size_t best = 0;
	for (size_t i = 0; i < l->nprio; i++) {
		size_t n = strlen(l->prio[i].id);
		if (covers(l->prio[i].id, tid) && n >= best) {
			p = l->prio[i].priority;
			best = n;
		}
	}
	return p;
}

/* ---- devices held ------------------------------------------------------------ */

unsigned ledger_free_for(const struct ledger *l, const char *id)
{
	unsigned held = 0;
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->t[i].id, id))
			held += l->t[i].applied;
	return held < l->devices ? l->devices - held : 0;
}

/* Which devices t runs n on: those of its own it holds first, then the
 * lowest nobody else holds. ids in a line (NULL: none, or an older
 * version's line) are taken as they are when each is in the pool and free
 * for t. */
static void hold_ids(struct ledger *l, struct ledger_training *t, unsigned n, const cJSON *ids)
{
	unsigned devices = l->devices > n ? l->devices : n;
	char *taken = xcalloc(devices, 1);
	unsigned *pick = xcalloc(n ? n : 1, sizeof(*pick)), k = 0;
	for (size_t i = 0; i < l->n; i++)
		for (unsigned j = 0; strcmp(l->t[i].id, t->id) && j < l->t[i].applied; j++)
			if (l->t[i].ids[j] < devices)
				taken[l->t[i].ids[j]] = 1;
	const cJSON *it;
	int given = cJSON_GetArraySize(ids) == (int)n;
	const cJSON *from = given ? ids : NULL;
	cJSON_ArrayForEach(it, from) {
		double v = cJSON_IsNumber(it) ? it->valuedouble : -1;
		given &= v >= 0 && v < devices && !taken[(unsigned)v];
		if (given)
			taken[pick[k++] = (unsigned)v] = 1;
	}
	if (!given) {   /* recomputed: its own first, then the lowest free */
		for (unsigned j = 0; j < k; j++)
			taken[pick[j]] = 0;
		k = 0;
		for (unsigned j = 0; j < t->applied && k < n; j++)
			if (t->ids[j] < devices && !taken[t->ids[j]])
				taken[pick[k++] = t->ids[j]] = 1;
		for (unsigned d = 0; d < devices && k < n; d++)
			if (!taken[d])
				taken[pick[k++] = d] = 1;
		/* A line of a runner that ran it on devices others held (before
		 * devices moved at step boundaries): what it ran on, shared. */
		for (unsigned d = 0; k < n; d = (d + 1) % devices)
			pick[k++] = d;
	}
	free(taken);
	free(t->ids);
	t->ids = pick;
	t->applied = n;
}

char *ledger_ids_text(const struct ledger_training *t)
{
	struct strbuf sb = STRBUF_INIT;
	unsigned top = 0;
	for (unsigned j = 0; j < t->applied; j++)
		top = t->ids[j] + 1 > top ? t->ids[j] + 1 : top;
	char *have = xcalloc(top ? top : 1, 1);
	for (unsigned j = 0; j < t->applied; j++)
		have[t->ids[j]] = 1;
	for (unsigned d = 0; d < top; d++) {
		if (!have[d])
			continue;
		unsigned e = d;
		while (e + 1 < top && have[e + 1])
			e++;
		strbuf_addf(&sb, "%s%u", sb.len ? "," : "", d);
		if (e > d)
			strbuf_addf(&sb, "-%u", e);
		d = e;
	}
	free(have);
	if (!sb.len)
		strbuf_addstr(&sb, "-");
	return strbuf_detach(&sb, NULL);
}

/* ---- replay ---------------------------------------------------------------- */

/* One line's event applied to the state, one function per event; a line
 * that lacks what its event needs changes nothing. */
static void ev_pool(struct ledger *l, const cJSON *line, const char *id)
{
	double v;
	(void)id;
	if (!json_get_number("ledger", line, "devices", 0, &v))
		l->devices = (unsigned)v;
}

static void ev_join(struct ledger *l, const cJSON *line, const char *id)
{
	if (find(l, id))
		return;
	long p = 1, mn = 1, mx = 1;
	json_get_int(l->journal, line, "priority", 0, 1, LEDGER_PRIORITY_MAX, &p);
	json_get_int(l->journal, line, "min", 0, 1, 1 << 20, &mn);
	json_get_int(l->journal, line, "max", 0, 1, 1 << 20, &mx);
	l->t = xrealloc(l->t, (l->n + 1) * sizeof(*l->t));
	struct ledger_training *t = &l->t[l->n++];
	memset(t, 0, sizeof(*t));
	t->id = xstrdup(id);
	long o = override_for(l, id);
	t->priority = o ? o : p;
	t->min = (unsigned)mn;
	t->max = (unsigned)(mx < mn ? mn : mx);
	t->arrival = l->next_seq;
}

static void ev_leave(struct ledger *l, const cJSON *line, const char *id)
{
	struct ledger_training *t = find(l, id);
	(void)line;
	if (t) {
		free(t->id);
		free(t->ids);
		*t = l->t[--l->n];
	}
}

static void ev_priority(struct ledger *l, const cJSON *line, const char *id)
{
	const char *target = NULL;
	long p = 0;
	(void)id;
	if (json_get_string(l->journal, line, "target", 0, &target) ||
	    json_get_int(l->journal, line, "priority", 0, 1, LEDGER_PRIORITY_MAX, &p))
		return;
	l->prio = xrealloc(l->prio, (l->nprio + 1) * sizeof(*l->prio));
	l->prio[l->nprio].id = xstrdup(target);
	l->prio[l->nprio++].priority = p;
	for (size_t i = 0; i < l->n; i++)
		if (covers(target, l->t[i].id))
			l->t[i].priority = override_for(l, l->t[i].id);
}

static void ev_alloc(struct ledger *l, const cJSON *line, const char *id)
{
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(line, "shares"), *it;
	(void)id;
	for (size_t i = 0; i < l->n; i++)
		l->t[i].share = 0;
	cJSON_ArrayForEach(it, sh) {
		struct ledger_training *t = find(l, it->string);
		if (t && cJSON_IsNumber(it))
			t->share = (unsigned)it->valuedouble;
	}
	l->allocations++;
}

static void ev_applied(struct ledger *l, const cJSON *line, const char *id)
{
	double v;
	if (json_get_number("ledger", line, "devices", 0, &v))
		return;
	struct ledger_training *t = find(l, id);
	if (t)
		hold_ids(l, t, (unsigned)v, cJSON_GetObjectItemCaseSensitive(line, "ids"));
}

/* The events of aah-ledger/1 (docs/pool.md), like expdir.c's table. */
static const struct {
	const char *name;
	int needs_training;       /* the line must name its "training" */
	void (*apply)(struct ledger *l, const cJSON *line, const char *id);
} events[] = {
	{ "pool", 0, ev_pool },
	{ "join", 1, ev_join },
	{ "leave", 1, ev_leave },
	{ "priority", 0, ev_priority },
	{ "alloc", 0, ev_alloc },
	{ "applied", 1, ev_applied },
};

static int apply_line(const cJSON *line, void *arg)
{
	struct ledger *l = arg;
	const char *ev = NULL, *id = NULL;
	double seq = -1;
	int was_quiet = util_set_quiet(1);
	json_get_string("ledger", line, "event", 0, &ev);
	json_get_string("ledger", line, "training", 1, &id);
	json_get_number("ledger", line, "seq", 1, &seq);
	util_set_quiet(was_quiet);
	if (seq >= 0)
		l->next_seq = (unsigned long)seq + 1;
	if (!ev)
		return 0;     /* what a later version adds, this one skips */
	for (size_t i = 0; i < ARRAY_SIZE(events); i++)
		if (!strcmp(ev, events[i].name)) {
			if (id || !events[i].needs_training)
				events[i].apply(l, line, id);
			break;
		}
	return 0;
}

static int replay(struct ledger *l)
{
	clear_state(l);
	if (!fileio_exists(l->journal))
		return 0;
	return jsonfile_read_lines(l->journal, apply_line, l);
}

/* A writer killed mid-line left a torn tail: cut it before appending, so
 * the next line starts on a line of its own. */
static int cut_torn_tail(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : error_errno("cannot open '%s'", path);
	struct stat st;
	off_t end = fstat(fd, &st) == 0 ? st.st_size : 0;
	char c = '\n';
	while (end > 0 && pread(fd, &c, 1, end - 1) == 1 && c != '\n')
		end--;
	int r = end < st.st_size && ftruncate(fd, end) < 0 ?
			error_errno("cannot cut the torn last line of '%s'", path) : 0;
	close(fd);
	return r;
}

static int lock(struct ledger *l)
{
	char *dir = xstrndup(l->journal, strrchr(l->journal, '/') - l->journal);
	int r = fileio_mkdir_p(dir, 0755);
	free(dir);
	if (r < 0)
		return -1;
	int fd = fileio_lock(l->lockpath);
	if (fd < 0)
		return -1;
	if (cut_torn_tail(l->journal) < 0 || replay(l) < 0) {
		fileio_unlock(fd);
		return -1;
	}
	return fd;
}

int ledger_read(struct ledger *l)
{
	int fd = lock(l);
	if (fd < 0)
		return -1;
	fileio_unlock(fd);
	return 0;
}

struct history {
	struct ledger *l;
	ledger_history_fn *fn;
	void *arg;
};

static int history_line(const cJSON *line, void *arg)
{
	struct history *h = arg;
	const char *ev = NULL, *id = NULL;
	double ts = 0;
	apply_line(line, h->l);
	int was_quiet = util_set_quiet(1);
	json_get_string("ledger", line, "event", 1, &ev);
	json_get_string("ledger", line, "training", 1, &id);
	json_get_number("ledger", line, "ts", 1, &ts);
	util_set_quiet(was_quiet);
	return h->fn(h->l, ev, ts, id, h->arg);
}

int ledger_history(struct ledger *l, ledger_history_fn *fn, void *arg)
{
	int fd = lock(l);
	if (fd < 0)
		return -1;
	struct history h = { l, fn, arg };
	clear_state(l);
	int r = fileio_exists(l->journal) ? jsonfile_read_lines(l->journal, history_line, &h) : 0;
	fileio_unlock(fd);
	return r;
}

/* Append one event (fields consumed) and apply it as replay would. */
static int append(struct ledger *l, const char *event, cJSON *f)
{
	cJSON *line = cJSON_CreateObject();
	cJSON_AddStringToObject(line, "format", "aah-ledger/1");
	cJSON_AddNumberToObject(line, "seq", (double)l->next_seq);
	cJSON_AddNumberToObject(line, "ts", util_now());
	cJSON_AddStringToObject(line, "event", event);
	cJSON *it = f ? f->child : NULL;
	while (it) {
		cJSON *next = it->next;
		cJSON_AddItemToObject(line, it->string, cJSON_DetachItemViaPointer(f, it));
		it = next;
	}
	cJSON_Delete(f);
	int r = jsonfile_append(l->journal, line);
	if (r == 0)
		apply_line(line, l);
	cJSON_Delete(line);
	return r;
}

/* Recompute the shares; journal an allocation when they changed. */
static int reallocate(struct ledger *l)
{
	if (!l->devices)
		return 0;
	struct devpool_training *d = xcalloc(l->n ? l->n : 1, sizeof(*d));
	int changed = l->allocations == 0;
	for (size_t i = 0; i < l->n; i++) {
		d[i].priority = l->t[i].priority;
		d[i].min = l->t[i].min <= l->devices ? l->t[i].min : l->devices + 1;
		d[i].max = l->t[i].max <= l->devices ? l->t[i].max : l->devices;
		if (d[i].max < d[i].min)
			d[i].max = d[i].min;
		d[i].arrival = l->t[i].arrival;
	}
	devpool_share(d, l->n, l->devices);
	cJSON *shares = cJSON_CreateObject();
	for (size_t i = 0; i < l->n; i++) {
		changed |= d[i].share != l->t[i].share;
		cJSON_AddNumberToObject(shares, l->t[i].id, d[i].share);
	}
	free(d);
	if (!changed) {
		cJSON_Delete(shares);
		return 0;
	}
	cJSON *f = cJSON_CreateObject();
	cJSON_AddNumberToObject(f, "devices", l->devices);
	cJSON_AddItemToObject(f, "shares", shares);
	return append(l, "alloc", f);
}

static cJSON *training_fields(const char *id)
{
	cJSON *f = cJSON_CreateObject();
	cJSON_AddStringToObject(f, "training", id);
	return f;
}

int ledger_join(struct ledger *l, unsigned devices, const char *id, long priority,
		unsigned min, unsigned max)
{
	if (!devices || !min || priority < 1 || priority > LEDGER_PRIORITY_MAX)
		BUG("ledger_join: devices %u, min %u, priority %ld", devices, min, priority);
	int fd = lock(l);
	if (fd < 0)
		return -1;
	int r = 0;
	if (l->devices && l->devices != devices) {
		r = error("the device pool of '%s' has %u devices, this experiment says %u "
			  "(pool.devices must be the same for every experiment of a work directory)",
			  l->journal, l->devices, devices);
	} else {
		if (!l->devices) {
			cJSON *f = cJSON_CreateObject();
			cJSON_AddNumberToObject(f, "devices", devices);
			r = append(l, "pool", f);
		}
		if (r == 0 && !find(l, id)) {
			cJSON *f = training_fields(id);
			cJSON_AddNumberToObject(f, "priority", priority);
			cJSON_AddNumberToObject(f, "min", min);
			cJSON_AddNumberToObject(f, "max", max < min ? min : max);
			r = append(l, "join", f);
		}
		if (r == 0)
			r = reallocate(l);
	}
	fileio_unlock(fd);
	return r;
}

int ledger_leave(struct ledger *l, const char *id)
{
	int fd = lock(l);
	if (fd < 0)
		return -1;
	int r = 0;
	if (find(l, id)) {
		r = append(l, "leave", training_fields(id));
		if (r == 0)
			r = reallocate(l);
	}
	fileio_unlock(fd);
	return r;
}

int ledger_set_priority(struct ledger *l, const char *id, long priority)
{
	if (priority < 1 || priority > LEDGER_PRIORITY_MAX)
		return error("priority %ld is out of range (1 to %d)", priority, LEDGER_PRIORITY_MAX);
	int fd = lock(l);
	if (fd < 0)
		return -1;
	cJSON *f = cJSON_CreateObject();
	cJSON_AddStringToObject(f, "target", id);
	cJSON_AddNumberToObject(f, "priority", priority);
	int r = append(l, "priority", f);
	if (r == 0)
		r = reallocate(l);
	int changed = 0;
	for (size_t i = 0; r == 0 && i < l->n; i++)
		changed += covers(id, l->t[i].id);
	fileio_unlock(fd);
	return r < 0 ? -1 : changed;
}

/* Journal that t runs on n devices, with their ids. */
static int append_applied(struct ledger *l, struct ledger_training *t, unsigned n)
{
	struct ledger_training next = { .id = t->id, .applied = t->applied };
	next.ids = xcalloc(t->applied ? t->applied : 1, sizeof(*next.ids));
	if (t->applied)    /* t->ids is NULL until the training holds a device */
		memcpy(next.ids, t->ids, t->applied * sizeof(*next.ids));
	hold_ids(l, &next, n, NULL);
	cJSON *f = training_fields(t->id);
	cJSON_AddNumberToObject(f, "devices", n);
	cJSON *ids = cJSON_AddArrayToObject(f, "ids");
	for (unsigned j = 0; j < next.applied; j++)
		cJSON_AddItemToArray(ids, cJSON_CreateNumber(next.ids[j]));
	free(next.ids);
	return append(l, "applied", f);
}

int ledger_applied(struct ledger *l, const char *id, unsigned devices)
{
	int fd = lock(l);
	if (fd < 0)
		return -1;
	struct ledger_training *t = find(l, id);
	int r = t ? append_applied(l, t, devices) : 0;
	fileio_unlock(fd);
	return r;
}

int ledger_claim(struct ledger *l, const char *id, unsigned *got)
{
	*got = 0;
	int fd = lock(l);
	if (fd < 0)
		return -1;
	struct ledger_training *t = find(l, id);
	int r = 0;
	if (t) {
		/* Giving back needs nothing; a larger share waits until the
		 * others hold no more than the rest, and meanwhile it runs on
		 * what it has (0: it waits). */
		unsigned n = t->share;
		if (n > t->applied && n > ledger_free_for(l, id))
			n = t->applied;
		if (n != t->applied)
			r = append_applied(l, t, n);
		*got = r == 0 ? n : 0;
	}
	fileio_unlock(fd);
	return r;
}

int ledger_place(struct ledger *l, const char *id, ledger_pick_fn *pick, void *arg,
		 unsigned **ids, unsigned *n)
{
	*ids = NULL;
	*n = 0;
	int fd = lock(l);
	if (fd < 0)
		return -1;
	struct ledger_training *t = find(l, id);
	int r = 0;
	if (t && t->applied) {
		char *taken = xcalloc(l->devices ? l->devices : 1, 1);
		for (size_t i = 0; i < l->n; i++)
			for (unsigned j = 0; &l->t[i] != t && j < l->t[i].applied; j++)
				if (l->t[i].ids[j] < l->devices)
					taken[l->t[i].ids[j]] = 1;
		unsigned *pick_ids = xcalloc(t->applied, sizeof(*pick_ids)), count = t->applied;
		r = pick(l, t, taken, pick_ids, arg);
		for (unsigned j = 0; r == 0 && j < count; j++)
			if (pick_ids[j] >= l->devices || taken[pick_ids[j]])
				BUG("ledger_place: device %u is not free for %s", pick_ids[j], id);
		int same = r == 0 && !memcmp(pick_ids, t->ids, count * sizeof(*pick_ids));
		if (r == 0 && !same) {
			cJSON *f = training_fields(id);
			cJSON_AddNumberToObject(f, "devices", count);
			cJSON *a = cJSON_AddArrayToObject(f, "ids");
			for (unsigned j = 0; j < count; j++)
				cJSON_AddItemToArray(a, cJSON_CreateNumber(pick_ids[j]));
			r = append(l, "applied", f);
		}
		if (r == 0) {
			*ids = pick_ids;
			*n = count;
		} else {
			free(pick_ids);
		}
		free(taken);
	}
	fileio_unlock(fd);
	return r;
}
