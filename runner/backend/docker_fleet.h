/* docker_fleet.h: the Docker backend's state shared by docker.c (the
 * trial lifecycle) and docker_fleet.c (docker.hosts at run time: commands
 * on a host over ssh, its health, placement through the device pool, and
 * the containers a host kept while it was down). */
#ifndef AAH_DOCKER_FLEET_H
#define AAH_DOCKER_FLEET_H

#include "runner/backend/docker.h"
#include "runner/backend/docker_hosts.h"
#include "runner/pool/ledger.h"
#include "strbuf.h"
#include "strvec.h"

/* Where place() put the ranks of the trial it placed last. */
struct docker_fleet_placed {
	unsigned seq;             /* 0: none */
	unsigned nodes;
	int *host;                /* nodes entries: index in hosts */
	unsigned *device;         /* nodes entries: the pool's device */
};

struct docker_priv {
	struct docker_config dc;
	struct backend_tool tool;  /* docker commands: no retries */
	const char *expdir;
	const char *experiment_id;
	char *workdir;             /* the experiments' parent (the pool's ledger) */
	struct docker_hosts hosts; /* n == 0: this machine's engine */
	struct docker_fleet_placed placed;
	int one_per_host;          /* trial.launcher: mpi: a trial's nodes on distinct hosts */
	unsigned cfg_master_port;  /* trial.masterPort (0: 29500 is the base) */
	struct backend_jobs jobs;  /* struct djob (docker.c) */
};

/* argv of a docker command on host h (NULL: this machine's engine):
 * <binary> [-H <url>]. */
void docker_fleet_argv(const struct docker_priv *p, const struct docker_host *h,
		       struct strvec *argv);
/* Run it; out without its trailing blanks. The exit code (-1: cannot run). */
int docker_fleet_run(const struct docker_priv *p, struct strvec *argv, struct strbuf *out,
	      struct strbuf *err);
/* Did a failed command fail to reach its host (ssh, or the engine behind
 * it), rather than a container? */
int docker_fleet_unreachable(const char *err, int code);

/* A command on h was answered / did not reach it (err: what it said).
 * docker_fleet_failed returns 1 once h is down: it failed every command for
 * docker.hostTimeout; its state goes to <expdir>/docker_hosts.json. */
void docker_fleet_answered(struct docker_priv *p, struct docker_host *h);
int docker_fleet_failed(struct docker_priv *p, struct docker_host *h, const char *err);

/* At start: ask every host for its engine's version (one that does not
 * answer gets no trial, and is down after docker.hostTimeout); read which
 * containers down hosts kept (docker_hosts.json). */
int docker_fleet_start(struct docker_priv *p);
/* Every poll: ask a host that is down or not answering again (every 5
 * poll intervals, 1 to 60 s); a down host that answers is up, and the
 * containers it kept while down are killed, their logs appended to their
 * trial's trial.log, and removed. */
void docker_fleet_probe(struct docker_priv *p);
/* Container id on host h is left there: its host is down, its trial goes on
 * elsewhere. */
void docker_fleet_abandon(struct docker_priv *p, struct docker_host *h, const char *id);

/* place() on docker.hosts: ranks on the pool's devices (ledger_place),
 * each on a host that is up, a multi-node trial on distinct hosts where it
 * can. 1: none fit now. */
int docker_fleet_place(struct docker_priv *p, const struct aah_config *cfg, unsigned seq,
		char **hosts, unsigned nodes, unsigned *port);
void docker_fleet_release(struct docker_priv *p);

#endif
