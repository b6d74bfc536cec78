/* docker_hosts.h: the hosts of the Docker backend (docker.hosts): a list
 * of nodes, each reached through Docker's own ssh transport
 * (docker -H ssh://user@address:port), or AIPerf's servers.json naming
 * them; how the device pool's devices map onto their slots; and their
 * health, which `status` shows (<expdir>/docker_hosts.json). */
#ifndef AAH_DOCKER_HOSTS_H
#define AAH_DOCKER_HOSTS_H

#include "runner/config/config.h"
#include "strbuf.h"
#include "strvec.h"

struct docker_host {
	char *name;               /* its address as written; job ids and status use it */
	char *user;               /* NULL: ssh's own default */
	unsigned port;            /* 0: ssh's own default */
	unsigned slots;           /* devices it lends the pool */
	char **gpus;              /* slots entries (then NULL), a GPU each; NULL: CPU slots */
	char *url;                /* ssh://[user@]address[:port] */
	char ip[64];              /* its IPv4 address as the master resolves it ("" until then) */
	/* health, while a runner drives it */
	int down;
	char reason[256];         /* why it is down */
	double since;             /* util_now() it went down or came back */
	double failing_since;     /* util_monotonic() of the first failure in a row; 0: none */
	double probed;            /* util_monotonic() of the last probe while down */
	struct strvec kept;       /* containers it kept while down, of trials that went on
				   * elsewhere: killed and removed when it answers again */
};

struct docker_hosts {
	struct docker_host *h;
	unsigned n;               /* 0: no hosts, the engine of this machine */
	unsigned slots;           /* their sum: the device pool's size */
};

/* docker.hosts of cfg: a list of {address (or AIPerf's ip), user, port,
 * slots or gpus (or AIPerf's CUDA_VISIBLE_DEVICES)}, or the path of a
 * file holding such a list (AIPerf's servers.json; relative to the
 * config's folder). Errors name the file, line, column and field. */
int docker_hosts_parse(const struct aah_config *cfg, struct docker_hosts *hs);
void docker_hosts_release(struct docker_hosts *hs);

/* The host of device d of the pool, and its slot there (*slot), or -1.
 * Devices go round the hosts (host 0's slot 0, host 1's slot 0, ...,
 * host 0's slot 1, ...), so the lowest free devices span hosts. */
int docker_hosts_device(const struct docker_hosts *hs, unsigned d, unsigned *slot);
/* The host of that name, or NULL. */
struct docker_host *docker_hosts_find(const struct docker_hosts *hs, const char *name);

/* Write the hosts' health and what down hosts kept to
 * <expdir>/docker_hosts.json (aah-docker-hosts/1, atomically). */
int docker_hosts_save(const struct docker_hosts *hs, const char *expdir);
/* What the hosts kept, from <expdir>/docker_hosts.json (a resumed runner
 * clears it when they answer); nothing when the file is absent. */
void docker_hosts_load_kept(struct docker_hosts *hs, const char *expdir);
/* The hosts' health as `status` prints it, from <expdir>/docker_hosts.json
 * (nothing when the file is absent). */
void docker_hosts_status(const char *expdir, struct strbuf *sb);

#endif
