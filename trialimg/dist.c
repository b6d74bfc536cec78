/* dist.c: TCP rendezvous and ring allreduce for CPU data parallelism.
 *
 * Rendezvous: rank 0 listens on the --init_method port; every other rank
 * connects and sends (rank, world, ring port); rank 0 answers with the ring
 * address of every rank. Then each rank connects to its right neighbour and
 * accepts its left one: rank 0 on the rendezvous port itself, the others on
 * a port of their own, never the rendezvous port (the runner picked it free
 * and let it go, so a bind to port 0 may hand it to a rank that starts
 * before rank 0 binds it, and rank 0 could not listen). Allreduce is
 * reduce-scatter + allgather over the ring, sending and receiving at once
 * under poll() so no order deadlocks. A peer that exits shows as EOF or a
 * reset: an error at once; one that hangs: an error after the timeout. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "trialimg/dist.h"
#include "util.h"

/* HOST_LEN holds any DNS name (253 bytes): a Kubernetes pod's is
 * <job>-<index>.<service>, often longer than 64. */
enum { DIST_MAGIC = 0x61616831, HOST_LEN = 256 };

struct dist {
	int rank, world;
	int left, right;        /* sockets: receive from left, send to right */
	double timeout;         /* seconds without progress before giving up */
	int lost;               /* a collective failed: a peer is gone or unreachable */
	float *tmp;
	size_t tmp_n;
};

struct hello {
	uint32_t magic, rank, world, port;
};

struct peer_addr {
	char host[HOST_LEN];
	uint32_t port;
};

static const volatile sig_atomic_t *stop_flag;   /* dist_stop_on */

void dist_stop_on(const volatile sig_atomic_t *stop)
{
	stop_flag = stop;
}

/* A signal asked the trial to stop (the kubelet's SIGTERM to a pod whose
 * Job went, `docker stop`): the rendezvous gives up at once rather than
 * at its timeout. Checked between short waits, since the signal may land
 * on another thread than the one waiting. */
static int stopped(void)
{
	return stop_flag && *stop_flag;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int listen_any(int port, int *fd, int *actual)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
				 .sin_port = htons((uint16_t)port)};
	socklen_t len = sizeof(sa);
	int one = 1;
	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*fd < 0)
		return error_errno("socket");
	setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(*fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(*fd, 64)) {
		int e = errno;
		close(*fd);
		errno = e;
		return error_errno("cannot listen on port %d", port);
	}
	getsockname(*fd, (struct sockaddr *)&sa, &len);
	*actual = ntohs(sa.sin_port);
	return 0;
}

/* A rank's ring listener: any free port but the rendezvous port, which
 * rank 0 may not have bound yet. */
static int listen_ring(int rendezvous_port, int *fd, int *actual)
{
	if (listen_any(0, fd, actual))
		return -1;
	if (*actual != rendezvous_port)
		return 0;
	int taken = *fd;   /* held while the next bind picks another port */
	int rc = listen_any(0, fd, actual);
	close(taken);
	return rc;
}

static int accept_until(int lfd, double deadline, int *fd, char *peer, size_t peer_len)
{
	for (;;) {
		double left = deadline - util_monotonic();
		if (stopped())
			return error("stopped by a signal while waiting for the other ranks");
		if (left <= 0)
			return error("timed out waiting for a peer to connect");
		struct pollfd p = {lfd, POLLIN, 0};
		int r = poll(&p, 1, left > 0.2 ? 200 : (int)(left * 1000) + 1);
		if (r < 0 && errno != EINTR)
			return error_errno("poll");
		if (r <= 0)
			continue;
		struct sockaddr_in sa;
		socklen_t len = sizeof(sa);
		*fd = accept4(lfd, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC);
		if (*fd < 0)
			continue;
		if (peer)
			inet_ntop(AF_INET, &sa.sin_addr, peer, (socklen_t)peer_len);
		return 0;
	}
}

static int connect_until(const char *host, int port, double deadline, int *fd)
{
	char ports[16];
	snprintf(ports, sizeof(ports), "%d", port);
	for (;;) {
		struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
		if (getaddrinfo(host, ports, &hints, &ai) == 0) {
			*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			int ok = *fd >= 0 && connect(*fd, ai->ai_addr, ai->ai_addrlen) == 0;
			freeaddrinfo(ai);
			if (ok)
				return 0;
			if (*fd >= 0)
				close(*fd);
		}
		if (util_monotonic() > deadline)
			return error("cannot reach rank 0 at %s:%d (timed out)", host, port);
		if (stopped())
			return error("stopped by a signal while reaching rank 0 at %s:%d", host, port);
		sleep_ms(100);
	}
}

/* Whether a send or recv that returned k says the peer is gone: its end of
 * the stream, or a reset (it exited with our bytes unread, as a killed
 * rank does mid-collective) or a broken pipe under our send. */
static int gone(ssize_t k)
{
	return k == 0 || (k < 0 && (errno == ECONNRESET || errno == EPIPE));
}

/* Send or receive exactly len bytes, each wait bounded by timeout. */
static int io_all(int fd, void *buf, size_t len, int sending, double timeout, const char *peer)
{
	char *p = buf;
	while (len) {
		struct pollfd pf = {fd, sending ? POLLOUT : POLLIN, 0};
		int r = poll(&pf, 1, (int)(timeout * 1000));
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return error("%s did not respond within %.0f s", peer, timeout);
		ssize_t n = sending ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (gone(n))
			return error("%s closed the connection (it exited?)", peer);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return error_errno("connection to %s failed", peer);
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Send sbuf to the right neighbour while receiving rbuf from the left one. */
static int exchange(struct dist *d, const void *sbuf, size_t slen, void *rbuf, size_t rlen)
{
	const char *s = sbuf;
	char *r = rbuf;
	while (slen || rlen) {
		struct pollfd pf[2] = {{d->right, slen ? POLLOUT : 0, 0}, {d->left, rlen ? POLLIN : 0, 0}};
		int n = poll(pf, 2, (int)(d->timeout * 1000));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return error("rank %d: no progress with its ring neighbours for %.0f s",
				     d->rank, d->timeout);
		if (slen && (pf[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t k = send(d->right, s, slen, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (gone(k))
				return error("rank %d: rank %d closed the connection (it exited?)", d->rank,
					     (d->rank + 1) % d->world);
			if (k < 0 && errno != EAGAIN && errno != EINTR)
				return error_errno("rank %d: sending to rank %d failed", d->rank,
						   (d->rank + 1) % d->world);
			if (k > 0)
				s += k, slen -= (size_t)k;
		}
		if (rlen && (pf[1].revents & (POLLIN | POLLERR | POLLHUP))) {
			ssize_t k = recv(d->left, r, rlen, MSG_DONTWAIT);
			if (gone(k))
				return error("rank %d: rank %d closed the connection (it exited?)", d->rank,
					     (d->rank + d->world - 1) % d->world);
			if (k < 0 && errno != EAGAIN && errno != EINTR)
				return error_errno("rank %d: receiving from rank %d failed", d->rank,
						   (d->rank + d->world - 1) % d->world);
			if (k > 0)
				r += k, rlen -= (size_t)k;
		}
	}
	return 0;
}

/* Rank 0 listens on lfd (the rendezvous port, its ring port too); the
 * others reach it at host:port. */
static int rendezvous(struct dist *d, const char *host, int port, double deadline,
		      struct peer_addr *table, int lfd, int ring_port)
{
	int W = d->world;
	if (d->rank == 0) {
		int rc = 0;
		int *fds = xcalloc(W, sizeof(int));
		snprintf(table[0].host, HOST_LEN, "%s", host);
		table[0].port = (uint32_t)ring_port;
		for (int got = 1; got < W && !rc; got++) {
			int fd;
			char peer[HOST_LEN];
			struct hello h;
			if (accept_until(lfd, deadline, &fd, peer, sizeof(peer))) {
				rc = stopped() ? -1
					       : error("rendezvous on port %d: only %d of %d ranks arrived "
						       "within the timeout", port, got, W);
				break;
			}
			if (io_all(fd, &h, sizeof(h), 0, 10, "a joining rank") || h.magic != DIST_MAGIC ||
			    h.world != (uint32_t)W || h.rank == 0 || h.rank >= (uint32_t)W || fds[h.rank]) {
				close(fd);
				rc = error("rendezvous: a peer sent a bad hello (rank %u, world %u; expected "
					   "world %d)", h.rank, h.world, W);
				break;
			}
			fds[h.rank] = fd;
			snprintf(table[h.rank].host, HOST_LEN, "%s", peer);
			table[h.rank].port = h.port;
		}
		for (int r = 1; r < W; r++) {
			if (!rc && io_all(fds[r], table, sizeof(*table) * W, 1, 10, "a joining rank"))
				rc = -1;
			if (fds[r])
				close(fds[r]);
		}
		free(fds);
		return rc;
	}
	int fd;
	struct hello h = {DIST_MAGIC, (uint32_t)d->rank, (uint32_t)W, (uint32_t)ring_port};
	if (connect_until(host, port, deadline, &fd))
		return -1;
	double left = deadline - util_monotonic();
	int rc = io_all(fd, &h, sizeof(h), 1, 10, "rank 0") ||
		 io_all(fd, table, sizeof(*table) * W, 0, left > 1 ? left : 1, "rank 0");
	close(fd);
	if (rc)
		return error("rank %d: rendezvous with rank 0 at %s:%d failed", d->rank, host, port);
	return 0;
}

/* Where the ring runs, as this rank's two sockets see it (a log line: the
 * neighbours' addresses say which hosts the allreduce crosses). */
static void say_ring(const struct dist *d)
{
	struct sockaddr_in to = { 0 }, from = { 0 };
	socklen_t tl = sizeof(to), fl = sizeof(from);
	char ts[INET_ADDRSTRLEN] = "?", fs[INET_ADDRSTRLEN] = "?";
	if (getpeername(d->right, (struct sockaddr *)&to, &tl) == 0)
		inet_ntop(AF_INET, &to.sin_addr, ts, sizeof(ts));
	if (getpeername(d->left, (struct sockaddr *)&from, &fl) == 0)
		inet_ntop(AF_INET, &from.sin_addr, fs, sizeof(fs));
	printf("aah-trial: rank %d of %d: allreduce ring to rank %d at %s:%u, from rank %d at %s\n",
	       d->rank, d->world, (d->rank + 1) % d->world, ts, (unsigned)ntohs(to.sin_port),
	       (d->rank + d->world - 1) % d->world, fs);
}

int dist_init(struct dist **out, const char *host, int port, int rank, int world, double timeout_s)
{
	struct dist *d = xcalloc(1, sizeof(*d));
	struct peer_addr *table = xcalloc(world, sizeof(*table));
	double deadline = util_monotonic() + timeout_s;
	int lfd = -1, ring_port, rc = -1;
	d->rank = rank;
	d->world = world;
	d->left = d->right = -1;
	d->timeout = timeout_s > 600 ? timeout_s : 600;
	*out = NULL;
	if ((rank == 0 ? listen_any(port, &lfd, &ring_port) : listen_ring(port, &lfd, &ring_port)) ||
	    rendezvous(d, host, port, deadline, table, lfd, ring_port))
		goto out;
	int right = (rank + 1) % world, one = 1;
	uint32_t me = (uint32_t)rank, them = 0;
	if (connect_until(table[right].host, (int)table[right].port, deadline, &d->right) ||
	    accept_until(lfd, deadline, &d->left, NULL, 0)) {
		error("rank %d: cannot form the ring", rank);
		goto out;
	}
	setsockopt(d->right, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(d->left, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (exchange(d, &me, sizeof(me), &them, sizeof(them)))
		goto out;
	if (them != (uint32_t)((rank + world - 1) % world)) {
		error("rank %d: ring neighbour is rank %u, expected %d", rank, them,
		      (rank + world - 1) % world);
		goto out;
	}
	say_ring(d);
	rc = 0;
out:
	if (lfd >= 0)
		close(lfd);
	free(table);
	if (rc) {
		dist_free(d);
		return -1;
	}
	*out = d;
	return 0;
}

int dist_allreduce_mean(struct dist *d, float *buf, size_t n)
{
	int W = d->world, r = d->rank;
	size_t chunk = (n + W - 1) / W;
	if (d->tmp_n < chunk) {
		free(d->tmp);
		d->tmp = xmalloc(sizeof(float) * (chunk ? chunk : 1));
		d->tmp_n = chunk;
	}
#define LO(c) ((size_t)(c) * chunk < n ? (size_t)(c) * chunk : n)
#define LEN(c) (LO((c) + 1) - LO(c))
	for (int s = 0; s < W - 1; s++) {       /* reduce-scatter */
		int sc = (r - s + W) % W, rc = (r - s - 1 + 2 * W) % W;
		if (exchange(d, buf + LO(sc), LEN(sc) * sizeof(float), d->tmp, LEN(rc) * sizeof(float))) {
			d->lost = 1;
			return -1;
		}
		for (size_t i = 0; i < LEN(rc); i++)
			buf[LO(rc) + i] += d->tmp[i];
	}
	for (int s = 0; s < W - 1; s++) {       /* allgather */
		int sc = (r + 1 - s + W) % W, rc = (r - s + W) % W;
		if (exchange(d, buf + LO(sc), LEN(sc) * sizeof(float), buf + LO(rc),
			     LEN(rc) * sizeof(float))) {
			d->lost = 1;
			return -1;
		}
	}
#undef LO
#undef LEN
	float inv = 1.0f / (float)W;
	for (size_t i = 0; i < n; i++)
		buf[i] *= inv;
	return 0;
}

int dist_broadcast(struct dist *d, void *buf, size_t len)
{
	/* around the ring from rank 0: rank r receives from r-1, then forwards;
	 * a failure is told as the allreduce tells it: "rank r: rank q ..." */
	char left[24], right[24];
	snprintf(left, sizeof(left), "rank %d", d->rank - 1);
	snprintf(right, sizeof(right), "rank %d", d->rank + 1);
	int was = util_hold_errors(1);
	int rc = (d->rank != 0 && io_all(d->left, buf, len, 0, d->timeout, left)) ||
		 (d->rank != d->world - 1 && io_all(d->right, buf, len, 1, d->timeout, right));
	util_hold_errors(was);
	if (rc) {
		d->lost = 1;
		return error("rank %d: %s", d->rank, util_last_error());
	}
	return 0;
}

int dist_lost_peer(const struct dist *d)
{
	return d && d->lost;
}

void dist_free(struct dist *d)
{
	if (!d)
		return;
	if (d->left >= 0)
		close(d->left);
	if (d->right >= 0)
		close(d->right);
	free(d->tmp);
	free(d);
}
