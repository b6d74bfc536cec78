/* dist.h: CPU data parallelism: ranks meet at a TCP rendezvous (rank 0
 * listens on host:port), form a ring, and average gradients with a ring
 * allreduce. Every wait is bounded: a peer that never arrives or dies is an
 * error, not a hang. */
#ifndef AAH_DIST_H
#define AAH_DIST_H

#include <signal.h>
#include <stddef.h>

struct dist;

/* The flag a signal handler sets to stop the trial: the rendezvous of
 * dist_init gives up when it is set (NULL: only its timeout ends it). */
void dist_stop_on(const volatile sig_atomic_t *stop);
/* Join the group; waits at most timeout_s for every peer. */
int dist_init(struct dist **d, const char *host, int port, int rank, int world, double timeout_s);
/* buf <- mean of buf over all ranks. */
int dist_allreduce_mean(struct dist *d, float *buf, size_t n);
/* *v <- rank 0's value. */
int dist_broadcast(struct dist *d, void *buf, size_t len);
/* Did a collective fail once the group had formed (a peer exited, was
 * killed, or stopped answering)? The trainer then exits TRAIN_EXIT_PEER_LOST. */
int dist_lost_peer(const struct dist *d);
void dist_free(struct dist *d);

#endif
