/* docker.h: the Docker backend's pure parts: its config, the argv of
 * `docker create` for one rank, and the reading of `docker inspect`. */
#ifndef AAH_DOCKER_H
#define AAH_DOCKER_H

#include "runner/backend/backend.h"
#include "runner/config/config.h"
#include "runner/launch.h"
#include "strbuf.h"
#include "strvec.h"

struct docker_config {
	char *binary;             /* "docker" (or a compatible CLI) */
	char *image;              /* the trial image */
	const struct ynode *mounts; /* list of "src:dst[:opts]", or NULL */
	char *user;               /* --user, or NULL */
	char *network;            /* --network */
	char *shm_size;           /* --shm-size, or NULL */
	char *workdir;            /* -w inside the container, or NULL = trial.codeDir */
	const struct ynode *run_args; /* extra arguments of docker create (a list) */
	double poll_interval;     /* seconds between docker inspect queries */
	double command_timeout;   /* seconds a docker command may take */
	const struct ynode *hosts; /* docker.hosts (runner/backend/docker_hosts.h), or NULL */
	double host_timeout;      /* seconds a host may fail every command before it is down */
};

extern const struct cfg_key docker_config_keys[];

/* The docker section's rules beyond its key table (the backend's
 * check_config): an image is a reference without blanks. */
int docker_check_config(const struct aah_config *cfg);

/* Container name of a rank: aah-<exp>-<trial>-<rank>. The caller frees it. */
char *docker_container_name(const struct aah_launch *l, unsigned rank);

/* The argv of `docker create` for one rank of a trial (the rank is started
 * with `docker start` once the job is journaled: together they are
 * `docker run -d`). code_dir: the working directory inside. */
int docker_create_argv(const struct docker_config *dc, const struct aah_launch *l, unsigned rank,
		       const char *code_dir, struct strvec *argv);

struct docker_mpi;

/* Where a rank of a trial runs on docker.hosts: the host's name (set as
 * AAH_HOST inside) and the GPU of its slot (NULL: none, or the slot's
 * CUDA_VISIBLE_DEVICES of the contract). NULL: this machine's engine. */
struct docker_rank_host {
	const char *name;
	const char *gpu;
};

/* docker create for one rank placed on a host (docker_create_argv's
 * container, or docker_create_mpi_argv's when m is not NULL). */
int docker_create_host_argv(const struct docker_config *dc, const struct aah_launch *l,
			    const struct docker_mpi *m, unsigned rank, const char *code_dir,
			    const struct docker_rank_host *on, struct strvec *argv);

/* trial.launcher: mpi in containers (ModelArts' MPI form). Rank 0's
 * container is the launcher: it runs the contract's mpirun once every
 * worker's sshd listens. The others are workers: sshd alone, on a port of
 * their own (all share the host network), bound to a loopback address of
 * their own, which their ModelArts host name resolves to in every
 * container (--add-host). Keys, known_hosts and both configs are made per
 * launch by the runner in <place dir>/ssh (docker_mpi_write_ssh). */
struct docker_mpi {
	char *ssh_dir;            /* <place dir>/ssh: the launch's place (launch.h) */
	unsigned *ports;          /* sshd port of node i; ports[0] is unused */
	/* On docker.hosts: node i's host address (an IPv4 address), where its
	 * sshd listens and its name resolves to; addrs[0] is unused (the
	 * launcher's name is 127.0.0.1, local to mpirun). NULL: one host. */
	char **addrs;
};

/* The loopback address node N's host name resolves to: 127.0.0.1 for the
 * launcher (Open MPI starts its ranks without ssh), 127.0.0.2 and on for
 * the workers (a 127.0.0.1 name would count as mpirun's own host); on
 * docker.hosts a worker's is its host's address (m->addrs). */
char *docker_mpi_address(unsigned node);

/* The texts of <ssh dir>/config (mpirun's ssh client), known_hosts
 * (host_pub under each worker's [name]:port) and sshd_config. */
void docker_mpi_ssh_config(const struct aah_launch *l, const struct docker_mpi *m,
			   struct strbuf *sb);
void docker_mpi_known_hosts(const struct aah_launch *l, const struct docker_mpi *m,
			    const char *host_pub, struct strbuf *sb);
void docker_mpi_sshd_config(const struct docker_mpi *m, struct strbuf *sb);

/* docker create for one rank of an MPI trial: the launcher's or a worker's
 * container (see struct docker_mpi). */
int docker_create_mpi_argv(const struct docker_config *dc, const struct aah_launch *l,
			   const struct docker_mpi *m, unsigned rank, const char *code_dir,
			   struct strvec *argv);

/* One container's state out of `docker inspect`. */
struct docker_state {
	char id[80];
	char name[128];
	char status[16];          /* created, running, paused, restarting, removing, exited, dead */
	int exit_code;
	int oom_killed;
	char error[128];
};

/* Parse the JSON array `docker inspect` prints; returns the number of
 * containers read (at most max), or -1 when it is not such an array. */
int docker_parse_inspect(const char *json, struct docker_state *out, int max);

/* The job's state from its ranks' containers (n may be below nranks when
 * some are gone). canceled: aah canceled it. reason gets the words. */
enum aah_job_state docker_job_state(const struct docker_state *c, int n, int nranks,
				    int canceled, int *exit_code, char *reason, size_t rn);

extern const struct aah_backend backend_docker;

#endif
