/* local.h: the local backend (the embedded default): each rank of a trial
 * is a process group on this host (local.c). It has no config keys and
 * renders nothing, since a rank runs the launch contract's argv and env as
 * they are, so it has no local_spec.c. */
#ifndef AAH_LOCAL_H
#define AAH_LOCAL_H

#include "runner/backend/backend.h"

extern const struct aah_backend backend_local;

/* Released ranks whose word on their exec may be unread, at most: each
 * holds a pipe open until it is read (file descriptors are few). */
#define LOCAL_UNHEARD_MAX 64

/* `aah-runner held-orphan EXPDIR -- PROGRAM [ARGS...]`, run by aah-hold
 * in a held rank whose runner died before releasing it (the same process:
 * its pid and start time are the job's): becomes PROGRAM if the journal
 * records the rank's launch, else exits 125 unexecuted. */
int local_held_orphan(int argc, const char **argv);

#endif
