/* mpi_ssh.c: the ssh of trial.launcher: mpi in containers, written once
 * for the docker and kubernetes backends (mpi_ssh.h). */
#include "runner/backend/mpi_ssh.h"

void mpi_ssh_client_config(const struct mpi_ssh *s, const struct mpi_ssh_host *hosts, size_t n,
			   struct strbuf *sb)
{
	strbuf_addf(sb, "# ssh of mpirun in the %s (trial.launcher: mpi)\n", s->launcher);
	for (size_t i = 0; i < n; i++) {
		strbuf_addf(sb, "Host %s\n", hosts[i].alias);
		if (hosts[i].hostname)
			strbuf_addf(sb, "    HostName %s\n", hosts[i].hostname);
		if (hosts[i].port)
			strbuf_addf(sb, "    Port %u\n", hosts[i].port);
	}
	strbuf_addstr(sb, "Host *\n");
	if (s->port > 0)
		strbuf_addf(sb, "    Port %ld\n", s->port);
	strbuf_addf(sb, "    IdentityFile %s/" MPI_SSH_ID "\n"
			"    IdentitiesOnly yes\n"
			"    UserKnownHostsFile %s/" MPI_SSH_KNOWN_HOSTS "\n"
			"    GlobalKnownHostsFile /dev/null\n"
			"    StrictHostKeyChecking yes\n",
		    s->dir, s->dir);
	if (s->pods)
		strbuf_addstr(sb, "    CheckHostIP no\n");
	strbuf_addstr(sb, "    BatchMode yes\n"
			  "    PasswordAuthentication no\n"
			  "    ConnectTimeout 30\n"
			  "    LogLevel ERROR\n");
}

void mpi_ssh_sshd_config(const struct mpi_ssh *s, struct strbuf *sb)
{
	strbuf_addf(sb, "# sshd of the %s (trial.launcher: mpi); each adds\n"
			"# -o ListenAddress=%s -o PidFile=...\n",
		    s->workers, s->listen);
	if (s->port > 0)
		strbuf_addf(sb, "Port %ld\n", s->port);
	strbuf_addf(sb, "HostKey %s/" MPI_SSH_HOST_KEY "\n"
			"AuthorizedKeysFile %s/" MPI_SSH_AUTHORIZED "\n"
			"PubkeyAuthentication yes\n"
			"PasswordAuthentication no\n"
			"KbdInteractiveAuthentication no\n"
			"PermitRootLogin %s\n"
			"StrictModes no\n"
			"UsePAM no\n"
			"X11Forwarding no\n"
			"AllowTcpForwarding no\n",
		    s->dir, s->dir, s->pods ? "no" : "prohibit-password");
	if (s->pods)
		strbuf_addstr(sb, "AllowAgentForwarding no\n"
				  "PermitUserEnvironment no\n");
}

void mpi_ssh_known_host(const char *host, long port, const char *host_pub, struct strbuf *sb)
{
	strbuf_addf(sb, "[%s]:%ld %s\n", host, port, host_pub);
}
