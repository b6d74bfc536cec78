/* mpi_ssh.h: trial.launcher: mpi over ssh in containers (the docker and
 * kubernetes backends): the files of the ssh directory, mpirun's ssh client
 * options and the workers' sshd policy, written once; each backend says
 * only where its hosts are and how they listen. */
#ifndef AAH_MPI_SSH_H
#define AAH_MPI_SSH_H

#include <stddef.h>

#include "strbuf.h"

/* The files of the ssh directory, as the containers find them. */
#define MPI_SSH_ID "id_ecdsa"               /* mpirun's private key */
#define MPI_SSH_AUTHORIZED "authorized_keys" /* its public key, for every sshd */
#define MPI_SSH_HOST_KEY "host_ecdsa_key"   /* the sshds' one host key */
#define MPI_SSH_KNOWN_HOSTS "known_hosts"   /* that key under every [host]:port */
#define MPI_SSH_CONFIG "config"             /* mpirun's ssh client (mpi_ssh_client_config) */
#define MPI_SSH_SSHD_CONFIG "sshd_config"   /* the workers' sshd (mpi_ssh_sshd_config) */

/* What differs between the backends; the rest is the one policy: keys
 * only, the host key checked against known_hosts, no passwords, no pty
 * prompts, no forwarding, StrictModes off (the ssh directory's parents
 * need not be the container user's). */
struct mpi_ssh {
	const char *dir;      /* the ssh directory as the containers see it */
	const char *launcher; /* where mpirun runs: "launcher container" */
	const char *workers;  /* where sshd runs: "worker containers" */
	const char *listen;   /* what each sshd adds as its ListenAddress */
	long port;            /* > 0: every sshd's port; 0: each host's own (its Host entry) */
	/* On a cluster's pod network (kubernetes): CheckHostIP no (pod IPs
	 * are reused), sshd as the pod's non-root user (PermitRootLogin no),
	 * no agent forwarding, no user environment. Off (docker): root may log
	 * in by key, and sshd_config stays as docker's golden files have it. */
	unsigned pods : 1;
};

/* One Host entry of mpirun's ssh config: a ModelArts host name (alias),
 * and where it goes: hostname (NULL: none) and port (0: none). */
struct mpi_ssh_host {
	char *alias;
	const char *hostname;
	unsigned port;
};

/* The text of config: the comment, one Host entry each of hosts[0..n),
 * then the options of every host. */
void mpi_ssh_client_config(const struct mpi_ssh *s, const struct mpi_ssh_host *hosts, size_t n,
			   struct strbuf *sb);
/* The text of sshd_config. */
void mpi_ssh_sshd_config(const struct mpi_ssh *s, struct strbuf *sb);
/* One line of known_hosts: host_pub for [host]:port. */
void mpi_ssh_known_host(const char *host, long port, const char *host_pub, struct strbuf *sb);

#endif
